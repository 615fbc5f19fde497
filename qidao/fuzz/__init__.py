"""The fuzzer behind ``qidao fuzz``: hostile inputs against qidao, each case in a worker
process with a timeout, so that a crash of native code or a hang is recorded as one.

===============  =======================================================================
``cases.py``     what each kind builds and checks (``KINDS``, ``run_case``): random
                 ONNX graphs, checks, schedules, damaged ``.mlir``/``.onnx``/records
                 files, command lines; the status of a case and of an exception
``cache.py``     the ``cache`` kind: the compile cache's files tampered with
``training.py``  the ``training`` kind: a compiled training step against PyTorch
``run.py``       the runner: worker processes that survive crashes and hangs, the
                 statuses, one ``Outcome`` per case and the line that reproduces it
``report.py``    the counts per kind and status with every failure, and the CSV
===============  =======================================================================

The command line is ``qidao/tools/fuzz.py``. The cases drive qidao as a user would
(the public API, ``python -m qidao``, ``qidao.tools.cache_command``), so this package
may import ``tools``, whose ``qidao fuzz`` imports it in turn (``tests/test_layers.py``
keeps the modules acyclic).
"""
