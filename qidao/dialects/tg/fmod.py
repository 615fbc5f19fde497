"""``tg.fmod``: the floating-point remainder of C's ``fmod``.

``fmod(a, b) = a - trunc(a / b) * b`` computed exactly (no rounding: the remainder of
two floats is itself a float of their type), with the sign of ``a``; as C99 and
NumPy's ``fmod``: ``fmod(x, 0)`` and ``fmod(+-inf, y)`` are NaN, ``fmod(x, +-inf)``
is ``x``, NaN propagates, and a zero remainder keeps ``a``'s sign (``fmod(-4, 2) =
-0``). NumPy's ``remainder`` (the sign of ``b``, Python's ``%``) is built from it by
the frontends.
"""

from __future__ import annotations

from xdsl.irdl import irdl_op_definition

from qidao.dialects.tg.elementwise import BinaryElementwiseOp


@irdl_op_definition
class FmodOp(BinaryElementwiseOp):
    """Elementwise ``fmod(lhs, rhs)`` on floats, with broadcasting: exact, with the
    sign of ``lhs`` (see the module docstring).

    ```mlir
    %r = tg.fmod %x, %y : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
    """

    name = "tg.fmod"
