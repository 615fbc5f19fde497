"""``widen-floats``: every f16 and f32 tensor becomes f64 — the graph computed in
double precision, as ``qidao.gradcheck`` needs it.

Central differences of a float32 program are dominated by its rounding (a step of
1e-3 moves a float32 sum by about its last bit), so ``qidao.gradcheck`` compares
gradients of the same graph widened to f64, as ``torch.autograd.gradcheck`` asks for
double inputs. Every value's type (block arguments, results, the function's
signature) keeps its shape and layout with an f64 element; constants are converted
(``astype``, exact); a ``tg.cast`` to f16/f32 becomes a cast to f64 (a no-op the
graph passes fold). Integer and bool tensors are unchanged.

Before:
```mlir
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = tg.constant dense<5.000000e-01> : tensor<f32>
  %y = tg.mul %x, %c : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
```
After: the same ops on ``tensor<2xf64>`` and ``tensor<f64>``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import FunctionType, TensorType, f16, f32, f64
from xdsl.ir import Attribute, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from qidao.dialects.tg.constant import ConstantOp

_NARROW = (f16, f32)


def widened(t: Attribute) -> Attribute:
    """``t`` with an f64 element where it has f16 or f32; else ``t``."""
    if isinstance(t, TensorType) and t.get_element_type() in _NARROW:
        return TensorType(f64, t.get_shape(), t.encoding)
    return t


def _widen_value(value: SSAValue) -> None:
    new = widened(value.type)
    if new != value.type:
        Rewriter.replace_value_with_new_type(value, new)


@dataclass(frozen=True)
class WidenFloatsPass(ModulePass):
    """Compute every f16/f32 tensor of the module in f64."""

    name = "widen-floats"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and fn.body.blocks:
                _widen_function(fn)


def _widen_function(fn: func.FuncOp) -> None:
    for o in list(fn.walk()):
        for region in o.regions:
            for block in region.blocks:
                for arg in list(block.args):
                    _widen_value(arg)
        if isinstance(o, ConstantOp) and widened(o.result.type) != o.result.type:
            array = o.to_numpy().astype(np.float64)
            new = ConstantOp.from_numpy(array)
            Rewriter.replace_op(o, new)
            continue
        for result in list(o.results):
            _widen_value(result)
    fn.function_type = FunctionType.from_lists(
        [widened(t) for t in fn.function_type.inputs.data],
        [widened(t) for t in fn.function_type.outputs.data],
    )
