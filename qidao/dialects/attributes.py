"""The names of qidao's own attributes on the IR: every one begins with ``qd.``.

Each name is defined here once, as a constant whose docstring says what the
attribute means, on which op it sits, who writes it and who reads it; the code uses
the constants, never the string (``tests/dialects/test_attributes.py`` checks
that). This module is in the lowest layer, so the frontends, the passes, the
compiler and the tools may all import it; it imports nothing.

```python
from qidao.dialects.attributes import KERNEL_ATTR, LOOP_ATTR

if KERNEL_ATTR in fn.attributes:          # a kernel function
    loop.attributes[LOOP_ATTR] = StringAttr("i")
```

By where they sit, from the top of the tower down:

- the model's entry function ``@main`` (tg): ``INPUT_NAMES_ATTR``,
  ``OUTPUT_NAMES_ATTR``, ``CHECKS_ATTR``, ``CHECKPOINT_ATTR``, ``DIMS_ATTR``,
  ``DIM_LABELS_ATTR`` (and, on the host, ``OUTPUT_DIM_LABELS_ATTR``);
- tg ops: ``SOURCE_ATTR``, ``NONNEGATIVE_ATTR``, ``ALGO_ATTR``, ``UPDATE_ATTR``,
  ``RECOMPUTE_ATTR``;
- the host ``@main`` after ``convert-tg-to-affine``: ``NUM_INPUTS_ATTR``,
  ``IN_PLACE_ATTR``, ``PROFILE_KERNELS_ATTR`` (and the two name lists, copied);
- kernel functions: ``KERNEL_ATTR``;
- loops: ``LOOP_ATTR``, ``ROLLED_ATTR``, ``PARALLEL_ATTR``, ``BIND_ATTR``,
  ``THREADS_ATTR``, ``TENSORIZE_ATTR``, ``DOUBLE_BUFFER_ATTR``, ``SYMBOLIC_ATTR``,
  ``TRIP_ATTR``, ``EXACT_ATTR``.
"""

from __future__ import annotations

# --- the entry function ---------------------------------------------------------

INPUT_NAMES_ATTR = "qd.input_names"
"""The model's input names (``ArrayAttr`` of strings, one per argument) on
``@main``. Written by the frontends (``Graph.module``; checked in a ``.mlir`` model)
and ``apply-optimizer``, copied to the host ``@main`` by ``convert-tg-to-affine``;
read by ``compiler/host.py`` (input specs), ``autodiff``, ``apply-optimizer``,
``update-in-place``, ``gradcheck`` and the CUDA emitter."""

OUTPUT_NAMES_ATTR = "qd.output_names"
"""The model's output names (``ArrayAttr`` of strings, one per result) on ``@main``.
Written by the frontends, and extended by the passes that add results
(``autodiff``: ``grad_<x>``, ``apply-optimizer``: ``new_<w>``, ``insert-checks``);
read by ``compiler/host.py`` (output specs), ``update-in-place`` and the CUDA
emitter."""

CHECKS_ATTR = "qd.checks"
"""The run-time checks (``ArrayAttr`` of dictionaries), in the order of the extra
results that return them, on ``@main``. Written by ``insert-checks``
(``checks=True``, which refuses a function that has it); read by
``compiler/checks.py`` (``Checks.of``), which raises a failed check."""

CHECKPOINT_ATTR = "qd.checkpoint"
"""The activation-checkpointing plan (``DictionaryAttr``: ``segments``, ``kept``,
``recompute_flops``) on a training step's ``@main``. Written by ``checkpoint``; read
by ``training_report`` (``passes/graph/_checkpoint_plan.py``) for ``stats``."""

# --- tg ops ---------------------------------------------------------------------

SOURCE_ATTR = "qd.source"
"""The model node a tg op with a run-time domain came from (``StringAttr``, on a
gather by an index tensor or an integer division: ``dialects/tg/domain.py``).
Written by the frontends through ``Graph.source``; read by ``insert-checks`` to
name the op; allowed in a ``.mlir`` model."""

