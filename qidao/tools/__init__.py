"""The user's jobs on top of the compiler: the ``qidao`` and ``qidao-opt`` commands,
benchmarks, the schedule ladder, ONNX conformance, the tour, built-in examples.
The core (dialects, frontend, passes, compiler, runtime) never imports this
folder."""
