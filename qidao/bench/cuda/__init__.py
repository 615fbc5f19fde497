"""``qidao bench-cuda``'s harness: the GPU workloads and how their rows are measured.

=================  =================================================================
``workloads.py``   the workloads: a graph, its GPU schedule, inputs and references
``models.py``      the whole models' workloads (ONNX files)
``suites.py``      the named suites (``targets``, ``ladder``, their ``-small`` forms)
``ladder.py``      the GPU ladder's rungs (matmul 4096 under one schedule per rung)
``measure.py``     one row measured in a worker: checked, then timed by CUDA events
``bench.py``       the rows in worker processes, with their time limits and budget
``results.py``     the rows: ratios, the table, the CSV
``plot.py``        the suites' plots
=================  =================================================================

The command line is ``qidao/tools/bench_cuda.py``.
"""
