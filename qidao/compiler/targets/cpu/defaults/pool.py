"""Default schedule of NHWC pooling kernels (``tg.max_pool2d``, ``tg.avg_pool2d``
after the ``layout`` pass): the channel loops on vectors, the rows on threads.

An NHWC pool is ``n, oh, ow`` around ``c_init`` (the output row of channels set to
the identity), then ``kh, kw`` around ``c`` (one tap folded in), and for an average
``c_norm`` (the division). Each channel loop is innermost and unit-stride, so it is
vectorized 16 wide (tails as scalar ``_tail`` loops); LLVM left the tap loop scalar
on its own (the resnet stem's 3x3 max pool, 32 channels: 69 us before, 16 us
vectorized, one thread). With threads, ``oh`` runs in parallel when the output pays
for waking them (``loops.PARALLEL_MIN_ELEMENTS``). An NCHW pool (outside a conv
chain the layout pass leaves pools NCHW) has its window loops innermost: left as
lowered, with that reason.
"""

from __future__ import annotations

from qidao.compiler.defaults import NotApplicable
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cpu.defaults.loops import parallel_outer

CHANNEL_LOOPS = ("c_init", "c", "c_norm")
WIDTH = 16


def schedule_pool(s: Schedule, kernel: str, threads: int) -> str:
    loops = s.loops(kernel)
    channel = [name for name in loops if name in CHANNEL_LOOPS]
    if "c" not in channel or loops[:3] != ["n", "oh", "ow"]:
        raise NotApplicable(
            f"not an NHWC pool (loops {loops}): the channel loop is not innermost"
        )
    extents = s.extents(kernel)
    channels = extents["c"]
    if channels is None or channels < WIDTH:
        raise NotApplicable(f"{channels} channels: fewer than one vector of {WIDTH}")
    for name in channel:
        s.vectorize(kernel, name, WIDTH)
    done = f"channel loops {', '.join(channel)} on <{WIDTH} x float> vectors"
    ow = extents["ow"] or 1
    try:
        parallel = parallel_outer(s, kernel, threads, ["n", "oh"], ow * channels)
    except NotApplicable:
        return done
    return f"{done}, {parallel}"
