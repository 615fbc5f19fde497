"""Default schedule of row kernels (softmax, log-softmax, layer norm, reductions over
the last axis): each pass over a row on ``<16 x float>`` vectors, the rows on threads.

A row kernel (``passes/kernels/lowering/rows.py``, ``reduce.py``, softmax in
``nn.py``) is row loops ``i0, i1, ...`` around innermost passes over the row, named
``r...``: reductions (``r_max``, ``r_mean``, ``r0``: the accumulator in
``iter_args``) and elementwise passes (``r_out``, ``r_norm``). At every thread count
each pass is vectorized (``vectorize``), 16 lanes of float32 (one AVX-512 register;
8 of float64):

    for r in [0, 1024):                  for r in [0, 1024) step 64:   (4 registers)
      acc = acc + x[i, r]          ==>     acc_v = acc_v + x[i, r:r+64]
                                         acc = reduce_add(acc_v)
    for r in [0, 1024):                  for r in [0, 1024) step 16:
      out[i, r] = f(x[i, r], acc)  ==>     out[i, r:r+16] = f(x[i, r:r+16], acc)

- A reduction takes ``ACCUMULATORS`` x 16 = 64 lanes: one ``vector<64xf32>``
  accumulator, which LLVM keeps in four ``<16 x float>`` registers added
  independently, so four adds are in flight instead of one chain of 3-cycle adds.
  With one 16-lane accumulator layer norm ran slower than LLVM's own vectorization
  (256 rows of 1024, in L2: 61.7 µs, against 56.7 µs as lowered and 49.5 µs with
  four). Its tail (``<loop>_tail``, under 64 elements) is vectorized again by 16
  when it has 16 or more, and the last ``n mod 16`` stay scalar
  (``<loop>_tail_tail``): 1000 = 15 x 64 + 2 x 16 + 8.
- An elementwise pass takes 16 lanes, a scalar ``<loop>_tail`` the ``n mod 16`` left.

Left as lowered, with the reason in the report: a row shorter than one register (LLVM
gets the whole row); a pass that holds ``math.exp``/``log``/``tanh``/``erf`` (the
``exp(x - max)`` sum of a softmax), because ``expand-math`` writes those out as
vectorizable arith on scalars only: LLVM's loop vectorizer widens that expansion to
``<16 x float>`` with interleaved accumulators (the sum carries
``fastmath<reassoc>``), while a vector ``math.exp`` would become sixteen libm calls
(softmax 7x slower); a pass ``vectorize`` refuses (a softmax over a non-last axis
reads its row with a stride). With ``threads > 1`` the outermost row loop runs in
parallel, when the work pays (``loops.schedule_rows``, which calls
:func:`vectorize_row_passes` after ``parallel``: its legality check does not know
``vector.reduction``).

Numerics: a vectorized sum adds 64 partial sums, folded by a shuffle tree, instead
of summing left to right (NumPy's pairwise sum and PyTorch's vectorized kernels each
use yet another order), so the last bits of a sum, mean or variance differ from a
serial loop's; ``tests/compiler/targets/cpu/test_rows_schedule.py`` holds softmax,
log-softmax, layer norm and the reductions to NumPy in float64 at rtol 1e-5. Max is
exact in any order.

Measured (AMD EPYC, AVX-512, one thread, float32, median of calls interleaved in
one process with PyTorch eager; a shared machine, so the quietest of three runs):

==================  ===========  ==========  ==========  ==================
workload            as lowered   this        torch       vs torch
==================  ===========  ==========  ==========  ==================
layer norm 256x1K   56.7 µs      49.5 µs     101 µs      2.0x (in L2)
softmax 256x1K      128 µs       115 µs      182 µs      1.6x (in L2)
layer norm 4Kx1K    1.67 ms      1.43 ms     1.53 ms     1.07x (0.86-1.22x)
softmax 4Kx1K       2.20 ms      2.03 ms     3.42 ms     1.7x (1.2-1.7x)
==================  ===========  ==========  ==========  ==================

A vectorized reduction stays rolled (``unroll`` by 1: ``llvm.loop.unroll.disable``
on its back edge). Left to itself LLVM unrolls the two reduction passes of a layer
norm over 1024 fully (16 iterations each) and then reuses the first pass's loads of
the row in the second, keeping 64 ``<16 x float>`` values live and spilling 2.2 KB
to the stack per row. Layer norm 4096x1024, one thread, in one process with
PyTorch (the machine busy with other work, so the ratios matter): 836 µs unrolled
and 695 µs rolled against PyTorch's 1.38 ms (1.65x -> 2.0x); 4096x768 1.37x ->
1.78x.
"""

