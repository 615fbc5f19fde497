"""``qidao.compile(model, target="cuda")``: the GPU branch of the tower.

    compiled = qidao.compile(model, target="cuda", schedule=gpu_schedule)
    print(compiled.ir("cuda"))       # the CUDA C and, as comments, the launch plan
    y, = compiled(x)                 # nvcc + pycuda, on the first call

The model goes through the stages up to ``schedule`` as on the CPU
(``input``, ``tg``, ``affine``, ``schedule``); the schedule binds loops to
``blockIdx``/``threadIdx`` (``s.bind(kernel, loop, "blockIdx.x")``); then
``emit.emit_program`` (the ``cuda`` stage) writes CUDA C and a launch plan, and
``qidao.runtime.cuda.CudaFunction`` runs it. The device is opened on the first
call, so ``ir("cuda")`` works on a machine without a GPU.

``schedule="default"`` (``qidao.compile``'s default) applies the default GPU
schedules (``defaults.py``: elementwise nests on the grid, the matmul
register-tiled with ``__shared__`` tiles, a thread per row for softmax and layer
norm); ``stats["default_schedule"]`` says what each kernel got, or why it got
nothing. ``schedule=None`` keeps the loops as lowered: a kernel with no bound
loop runs on one GPU thread. ``stats["serial_launches"]`` lists those launches,
and the plan marks them ``serial``.

``device="emulate"`` (``qidao.compile(..., target="cuda", device="emulate")``) runs
the same CUDA C on the CPU,
block after block, a block's threads as threads so that ``__shared__`` memory and
``__syncthreads()`` work (see ``qidao.runtime.cuda.EmulatedDevice``): for tests.

A ``cache_read`` inside a ``blockIdx`` loop and outside the ``threadIdx`` loops is
staged in ``__shared__`` memory by the block's threads (see ``emit/``).

The files: ``target.py`` (what the driver asks of a target), ``emit/`` (CUDA C
and the launch plan), ``staging.py`` (``__shared__`` tiles), ``defaults.py`` (the
default GPU schedules), ``compiled.py`` (the compiled object).
"""
