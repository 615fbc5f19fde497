"""The benchmark harness: what ``qidao bench``, ``bench train``, ``bench checkpoint``,
``bench ladder``, ``qidao zoo`` and ``qidao bench-cuda`` measure, and how.

=======================  ===========================================================
``workloads.py``         ``qidao bench``: the built-in workloads x backends (PyTorch
                         eager, qidao, the bare native call, NumPy, ONNX Runtime)
``train.py``             ``qidao bench train``: a compiled training step against
                         PyTorch's (``train_models.py``: the models)
``checkpoint.py``        ``qidao bench checkpoint``: activation checkpointing's
                         memory and time against the book's formulas
                         (``checkpoint_models.py``: the models)
``ladder.py``            ``qidao bench ladder``: matmul under one schedule per rung,
                         beside PyTorch, NumPy and the measured peak
``zoo.py``               ``qidao zoo``: real models through the ONNX and torch.compile
                         paths against eager and ONNX Runtime (``zoo_models.py``)
``train_classifier.py``  the DataLoader example of the training docs
``cuda/``                ``qidao bench-cuda``: the GPU workloads, suites and ladder,
                         timed by CUDA events (or the emulator's wall clock)
=======================  ===========================================================

Every measurement runs in a fresh worker process with its thread pools pinned and is
timed by one loop: ``qidao/runtime/worker.py`` and ``qidao/runtime/timing.py``, which
the autotuner, the convolution-algorithm selection and ``qidao profile`` use too (they
sit in the runtime, below the compiler, for that reason). Each measurement checks its
output against an independent reference before it is timed. The command lines are in
``qidao/tools/``.
"""