NONNEGATIVE_ATTR = "qd.nonnegative_indices"
"""A ``UnitAttr`` on a ``tg.take`` / ``tg.gather_elements`` whose source rejects
negative indices (PyTorch's ``embedding``, ``index_select``, ``gather``): its
checked range is ``[0, n)``. Written by ``frontend/torch/ops.py``; read by
``insert-checks``; allowed in a ``.mlir`` model."""

ALGO_ATTR = "qd.algo"
"""A convolution's algorithm and why (``StringAttr``, on the ``tg.conv2d`` left
direct or on the op that anchors another algorithm's ops). Written by
``select-conv-algo``; read by its ``algo_report`` (``stats["conv_algo"]``)."""

UPDATE_ATTR = "qd.update"
"""The weight a tg op of an optimizer step updates (``StringAttr``). Written by
``apply-optimizer``; read by ``fuse``, which keeps such ops out of epilogues so
that ``update-in-place`` finds each update in its own kernel."""

RECOMPUTE_ATTR = "qd.recompute"
"""The recompute group of a tg op cloned by activation checkpointing
(``IntegerAttr``). Written by ``checkpoint``, which reads it back to leave the
clones' uses alone when it points the backward's reads at them."""

# --- the host function ----------------------------------------------------------

NUM_INPUTS_ATTR = "qd.num_inputs"
"""How many of the host ``@main``'s arguments are inputs, the rest being output
buffers (``IntegerAttr``). Written by ``convert-tg-to-affine``
(``passes/kernels/lowering/host.py``); read by ``update-in-place`` and the CUDA
emitter (``emit/program.py``)."""

IN_PLACE_ATTR = "qd.in_place"
"""The ``[output, input]`` index pairs of a training step whose output is written
over its input (``ArrayAttr``), on the host ``@main``. Written by
``update-in-place``; read by ``compiler/host.py`` (``stats["in_place"]``)."""

PROFILE_KERNELS_ATTR = "qd.profile_kernels"
"""The kernels the profile timers bracket, in timer order (``ArrayAttr`` of
strings), on the host ``@main``. Written by ``instrument-kernels``
(``profile=True``); read by the CPU target's ``Compiled.profile``."""

# --- kernels --------------------------------------------------------------------

KERNEL_ATTR = "qd.kernel"
"""Marks a ``func.func`` as a kernel (the host has none) and holds the tg ops it
computes (``StringAttr``: ``tg.matmul+tg.add+tg.relu``). Written by
``convert-tg-to-affine`` (``passes/kernels/lowering/common.py``); read by all that
tell kernels from the host: the primitives and ``Schedule``
(``kernel_functions``), ``dedupe-kernels``, ``plan-memory``,
``instrument-kernels``, the CPU lowering, the CUDA emitter, the tuner,
``compiler/host.py`` (``kernel_labels``) and ``qidao explain``."""

# --- loops ----------------------------------------------------------------------

LOOP_ATTR = "qd.loop"
"""An ``affine.for``'s name, unique in its kernel (``StringAttr``: ``i``, ``i_o``),
by which schedules address it. Written by the kernel lowering
(``passes/kernels/lowering/common.py``) and the primitives that make loops
(``split``, ``unroll``, ``vectorize``, ``loop-fuse``, ...); read through
``loop_name`` / ``find_loop`` (``passes/schedule/loops/nest.py``) by the
primitives, ``Schedule``, the default schedules and the CUDA emitter."""

ROLLED_ATTR = "qd.rolled"
"""A ``UnitAttr`` on a loop that must stay rolled. Written by ``unroll`` by 1; moved
by ``lower-scf-to-cf`` onto the loop's back edge (``cf.br``) and by
``passes/cpu/llvm/func.py`` onto the ``llvm.br``; read by the CPU emitter
(``targets/cpu/emit.py``), which adds ``llvm.loop.unroll.disable``."""

PARALLEL_ATTR = "qd.parallel"
"""A ``UnitAttr`` on a loop whose iterations may run on CPU threads. Written by
``parallel`` (and ``bind`` to ``"threads"``); read by ``convert-parallel-to-gomp``
(a ``GOMP_parallel`` call) and by ``bind`` / ``block-stride``, which do not mix
CPU threads and GPU axes."""