from __future__ import annotations

from xdsl.dialects import affine
from xdsl.dialects.builtin import AnyFloat

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.dialects.attributes import EXACT_ATTR
from qidao.passes.cpu.expand_math import scalar_only_math
from qidao.passes.schedule.loops.nest import (
    kernel_functions,
    kernel_loops,
    loop_name,
    symbolic_dim,
)
from qidao.passes.schedule.vectorize import TAIL_SUFFIX

REGISTER_BITS = 512
"""One AVX-512 register: 16 float32 lanes, 8 float64."""
ACCUMULATORS = 4
"""Independent vector accumulators of a reduction."""


def vectorize_row_passes(
    s: Schedule, kernel: str, rows: list[str]
) -> tuple[list[str], list[str]]:
    """Vectorize every pass over the row of ``kernel`` (the innermost loops that are
    not among the row loops ``rows``) where it can be; what was done, and for each
    pass left as lowered, why."""
    done: list[str] = []
    left: list[str] = []
    for loop in kernel_loops(kernel_functions(s.module)[kernel]):
        innermost = not any(isinstance(op, affine.ForOp) for op in loop.body.walk())
        if str(loop_name(loop)) in rows or not innermost:
            continue
        try:
            done.append(_vectorize_pass(s, kernel, loop))
        except NotApplicable as why:
            left.append(str(why))
        except ScheduleError as err:  # the primitive left the kernel as it was
            left.append(f"{loop_name(loop)}: {err.reason}")
    return done, left


def _vectorize_pass(s: Schedule, kernel: str, loop: affine.ForOp) -> str:
    """Vectorize one pass over the row: what was done; raises NotApplicable (or the
    primitive's ScheduleError) when it stays as lowered."""
    name = str(loop_name(loop))
    extent = s.extents(kernel)[name]
    width, element = register_lanes(loop)
    if extent is None:
        raise NotApplicable(f"{name}: its bounds are not constant")
    if extent < width:
        raise NotApplicable(f"{name}: {extent} elements, fewer than {width} lanes")
    math_op = scalar_only_math(loop)
    if math_op is not None:
        raise NotApplicable(
            f"{name} holds {math_op}, which expand-math writes out on scalars only "
            "(LLVM vectorizes the expansion)"
        )
    register = f"<{width} x {element}>"
    dim = symbolic_dim(loop)
    if dim is not None and EXACT_ATTR in loop.attributes:
        raise NotApplicable(
            f"{name} reduces over the symbolic dimension '{dim}' (LLVM vectorizes "
            "it, with a remainder loop for the call's size)"
        )
    if dim is not None:  # whole vectors past the call's size: rows that exist
        s.split(kernel, name, width)
        s.vectorize(kernel, f"{name}_i", width)
        return f"{name} ({register}, whole vectors over '{dim}')"
    lanes = ACCUMULATORS * width
    if not loop.results or extent < lanes:
        s.vectorize(kernel, name, width)
        return f"{name} ({register})"
    s.vectorize(kernel, name, lanes)
    if extent % lanes >= width:
        s.vectorize(kernel, name + TAIL_SUFFIX, width)
    s.unroll(kernel, name, 1)  # rolled: LLVM would unroll it fully, and spill
    return f"{name} ({ACCUMULATORS} x {register} accumulators)"


def register_lanes(loop: affine.ForOp) -> tuple[int, str]:
    """Lanes of one register of the widest float the pass computes in (an f16
    kernel computes in f32), and that float's C name."""
    bits = max(
        (
            int(t.bitwidth)
            for op in loop.body.walk()
            for t in (result.type for result in op.results)
            if isinstance(t, AnyFloat)
        ),
        default=32,
    )
    return REGISTER_BITS // bits, "double" if bits == 64 else "float"
