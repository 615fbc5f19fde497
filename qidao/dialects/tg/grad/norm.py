"""vjp rule of ``tg.batch_norm`` (inference form, NCHW: channels at dimension 1).

``y = scale (x - mean) r + bias`` with ``r = 1 / sqrt(var + epsilon)`` per channel,
``mean`` and ``var`` operands (PyTorch's eval-mode ``batch_norm``, where they are the
running statistics). With ``S`` the sum over every dimension but the channels:

```
dx     = g scale r
dscale = S(g (x - mean)) r
dbias  = S(g)
dmean  = -S(g) scale r
dvar   = -S(g (x - mean)) scale r^3 / 2
```

Training-mode batch norm needs no rule: a frontend builds it from ``reduce_mean``,
``sub``, ``mul``, ``sqrt``... whose rules compose (``tests/dialects/tg/grad/
test_norm.py`` checks such a graph). NHWC is refused (``GradientError``): the
``layout`` pass runs after autodiff.
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from qidao.dialects.tg.grad.emit import Emit, shape
from qidao.dialects.tg.grad.rules import GradientError, Grads, vjp
from qidao.dialects.tg.linalg import NCHW
from qidao.dialects.tg.nn import BatchNormOp


@vjp(BatchNormOp)
def _batch_norm(e: Emit, op: BatchNormOp, g: SSAValue) -> Grads:
    if op.data_layout() != NCHW:
        raise GradientError(
            f"tg.batch_norm: no gradient for layout {op.data_layout()}; autodiff "
            "expects NCHW (the layout pass runs after it)"
        )
    dims = shape(op.input)
    channels = [1] * len(dims)
    channels[1] = dims[1]
    axes = [k for k in range(len(dims)) if k != 1]

    def per_channel(v: SSAValue) -> SSAValue:
        return e.reshape(v, channels)

    epsilon = float(np.float32(op.epsilon.value.data))  # as numpy_eval rounds it
    r = e.div(1.0, e.sqrt(e.add(op.var, epsilon)))
    scale_r = e.mul(op.scale, r)
    centered = e.sub(op.input, per_channel(op.mean))
    sum_g = e.reduce_sum(g, axes)
    sum_gx = e.reduce_sum(e.mul(g, centered), axes)
    return [
        e.mul(g, per_channel(scale_r)),
        e.mul(sum_gx, r),
        sum_g,
        e.neg(e.mul(sum_g, scale_r)),
        e.mul(e.mul(sum_gx, e.mul(scale_r, e.mul(r, r))), -0.5),
    ]
