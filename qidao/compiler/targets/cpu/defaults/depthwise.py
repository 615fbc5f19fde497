"""The default schedule of a depthwise NHWC convolution kernel: the channels on
vectors, the bias and the epilogue on the pixel while it is in L1.

The kernel (``lowering/conv_depthwise.py``) is ``n, cb, oh, ow, kh, kw, [if] c``:
blocks ``cb`` of 16 channels outermost, ``c`` the 16 channels of a block; the init
nest ``n_init, oh_init, ow_init, c_init`` comes before it and the epilogue nest
``n_epi, ...`` after it. The schedule::

    parallel n, cb or oh               the outermost with enough iterations, when
                                       threads > 1 and the output pays for it
                                       (first: the lowered nest's writes are
                                       plainly disjoint)
    compute_at n_init, n_epi into ow   one pixel of one block: bias, KH*KW taps,
                                       epilogue, on one vector of out
    vectorize c_init, c, c_epi by 16   <16 x float>; an epilogue with an exp,
                                       tanh, log or erf (a swish) stays a scalar
                                       loop, which LLVM vectorizes with
                                       expand-math's polynomial (a vector math.exp
                                       would be a libm call per lane)

Measured (one thread, AMD EPYC znver5, a 2-core machine shared with other runs:
medians of 3, +-20% between runs; us for the kernel alone, bias and relu included,
``C@HxW/stride``, padding in the kernel as the pipeline leaves it). The options: as
lowered (LLVM vectorizes ``c`` itself), this schedule, and on top of it ``ow``
split by 2, 4 or 7 and unrolled (a register tile of pixels), with ``kh, kw`` inside
or outside the tile (each weight vector loaded once per tile):

| shape        | lowered | chosen | ow 2 | ow 4 | ow 4, taps out | ow 7, taps out |
|--------------|---------|--------|------|------|----------------|----------------|
| 32@56x56/1   | 151     | 19     | 20   | 19   | 19             | 19             |
| 96@56x56/1   | 129     | 60     | 63   | 113  | 74             | 63             |
| 32@112x112/1 | 640     | 91     | 94   | 95   | 90             | 89             |
| 96@112x112/2 | 402     | 228    | 577  | 367  | 537            | 515            |
| 144@56x56/1  | 748     | 307    | 584  | 404  | 258            | 359            |
| 144@56x56/2  | 111     | 43     | 95   | 81   | 94             | 105            |
| 192@28x28/1  | 184     | 60     | 160  | 132  | 81             | 95             |
| 384@14x14/1  | 81      | 50     | 99   | 42   | 46             | 57             |
| 576@14x14/2  | 38      | 19     | 25   | 23   | 21             | 47             |
| 960@7x7/1    | 51      | 25     | 43   | 32   | 34             | 31             |
| 240@16x16/1  | 73      | 26     | 76   | 66   | 38             | 25             |

Vectorizing the channels pays everywhere (2-8x); no pixel tile wins across the
shapes (each loses up to 2.5x somewhere). Unrolling ``kh, kw`` (fused) was within
the noise or slower (144@56x56/1: 728 us, 192@28x28/1: 121 us), and so were
channel blocks of 32, 48 or 64 instead of 16 (192@28x28/1: 61 us with 16, 153,
105, 124). For scale, ONNX Runtime's kernel on this machine: 144@56x56/1 278 us,
32@112x112/1 227 us, 960@7x7/1 59 us. With threads, the outermost of ``n, cb, oh``
with at least as many iterations as threads is split when the output times the
taps reaches ``loops.PARALLEL_MIN_ELEMENTS`` (a tap, a multiply-add, counted as
an element of an elementwise kernel: EfficientNet's 5x5 144@16x16/2, 37K
outputs, had stayed on one thread at ~65 us).

The schedule applies when the kernel has the depthwise nest and ``C`` is a
multiple of 16; otherwise it raises ``NotApplicable`` with the reason and the
kernel stays as lowered (one block of all ``C`` channels; LLVM vectorizes ``c``).
"""

from __future__ import annotations

from xdsl.dialects import affine

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule, ScheduleError
from qidao.compiler.targets.cpu.defaults.loops import parallel_outer
from qidao.passes.cpu.expand_math import scalar_only_math
from qidao.passes.schedule.loops.nest import find_loop, kernel_functions, loop_name

WIDTH = 16
"""Lanes of one ``<16 x float>`` register."""

MAIN = ("n", "cb", "oh", "ow", "kh", "kw", "c")
"""The main nest of a depthwise NHWC convolution kernel, outer to inner."""


_RAGGED = (
    f"{{channels}} channels are not a multiple of {WIDTH}: left to LLVM's "
    "vectorizer (no scalar tail after every tap)"
)


def is_depthwise_kernel(s: Schedule, kernel: str) -> bool:
    """Whether ``kernel``'s loops are the depthwise nest: ``MAIN`` in a row, with no
    output-channel loop ``f`` (a dense or grouped NHWC convolution has one inside
    ``c``)."""
    loops = s.loops(kernel)
    if "n" not in loops or "f" in loops:
        return False
    first = loops.index("n")
    return tuple(loops[first : first + len(MAIN)]) == MAIN


def schedule_depthwise(s: Schedule, kernel: str, threads: int) -> str:
    """Schedule the depthwise ``kernel`` as the module docstring says; returns what
    was done, or raises ``NotApplicable`` with the reason."""
    if not is_depthwise_kernel(s, kernel):
        raise NotApplicable(f"not a depthwise conv nest: loops {s.loops(kernel)}")
    extents = s.extents(kernel)
    channels, ow = extents["c"], extents["ow"]
    if channels is None or ow is None:
        raise NotApplicable("the channel or pixel loop has non-constant bounds")
    ragged = _RAGGED.format(channels=channels) if channels % WIDTH else ""
    taps = (extents.get("kh") or 1) * (extents.get("kw") or 1)
    try:  # first: the parallel pass proves the lowered nest's writes disjoint
        work = ow * channels * taps  # a tap: one multiply-add per output element
        parallel = parallel_outer(s, kernel, threads, ["n", "cb", "oh"], work)
    except NotApplicable as why:
        if ragged:
            raise NotApplicable(f"{ragged}; {why}") from None
        parallel = ""
    if ragged:  # the rows on the threads, the rest as lowered
        return f"{ragged}; {parallel}"
    for nest in _side_nests(s, kernel):
        s.compute_at(kernel, nest, "ow")
    for loop in ("c_init", "c"):
        s.vectorize(kernel, loop, WIDTH)
    done = f"channels on <{WIDTH} x float> vectors, bias and epilogue per pixel"
    math_op = (
        scalar_only_math(find_loop(s.module, "default schedule", kernel, "c_epi")[1])
        if "c_epi" in extents
        else None
    )
    if math_op is not None:  # a vector math.exp would be one libm call per lane
        done += f" (epilogue left to LLVM's vectorizer: {math_op})"
    elif "c_epi" in extents:
        try:
            s.vectorize(kernel, "c_epi", WIDTH)
        except ScheduleError as err:  # an epilogue op vectorize does not take
            done += f" (epilogue scalar: {err})"
    return f"{done}, {parallel}" if parallel else done


def _side_nests(s: Schedule, kernel: str) -> list[str]:
    """The init and epilogue nests (``n_init``, ``n_epi``) that are top-level."""
    fn = kernel_functions(s.module)[kernel]
    top = [loop_name(op) for op in fn.body.block.ops if isinstance(op, affine.ForOp)]
    return [name for name in ("n_init", "n_epi") if name in top]