BIND_ATTR = "qd.bind"
"""The GPU axis a loop is bound to (``StringAttr``: ``blockIdx.x``, ...). Written by
``bind`` and ``block-stride``; read through ``bound_axis``
(``passes/schedule/loops/gpu.py``) by the GPU primitives and the CUDA emitter."""

THREADS_ATTR = "qd.threads"
"""The ``threadIdx.x`` threads that deal out a block-stride loop's iterations
(``IntegerAttr``). Written by ``block-stride``; read through ``stride_threads``
(``passes/schedule/loops/gpu.py``) by the GPU primitives and the CUDA emitter."""

TENSORIZE_ATTR = "qd.tensorize"
"""The tensor-core intrinsic of a tensorized tile (``StringAttr``: ``wmma_f16``,
``wmma_tf32``), on the tile's head loop. Written by ``tensorize``; read through
``tensorized`` by the CUDA emitter (``emit/wmma.py``, ``emit/pipeline.py``)."""

DOUBLE_BUFFER_ATTR = "qd.double_buffer"
"""A ``UnitAttr`` on a loop whose ``cache_read`` copies are staged in two buffers
(the next iteration's copy overlaps this one's compute). Written by
``double-buffer``; read through ``is_double_buffered`` by the CUDA staging
(``targets/cuda/staging.py``)."""

# --- symbolic dimensions (docs/dynamic-shapes.md) ---------------------------------

DIMS_ATTR = "qd.dims"
"""The symbolic dimensions of a model, on its entry function ``@main``
(``DictionaryAttr``: name -> ``[lo, hi, capacity]`` as ``IntegerAttr``s): a call may
give the dimension any size in ``[lo, hi]``; tensors are laid out for
``capacity``. Written by ``qidao.frontend.symbolic.declare_dims``; read by
``mark-symbolic-loops`` and ``qidao.compiler.symbolic``."""

DIM_LABELS_ATTR = "qd.dim_labels"
"""Which dimension of each graph input is symbolic, on ``@main``: one
``ArrayAttr`` of ``StringAttr`` per input, ``""`` for a static dimension, the
dimension's name for a symbolic one. Written by ``declare_dims``; read by
``mark-symbolic-loops`` and ``qidao.compiler.symbolic``."""

OUTPUT_DIM_LABELS_ATTR = "qd.output_dim_labels"
"""The same for each graph output, on the host ``@main``. Written by
``mark-symbolic-loops``; read by ``qidao.compiler.symbolic``."""

SYMBOLIC_ATTR = "qd.symbolic"
"""The symbolic dimension (``StringAttr``) whose size a loop's trip count follows at
run time, on an ``affine.for`` whose static bounds are the ones at the dimension's
capacity; and, on a kernel's ``index`` argument (its ``arg_attrs``), the dimension
whose size it carries. Written by ``mark-symbolic-loops``; kept by ``split`` (on the
outer loop), refused by the primitives that need a constant trip count
(``passes/schedule/loops/nest.py``); read by ``bound-symbolic-loops``."""

TRIP_ATTR = "qd.trip"
"""A symbolic loop's trip count at run time as a map of the dimension's size
(``AffineMapAttr``, ``()[s0] -> (s0)``; ``split`` by 8 makes the outer loop's
``()[s0] -> (s0 ceildiv 8)``). Written by ``mark-symbolic-loops`` and ``split``;
read by
``bound-symbolic-loops``."""

EXACT_ATTR = "qd.exact"
"""A ``UnitAttr`` on a symbolic loop that reduces (it carries ``iter_args`` or
stores to the same element in different iterations): it must run exactly the
size's iterations, never rounded up to a tile, so ``split`` refuses it. Written by
``mark-symbolic-loops``; read by ``split``."""

SIZES_ATTR = "qd.sizes"
"""On a kernel function with loops over symbolic dimensions: those dimensions and
their capacities (``DictionaryAttr``: name -> ``IntegerAttr``), in the order
``bound-symbolic-loops`` appends their sizes as ``index`` arguments. Written by
``mark-symbolic-loops``; copied onto the kernel's declarations when the CPU
lowering splits the module over processes (``targets/cpu/lower.py``); read by
``bound-symbolic-loops`` (on kernels, declarations and the host's calls)."""
