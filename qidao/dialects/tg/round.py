"""``tg.round``: round each float to the nearest integer, ties to even.

IEEE 754's ``roundToIntegralTiesToEven``, as NumPy's ``round``/``rint`` and ONNX's
``Round``: ``0.5 -> 0``, ``1.5 -> 2``, ``2.5 -> 2``, ``-2.5 -> -2``. The result is a
float of the operand's type; it is exact (every rounded value is representable), a
zero result keeps the operand's sign (``round(-0.3) = -0.0``), and infinities and NaN
give themselves. It is what quantization rounds with (ONNX ``QuantizeLinear``).
"""

from __future__ import annotations

from xdsl.irdl import irdl_op_definition

from qidao.dialects.tg.elementwise import UnaryElementwiseOp


@irdl_op_definition
class RoundOp(UnaryElementwiseOp):
    """Elementwise round half to even, on floats (see the module docstring).

    ```mlir
    %r = tg.round %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.round"
