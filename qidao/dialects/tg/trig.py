"""Trigonometric and hyperbolic tg ops beyond ``tg.sin``/``tg.cos``/``tg.tanh``.

``tg.tan``, the inverse functions ``tg.asin``, ``tg.acos``, ``tg.atan``, and the
hyperbolic ``tg.sinh``, ``tg.cosh`` and their inverses ``tg.asinh``, ``tg.acosh``,
``tg.atanh``: unary elementwise ops on floats (f16 computes in f32 and rounds once,
as the other elementwise ops), each C's function of the same name, so IEEE special
values are C99's, as NumPy's: outside the domain the result is NaN (``asin(2)``,
``acosh(0.5)``, ``atanh(2)``), at its edges an infinity (``atanh(+-1) = +-inf``),
and overflow gives inf (``cosh(100.0)`` in f32). Angles are radians.
"""

from __future__ import annotations

from xdsl.irdl import irdl_op_definition

from qidao.dialects.tg.elementwise import UnaryElementwiseOp


@irdl_op_definition
class TanOp(UnaryElementwiseOp):
    """Elementwise tangent of ``x`` in radians (``tan(+-inf)`` is NaN).

    ```mlir
    %r = tg.tan %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.tan"


@irdl_op_definition
class AsinOp(UnaryElementwiseOp):
    """Elementwise arcsine, in ``[-pi/2, pi/2]``; NaN outside ``[-1, 1]``.

    ```mlir
    %r = tg.asin %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.asin"


@irdl_op_definition
class AcosOp(UnaryElementwiseOp):
    """Elementwise arccosine, in ``[0, pi]``; NaN outside ``[-1, 1]``.

    ```mlir
    %r = tg.acos %x : tensor<4xf64> -> tensor<4xf64>
    ```
    """

    name = "tg.acos"


@irdl_op_definition
class AtanOp(UnaryElementwiseOp):
    """Elementwise arctangent, in ``[-pi/2, pi/2]`` (``atan(+-inf) = +-pi/2``).

    ```mlir
    %r = tg.atan %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.atan"


@irdl_op_definition
class SinhOp(UnaryElementwiseOp):
    """Elementwise hyperbolic sine (odd; overflows to ``+-inf``).

    ```mlir
    %r = tg.sinh %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.sinh"


@irdl_op_definition
class CoshOp(UnaryElementwiseOp):
    """Elementwise hyperbolic cosine (even, at least 1; overflows to inf).

    ```mlir
    %r = tg.cosh %x : tensor<2x3xf16> -> tensor<2x3xf16>
    ```
    """

    name = "tg.cosh"


@irdl_op_definition
class AsinhOp(UnaryElementwiseOp):
    """Elementwise inverse hyperbolic sine, defined everywhere.

    ```mlir
    %r = tg.asinh %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.asinh"


@irdl_op_definition
class AcoshOp(UnaryElementwiseOp):
    """Elementwise inverse hyperbolic cosine, ``>= 0``; NaN below 1.

    ```mlir
    %r = tg.acosh %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.acosh"


@irdl_op_definition
class AtanhOp(UnaryElementwiseOp):
    """Elementwise inverse hyperbolic tangent: ``+-inf`` at ``+-1``, NaN beyond.

    ```mlir
    %r = tg.atanh %x : tensor<4xf32> -> tensor<4xf32>
    ```
    """

    name = "tg.atanh"


TRIG_OPS: tuple[type[UnaryElementwiseOp], ...] = (
    TanOp,
    AsinOp,
    AcosOp,
    AtanOp,
    SinhOp,
    CoshOp,
    AsinhOp,
    AcoshOp,
    AtanhOp,
)
"""Every op class of this module."""
