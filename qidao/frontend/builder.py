"""A small Python builder for tg graphs: write a model by hand, get a verified module.

```python
g = Graph("main")
x = g.input("x", (4, 8))
w = g.constant(np.ones((8, 2), np.float32))
y = g.relu(x @ w + 1.0)
g.output(y)
module = g.module()
```

gives

```mlir
builtin.module {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<4x2xf32> attributes {qd.input_names = ["x"], qd.output_names = ["output0"]} {
    %0 = tg.constant dense<1.000000e+00> : tensor<8x2xf32>
    %1 = tg.matmul %x, %0 : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    %2 = tg.constant dense<1.000000e+00> : tensor<f32>
    %3 = tg.add %1, %2 : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
    %4 = tg.relu %3 : tensor<4x2xf32> -> tensor<4x2xf32>
    func.return %4 : tensor<4x2xf32>
  }
}
```

Each method builds one tg op right away; the op's constructor infers the result type,
so a mistake (a matmul whose K sizes differ, an axis out of range) raises a
``GraphError`` at the line that made it, naming the op and the operand shapes.
Python scalars in arithmetic (``x * 2.0``) become rank-0 constants of the tensor's
dtype. Outputs are returned row-major: ``output`` adds a ``tg.contiguous`` after a
strided view such as a transpose.

This is also the layer the ONNX importer builds on, so both frontends produce the same
IR for the same graph.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from xdsl.dialects.builtin import (
    ArrayAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from qidao.dialects import tg
from qidao.dialects.attributes import INPUT_NAMES_ATTR, OUTPUT_NAMES_ATTR, SOURCE_ATTR
from qidao.dialects.symbolic import Dim
from qidao.dialects.tg.custom import gradient_type
from qidao.dialects.tg.domain import has_runtime_domain
from qidao.dialects.tg.types import (
    dtype_name,
    element_type_of,
    fmt_shape,
    is_row_major,
    shape_of,
    tensor_type,
)
from qidao.frontend.custom import CustomOpDef, lookup, registered_names
from qidao.frontend.errors import GraphError
from qidao.frontend.limits import check_tensor
from qidao.frontend.symbolic import declare_dims

IntOrPair = int | Sequence[int]

_INVALID_NAME_CHARS = re.compile(r"[^A-Za-z0-9_$.-]")
_TRAILING_NUMBER = re.compile(r"(_[0-9]+)+$")


def mlir_name(name: str) -> str:
    """``name`` as a valid MLIR SSA name: other characters become ``_``, and a name
    that would start with a digit, or be nothing but ``_<digits>`` groups, gets a
    leading ``v`` (``"input:0" -> "input_0"``, ``"106" -> "v106"``,
    ``"_7" -> "v_7"``).

    xDSL then drops a trailing ``_<digits>`` when it prints (``%input``), adding its
    own suffix where two names collide; a name that is only such a suffix (what
    ``torch.onnx.export`` calls its values: ``"106"``) would be left empty."""
    clean = _INVALID_NAME_CHARS.sub("_", name)
    if not clean or clean[0].isdigit() or not _TRAILING_NUMBER.sub("", clean):
        clean = "v" + clean
    return clean


def _check_size(what: str, t: Attribute) -> None:
    """``qidao.frontend.limits.check_tensor`` on a tensor type (other types pass)."""
    if isinstance(t, TensorType):
        try:
            itemsize = np.dtype(dtype_name(t.get_element_type())).itemsize
        except (TypeError, ValueError):  # a dtype NumPy lacks: count 4 bytes
            itemsize = 4
        check_tensor(what, t.get_shape(), itemsize)


def constant_op(array: npt.NDArray[Any]) -> tg.ConstantOp:
    """A ``tg.constant`` holding ``array``; rank-0 arrays stay rank 0."""
    return tg.ConstantOp.from_numpy(np.asarray(array))


@dataclass(frozen=True, eq=False)
class Value:
    """A tensor value of a ``Graph``: an SSA value with its shape and dtype.

    Arithmetic operators build ops in the value's graph: ``+ - * / @`` and unary ``-``.
    """

    graph: Graph
    ssa: SSAValue

    __array_ufunc__ = None  # make ``array * value`` call ``Value.__rmul__``

    @property
    def type(self) -> TensorType[Attribute]:
        t = self.ssa.type
        assert isinstance(t, TensorType)
        return t

    @property
    def shape(self) -> tuple[int, ...]:
        return shape_of(self.type)

    @property
    def dtype(self) -> str:
        """The NumPy dtype name, e.g. ``"float32"``."""
        return dtype_name(self.type.get_element_type())

    @property
    def rank(self) -> int:
        return len(self.shape)

    def named(self, name: str) -> Value:
        """Give the SSA value a readable name in the printed IR; returns ``self``."""
        self.ssa.name_hint = mlir_name(name)
        return self

    def __repr__(self) -> str:
        return f"Value({self.ssa.name_hint or '?'}: {self.type})"

    def __add__(self, other: TensorLike) -> Value:
        return self.graph.add(self, other)

    def __radd__(self, other: float | npt.NDArray[Any]) -> Value:
        return self.graph.add(other, self)

    def __sub__(self, other: TensorLike) -> Value:
        return self.graph.sub(self, other)

    def __rsub__(self, other: float | npt.NDArray[Any]) -> Value:
        return self.graph.sub(other, self)

    def __mul__(self, other: TensorLike) -> Value:
        return self.graph.mul(self, other)

    def __rmul__(self, other: float | npt.NDArray[Any]) -> Value:
        return self.graph.mul(other, self)

    def __truediv__(self, other: TensorLike) -> Value:
        return self.graph.div(self, other)

    def __rtruediv__(self, other: float | npt.NDArray[Any]) -> Value:
        return self.graph.div(other, self)

    def __matmul__(self, other: Value | npt.NDArray[Any]) -> Value:
        return self.graph.matmul(self, other)

    def __rmatmul__(self, other: npt.NDArray[Any]) -> Value:
        return self.graph.matmul(other, self)

    def __neg__(self) -> Value:
        return self.graph.neg(self)


TensorLike = Value | float | npt.NDArray[Any]
"""What an op operand accepts: a graph value, a Python scalar or a NumPy array."""

_WIDENED = {
    "float16": "float32",
    "int8": "float32",
    "uint8": "float32",
    "int16": "float32",
    "uint16": "float32",
    "int32": "float64",
    "uint32": "float64",
}
"""dtype -> the float an op that takes only f32/f64 computes it in, exactly (f16
in float32: max exact, sums rounded once to f16 at the end). Only ``max_pool2d``
widens integers; the other ops widen f16 alone."""


_EXACT_IN_FLOAT32 = frozenset(
    {"float16", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2"}
    | {"float8_e5m2fnuz", "float4_e2m1fn", "bool", "int8", "uint8", "int16"}
    | {"uint16", "int4", "uint4", "int2", "uint2"}
)
"""dtypes whose every value is a float32 (a saturating cast clamps them there)."""


def _pair(value: IntOrPair, what: str) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    values = tuple(value)
    if len(values) != 2:
        raise GraphError(f"{what} must be an int or a pair, got {list(values)}")
    return (values[0], values[1])


def _padding(value: IntOrPair) -> tuple[int, int, int, int]:
    """An int ``p``, a pair ``(ph, pw)`` or ``[top, left, bottom, right]``."""
    if isinstance(value, int):
        return (value, value, value, value)
    values = tuple(value)
    if len(values) == 2:
        return (values[0], values[1], values[0], values[1])
    if len(values) == 4:
        return (values[0], values[1], values[2], values[3])
    raise GraphError(
        "padding must be an int, a pair (ph, pw) or [top, left, bottom, right], got "
        f"{list(values)}"
    )


class Graph:
    """A tg graph under construction: inputs, ops and outputs of one ``func.func``."""

    def __init__(self, name: str = "main") -> None:
        self.name = name
        self._block = Block()
        self._input_names: list[str] = []
        self._outputs: list[tuple[str, Value]] = []
        self._module: ModuleOp | None = None
        self._source: str | None = None
        self._dims: dict[str, Dim] = {}
        self._labels: list[list[str]] = []

    @contextmanager
    def source(self, label: str) -> Iterator[None]:
        """Label the ops appended inside with the model node they come from: the
        ops with a run-time domain (``qidao.dialects.tg.domain``) carry it as
        ``qd.source``, and a failed run-time check names it."""
        outer, self._source = self._source, label
        try:
            yield
        finally:
            self._source = outer

    # ---- graph boundary ---------------------------------------------------------

    def input(
        self, name: str, shape: Sequence[int | Dim], dtype: str = "float32"
    ) -> Value:
        """A new function argument named ``name`` of ``shape``: ints, or a
        symbolic dimension (``Dim("seq", 1, 2048)``) for an axis whose size each
        call chooses; the graph is built at the dimension's capacity
        (``qidao.dialects.symbolic``), and one compile serves every size."""
        self._check_open()
        if name in self._input_names:
            raise GraphError(f"graph '{self.name}' already has an input named '{name}'")
        labels = [d.name if isinstance(d, Dim) else "" for d in shape]
        for d in shape:
            if isinstance(d, Dim):
                known = self._dims.setdefault(d.name, d)
                if known != d:
                    raise GraphError(
                        f"input '{name}': dimension '{d.name}' is declared as {d} "
                        f"here and as {known} before"
                    )
        sizes = tuple(d.capacity if isinstance(d, Dim) else d for d in shape)
        if any(not isinstance(d, int) or d < 0 for d in sizes):
            raise GraphError(
                f"input '{name}' needs a static shape of non-negative ints (or a "
                f"Dim for a symbolic axis), got {tuple(shape)}"
            )
        try:
            element_type = element_type_of(dtype)
        except ValueError as e:
            raise GraphError(f"input '{name}': {e}") from None
        _check_size(f"input '{name}'", tensor_type(sizes, element_type))
        arg = self._block.insert_arg(
            tensor_type(sizes, element_type), len(self._block.args)
        )
        arg.name_hint = mlir_name(name)
        self._input_names.append(name)
        self._labels.append(labels)
        return Value(self, arg)

    def output(self, *values: Value, names: Sequence[str] | None = None) -> None:
        """Append results of the function, in order (default names ``output<i>``).

        A strided view is copied to row-major first, so every result is row-major.
        """
        self._check_open()
        if names is not None and len(names) != len(values):
            raise GraphError(f"output got {len(values)} values but {len(names)} names")
        for k, value in enumerate(values):
            self._own(value, "output")
            if not is_row_major(value.type):
                value = self.contiguous(value)
            name = f"output{len(self._outputs)}" if names is None else names[k]
            self._outputs.append((name, value))

    def module(self) -> ModuleOp:
        """The finished, verified ``builtin.module`` holding ``func.func @<name>``.

        The graph is closed afterwards; calling ``module`` again returns the same
        module.
        """
        if self._module is not None:
            return self._module
        if not self._outputs:
            raise GraphError(f"graph '{self.name}' has no outputs; call output() first")
        results = [value for _, value in self._outputs]
        self._block.add_op(ReturnOp(*(v.ssa for v in results)))
        func = FuncOp(
            self.name,
            (
                [arg.type for arg in self._block.args],
                [v.type for v in results],
            ),
            Region(self._block),
        )
        func.attributes[INPUT_NAMES_ATTR] = ArrayAttr(
            [StringAttr(n) for n in self._input_names]
        )
        func.attributes[OUTPUT_NAMES_ATTR] = ArrayAttr(
            [StringAttr(n) for n, _ in self._outputs]
        )
        module = ModuleOp([func])
        if self._dims:
            declare_dims(module, list(self._dims.values()), self._labels)
        try:
            module.verify()
        except VerifyException as e:
            raise GraphError(f"graph '{self.name}' does not verify: {e}") from None
        self._module = module
        return module

    # ---- constants --------------------------------------------------------------

    def constant(
        self, value: npt.ArrayLike, dtype: str | None = None, name: str | None = None
    ) -> Value:
        """A ``tg.constant``; a Python float defaults to float32, as does float64
        data when no ``dtype`` is given (pass ``dtype="float64"`` to keep it). It is
        checked against qidao's tensor limit before it is converted or copied into
        the IR (``qidao.frontend.limits``)."""
        array = np.asarray(value)
        target = array.dtype
        if dtype is not None:
            target = np.dtype(dtype)
        elif array.dtype == np.float64:
            target = np.dtype(np.float32)
        what = "constant" if name is None else f"constant '{name}'"
        check_tensor(what, array.shape, target.itemsize)
        if target != array.dtype:
            array = array.astype(target)
        try:
            op = constant_op(array)
        except (ValueError, VerifyException) as e:
            raise GraphError(f"constant of shape {list(array.shape)}: {e}") from None
        value_ = self._append(op)
        return value_ if name is None else value_.named(name)

    # ---- elementwise ------------------------------------------------------------

    def add(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.AddOp, "add", lhs, rhs)

    def sub(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.SubOp, "sub", lhs, rhs)

    def mul(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.MulOp, "mul", lhs, rhs)

    def div(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.DivOp, "div", lhs, rhs)

    def maximum(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.MaxOp, "maximum", lhs, rhs)

    def minimum(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.MinOp, "minimum", lhs, rhs)

    def neg(self, x: Value) -> Value:
        return self._emit("neg", lambda: tg.NegOp(x.ssa), x)

    def exp(self, x: Value) -> Value:
        return self._emit("exp", lambda: tg.ExpOp(x.ssa), x)

    def log(self, x: Value) -> Value:
        return self._emit("log", lambda: tg.LogOp(x.ssa), x)

    def sqrt(self, x: Value) -> Value:
        return self._emit("sqrt", lambda: tg.SqrtOp(x.ssa), x)

    def tanh(self, x: Value) -> Value:
        return self._emit("tanh", lambda: tg.TanhOp(x.ssa), x)

    def erf(self, x: Value) -> Value:
        return self._emit("erf", lambda: tg.ErfOp(x.ssa), x)

    def sin(self, x: Value) -> Value:
        """Elementwise sine (radians), on floats."""
        return self._emit("sin", lambda: tg.SinOp(x.ssa), x)

    def cos(self, x: Value) -> Value:
        """Elementwise cosine (radians), on floats."""
        return self._emit("cos", lambda: tg.CosOp(x.ssa), x)

    def sigmoid(self, x: Value) -> Value:
        return self._emit("sigmoid", lambda: tg.SigmoidOp(x.ssa), x)

    def relu(self, x: Value) -> Value:
        return self._emit("relu", lambda: tg.ReluOp(x.ssa), x)

    def abs(self, x: Value) -> Value:
        return self._emit("abs", lambda: tg.AbsOp(x.ssa), x)

    def round(self, x: Value) -> Value:
        """Round half to even (NumPy ``round``), on floats; exact."""
        return self._emit("round", lambda: tg.RoundOp(x.ssa), x)

    def pow(self, base: TensorLike, exponent: TensorLike) -> Value:
        """``base ** exponent`` on floats (NumPy ``power``)."""
        return self._binary(tg.PowOp, "pow", base, exponent)

    def fmod(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        """C's ``fmod`` on floats: the exact remainder, with the sign of ``lhs``."""
        return self._binary(tg.FmodOp, "fmod", lhs, rhs)

    def tan(self, x: Value) -> Value:
        """Elementwise tangent (radians), on floats; so are the functions below."""
        return self._emit("tan", lambda: tg.TanOp(x.ssa), x)

    def asin(self, x: Value) -> Value:
        return self._emit("asin", lambda: tg.AsinOp(x.ssa), x)

    def acos(self, x: Value) -> Value:
        return self._emit("acos", lambda: tg.AcosOp(x.ssa), x)

    def atan(self, x: Value) -> Value:
        return self._emit("atan", lambda: tg.AtanOp(x.ssa), x)

    def sinh(self, x: Value) -> Value:
        return self._emit("sinh", lambda: tg.SinhOp(x.ssa), x)

    def cosh(self, x: Value) -> Value:
        return self._emit("cosh", lambda: tg.CoshOp(x.ssa), x)

    def asinh(self, x: Value) -> Value:
        return self._emit("asinh", lambda: tg.AsinhOp(x.ssa), x)

    def acosh(self, x: Value) -> Value:
        return self._emit("acosh", lambda: tg.AcoshOp(x.ssa), x)

    def atanh(self, x: Value) -> Value:
        return self._emit("atanh", lambda: tg.AtanhOp(x.ssa), x)

    # ---- bitwise ------------------------------------------------------------------

    def bitwise_and(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        """``lhs & rhs`` on integers and bools (so are ``|``, ``^`` and ``~``)."""
        return self._binary(tg.BitwiseAndOp, "bitwise_and", lhs, rhs)

    def bitwise_or(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.BitwiseOrOp, "bitwise_or", lhs, rhs)

    def bitwise_xor(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.BitwiseXorOp, "bitwise_xor", lhs, rhs)

    def bitwise_not(self, x: Value) -> Value:
        return self._emit("bitwise_not", lambda: tg.BitwiseNotOp(x.ssa), x)

    def shift_left(self, x: TensorLike, amount: TensorLike) -> Value:
        """``x << amount`` on integers; an amount of the bit width or more gives 0."""
        return self._binary(tg.ShiftLeftOp, "shift_left", x, amount)

    def shift_right(self, x: TensorLike, amount: TensorLike) -> Value:
        """``x >> amount`` on integers: logical on unsigned ones, arithmetic on
        signed ones (an amount of the bit width or more: 0, or -1 for x < 0)."""
        return self._binary(tg.ShiftRightOp, "shift_right", x, amount)

    # ---- comparisons, logic, select, cast ----------------------------------------

    def less(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        """``lhs < rhs``, a bool tensor (so are the other comparisons)."""
        return self._binary(tg.LessOp, "less", lhs, rhs)

    def less_equal(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.LessEqualOp, "less_equal", lhs, rhs)

    def greater(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.GreaterOp, "greater", lhs, rhs)

    def greater_equal(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.GreaterEqualOp, "greater_equal", lhs, rhs)

    def equal(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.EqualOp, "equal", lhs, rhs)

    def not_equal(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.NotEqualOp, "not_equal", lhs, rhs)

    def logical_and(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.LogicalAndOp, "logical_and", lhs, rhs)

    def logical_or(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.LogicalOrOp, "logical_or", lhs, rhs)

    def logical_xor(self, lhs: TensorLike, rhs: TensorLike) -> Value:
        return self._binary(tg.LogicalXorOp, "logical_xor", lhs, rhs)

    def logical_not(self, x: Value) -> Value:
        return self._emit("logical_not", lambda: tg.LogicalNotOp(x.ssa), x)

    def where(
        self, condition: Value | npt.NDArray[Any], x: TensorLike, y: TensorLike
    ) -> Value:
        """``np.where(condition, x, y)``: a bool ``condition``; ``x`` and ``y`` of one
        dtype (a Python scalar takes the other's); all three broadcast."""
        c = self._tensor(condition, None)
        a, b = self._operands(x, y)
        return self._emit("where", lambda: tg.SelectOp(c.ssa, a.ssa, b.ssa), c, a, b)

    def cast(self, x: Value, dtype: str, saturate: bool = False) -> Value:
        """``x.astype(dtype)`` (``tg.cast``'s rules: float to int truncates, NaN and
        out-of-range values have no defined result; bfloat16, the float8s, float4
        and 4/2-bit integers as ``ml_dtypes``). ``saturate`` (a float8 ``dtype``
        only, ONNX Cast's): values beyond its largest finite value, infinities
        too, become that value (a clamp first, in float32, or float64 for a
        float64 or integer ``x``); NaN stays NaN."""
        try:
            element_type = element_type_of(dtype)
        except ValueError as e:
            raise GraphError(f"cast: {e}") from None
        if saturate:
            if not dtype.startswith("float8"):
                raise GraphError(
                    f"cast: saturate applies to the float8 dtypes, not to {dtype}"
                )
            if x.dtype != "float32":
                exact = "float32" if x.dtype in _EXACT_IN_FLOAT32 else "float64"
                x = self.cast(x, exact)
            import ml_dtypes  # here: importing it takes about 0.6 s

            limit = float(ml_dtypes.finfo(dtype).max)
            x = self.minimum(self.maximum(x, -limit), limit)
        return self._emit("cast", lambda: tg.CastOp(x.ssa, element_type), x)

    # ---- contractions -----------------------------------------------------------

    def matmul(
        self, lhs: Value | npt.NDArray[Any], rhs: Value | npt.NDArray[Any]
    ) -> Value:
        """NumPy ``matmul`` for operands of rank >= 2 (batch dimensions broadcast)."""
        a, b = self._operands(lhs, rhs)
        if a.dtype == b.dtype == "float16":  # in float32, rounded once (_widened)
            return self._narrowed(self.matmul(self._widened(a), self._widened(b)), a)
        return self._emit("matmul", lambda: tg.MatmulOp(a.ssa, b.ssa), a, b)

    def matmul_integer(
        self, lhs: Value | npt.NDArray[Any], rhs: Value | npt.NDArray[Any]
    ) -> Value:
        """The int32 matrix product of 8-bit integers (``int8``/``uint8``; NumPy
        ``matmul`` shapes), wrapping on overflow: ``tg.matmul_integer``."""
        a, b = self._operands(lhs, rhs)
        return self._emit(
            "matmul_integer", lambda: tg.MatmulIntegerOp(a.ssa, b.ssa), a, b
        )

    def matmul_blockq(self, x: Value, weight: Value, encoding: str) -> Value:
        """``x @ W.T`` for a linear layer's weight ``W`` ``[N, K]`` kept in GGUF
        blocks: ``weight`` is its bytes ``[N, K/block, block bytes]`` ``int8`` (a
        ``GgufTensor``'s ``raw`` viewed as ``int8``), ``encoding`` ``"Q8_0"``,
        ``"Q4_0"`` (blocks of 32) or ``"Q4_K"`` (of 256); ``tg.matmul_blockq``,
        decoded in registers."""
        return self._emit(
            "matmul_blockq",
            lambda: tg.MatmulBlockqOp(x.ssa, weight.ssa, encoding),
            x,
            weight,
        )

    def conv2d(
        self,
        x: Value,
        weight: Value | npt.NDArray[Any],
        bias: Value | npt.NDArray[Any] | None = None,
        *,
        strides: IntOrPair = 1,
        padding: IntOrPair = 0,
        dilation: IntOrPair = 1,
        groups: int = 1,
    ) -> Value:
        """NCHW convolution with an FCHW weight; ``padding`` is an int, ``(ph, pw)``
        or ``[top, left, bottom, right]``."""
        w = self._tensor(weight, x)
        b = None if bias is None else self._tensor(bias, x)
        if x.dtype == "float16":  # in float32, rounded once (_widened)
            y = self.conv2d(
                self._widened(x),
                self._widened(w),
                None if b is None else self._widened(b),
                strides=strides,
                padding=padding,
                dilation=dilation,
                groups=groups,
            )
            return self._narrowed(y, x)
        s, p, d = (
            _pair(strides, "strides"),
            _padding(padding),
            _pair(dilation, "dilation"),
        )
        operands = (x, w) if b is None else (x, w, b)
        return self._emit(
            "conv2d",
            lambda: tg.Conv2dOp(
                x.ssa,
                w.ssa,
                None if b is None else b.ssa,
                strides=s,
                padding=p,
                dilation=d,
                groups=groups,
            ),
            *operands,
        )

    # ---- layout -----------------------------------------------------------------

    def transpose(self, x: Value, perm: Sequence[int] | None = None) -> Value:
        """Permute dimensions (a strided view); no ``perm`` reverses them."""
        p = tuple(range(x.rank - 1, -1, -1)) if perm is None else tuple(perm)
        return self._emit("transpose", lambda: tg.TransposeOp(x.ssa, p), x)

    def view(self, x: Value, shape: Sequence[int]) -> Value:
        """A new shape over the same storage; fails when the layout cannot have it."""
        return self._emit("view", lambda: tg.ViewOp(x.ssa, tuple(shape)), x)

    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        """A new shape, as a view when possible and a copy otherwise."""
        return self._emit("reshape", lambda: tg.ReshapeOp(x.ssa, tuple(shape)), x)

    def contiguous(self, x: Value) -> Value:
        return self._emit("contiguous", lambda: tg.ContiguousOp(x.ssa), x)

    def broadcast(self, x: Value, shape: Sequence[int]) -> Value:
        return self._emit("broadcast", lambda: tg.BroadcastOp(x.ssa, tuple(shape)), x)

    def pad(
        self,
        x: Value,
        low: Sequence[int],
        high: Sequence[int] | None = None,
        value: float = 0.0,
    ) -> Value:
        """``low[d]`` elements of ``value`` before dimension ``d`` and ``high[d]``
        (default: ``low``) after it, as ``np.pad(x, zip(low, high), constant_values=
        value)``."""
        lo = tuple(low)
        hi = lo if high is None else tuple(high)
        return self._emit("pad", lambda: tg.PadOp(x.ssa, lo, hi, value), x)

    # ---- indexing ---------------------------------------------------------------

    def concat(self, values: Sequence[Value], axis: int = 0) -> Value:
        """``np.concatenate(values, axis)``: a row-major copy."""
        xs = [self._own(v, "concat") for v in values]
        return self._emit("concat", lambda: tg.ConcatOp([v.ssa for v in xs], axis), *xs)

    def slice(
        self,
        x: Value,
        start: Sequence[int | None],
        stop: Sequence[int | None] | None = None,
        step: Sequence[int | None] | None = None,
    ) -> Value:
        """``x[start[0]:stop[0]:step[0], ...]`` with Python's rules (negative bounds
        count from the end, out-of-range ones clamp, None is the default); dimensions
        past the lists are kept whole. Steps >= 1 make one ``tg.slice``, a strided
        view (no copy); a dimension with a negative step is then a ``tg.gather`` of
        its entries in reverse order (a copy)."""
        bounds: list[tuple[int, int, int]] = []
        gathers: list[tuple[int, list[int]]] = []
        for d, size in enumerate(x.shape):
            lo = start[d] if d < len(start) else None
            hi = stop[d] if stop is not None and d < len(stop) else None
            st = step[d] if step is not None and d < len(step) else None
            if st == 0:
                raise GraphError(
                    f"slice({fmt_shape(x.shape)}): step must not be 0 (dimension {d})"
                )
            picked = slice(lo, hi, st).indices(size)
            if picked[2] > 0:
                bounds.append((picked[0], max(picked[0], picked[1]), picked[2]))
            else:
                bounds.append((0, size, 1))
                gathers.append((d, list(range(*picked))))
        lo_, hi_, st_ = (tuple(b[k] for b in bounds) for k in range(3))
        y = x
        if any(b != (0, size, 1) for b, size in zip(bounds, x.shape, strict=True)):
            y = self._emit("slice", lambda: tg.SliceOp(x.ssa, lo_, hi_, st_), x)
        for d, indices in gathers:
            y = self.gather(y, indices, axis=d)
        return y

    def gather(
        self, x: Value, indices: int | Sequence[int] | npt.ArrayLike, axis: int = 0
    ) -> Value:
        """``np.take(x, indices, axis)`` for constant integer ``indices`` of any
        shape (negative ones count from the end): a ``tg.gather`` of the flattened
        indices, then a reshape (free) to NumPy's result shape, which puts the
        indices' shape in place of ``axis``; a scalar index drops the axis."""
        array = np.asarray(indices)
        if array.dtype.kind not in "iu" and array.size:
            raise GraphError(f"gather indices must be integers, got {array.dtype}")
        flat = [int(i) for i in array.reshape(-1)]
        y = self._emit("gather", lambda: tg.GatherOp(x.ssa, axis, flat), x)
        a = axis % x.rank if x.rank else 0
        shape = (*x.shape[:a], *array.shape, *x.shape[a + 1 :])
        return y if shape == y.shape else self.reshape(y, shape)

    def take(self, x: Value, indices: Value | npt.ArrayLike, axis: int = 0) -> Value:
        """``np.take(x, indices, axis)`` with ``indices`` an int32/int64 tensor known
        at run time (a graph value; an array becomes a constant): a ``tg.take``,
        shape ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``. Negative
        indices count from the end; out-of-range ones are clamped into the axis
        (see ``qidao/dialects/tg/dynamic_indexing.py``). For indices fixed at build
        time, ``gather`` makes an all-affine kernel."""
        i = self._indices(indices, "take")
        return self._emit("take", lambda: tg.TakeOp(x.ssa, i.ssa, axis), x, i)

    def gather_elements(
        self, x: Value, indices: Value | npt.ArrayLike, axis: int = 0
    ) -> Value:
        """ONNX ``GatherElements`` / ``torch.gather``: one int32/int64 index per
        result element along ``axis`` (a ``tg.gather_elements``); the result has the
        indices' shape. Out-of-range indices are clamped, as in ``take``."""
        i = self._indices(indices, "gather_elements")
        return self._emit(
            "gather_elements", lambda: tg.GatherElementsOp(x.ssa, i.ssa, axis), x, i
        )

    def grid_sample(
        self,
        x: Value,
        grid: Value,
        mode: str = "linear",
        padding_mode: str = "zeros",
        align_corners: bool = False,
    ) -> Value:
        """ONNX ``GridSample`` / ``F.grid_sample``: ``x [N, C, D..]`` sampled at
        the normalized coordinates of ``grid [N, O.., k]`` (a ``tg.grid_sample``;
        ``mode`` nearest, linear or cubic; ``padding_mode`` zeros, border or
        reflection)."""
        return self._emit(
            "grid_sample",
            lambda: tg.GridSampleOp(x.ssa, grid.ssa, mode, padding_mode, align_corners),
            x,
            grid,
        )

    def gather_nd(
        self, x: Value, indices: Value | npt.ArrayLike, batch_dims: int = 0
    ) -> Value:
        """ONNX ``GatherND``: each k-tuple of int32/int64 ``indices`` (its last
        dimension) picks a slice of ``x`` after the first ``batch_dims`` dimensions,
        which ``x`` and the indices share (a ``tg.gather_nd``). Out-of-range
        components are clamped, as in ``take``."""
        i = self._indices(indices, "gather_nd")
        return self._emit(
            "gather_nd", lambda: tg.GatherNdOp(x.ssa, i.ssa, batch_dims), x, i
        )

    def scatter_elements(
        self,
        x: Value,
        indices: Value | npt.ArrayLike,
        updates: Value,
        axis: int = 0,
        reduction: str = "none",
    ) -> Value:
        """ONNX ``ScatterElements`` / ``torch.scatter``: a copy of ``x`` with
        ``updates[p]`` written at ``p`` with ``p[axis]`` replaced by ``indices[p]``,
        or combined there by ``reduction`` (``add``, ``mul``, ``max``, ``min``); a
        ``tg.scatter_elements``. Repeated indices apply in row-major order (the last
        wins for ``none``); out-of-range ones are skipped
        (``qidao/dialects/tg/scatter.py``)."""
        i = self._indices(indices, "scatter_elements")
        return self._emit(
            "scatter_elements",
            lambda: tg.ScatterElementsOp(x.ssa, i.ssa, updates.ssa, axis, reduction),
            x,
            i,
            updates,
        )

    def scatter_nd(
        self,
        x: Value,
        indices: Value | npt.ArrayLike,
        updates: Value,
        reduction: str = "none",
    ) -> Value:
        """ONNX ``ScatterND``: a copy of ``x`` where the slice that each k-tuple of
        ``indices`` picks is ``updates[b]``, or combined with it by ``reduction``;
        a ``tg.scatter_nd``, with ``scatter_elements``' rules for repeated and
        out-of-range indices."""
        i = self._indices(indices, "scatter_nd")
        return self._emit(
            "scatter_nd",
            lambda: tg.ScatterNdOp(x.ssa, i.ssa, updates.ssa, reduction),
            x,
            i,
            updates,
        )

    def _indices(self, indices: Value | npt.ArrayLike, what: str) -> Value:
        if isinstance(indices, Value):
            return self._own(indices, what)
        array = np.asarray(indices)
        if array.dtype.kind not in "iu":
            raise GraphError(f"{what} indices must be integers, got {array.dtype}")
        return self.constant(array.astype(np.int64), dtype="int64")

    # ---- repeats, running totals and selections --------------------------------

    def tile(self, x: Value, repeats: Sequence[int]) -> Value:
        """``np.tile(x, repeats)`` (``repeats`` shorter than the rank repeat the last
        dimensions; longer ones add leading dimensions). Each repeated dimension
        ``d`` becomes a pair ``(1, d)`` (a free reshape), broadcast to ``(r, d)``
        (a free view), made row-major by one copy kernel (a nest over ``(r0, d0,
        r1, d1, ...)``: affine reads, no ``floordiv``/``mod``), whose row-major
        reshape to ``(r0 * d0, ...)`` is free again."""
        reps = [int(r) for r in repeats]
        if any(r < 0 for r in reps):
            raise GraphError(f"tile: repeats {reps} must not be negative")
        rank = max(len(reps), x.rank)
        reps = [1] * (rank - len(reps)) + reps
        dims = [1] * (rank - x.rank) + list(x.shape)
        paired: list[int] = []
        spread: list[int] = []
        for r, d in zip(reps, dims, strict=True):
            paired += [d] if r == 1 else [1, d]
            spread += [d] if r == 1 else [r, d]
        final = [r * d for r, d in zip(reps, dims, strict=True)]
        if paired == dims:  # nothing repeats
            return x if tuple(dims) == x.shape else self.reshape(x, dims)
        y = self.broadcast(self.reshape(x, paired), spread)
        return self.reshape(self.contiguous(y), final)

    def cumsum(
        self, x: Value, axis: int, exclusive: bool = False, reverse: bool = False
    ) -> Value:
        """Running sum along ``axis`` (``np.cumsum``; ``exclusive`` and ``reverse``
        as ONNX's ``CumSum``): a ``tg.cumsum``, f16 through float32."""
        return self._cumulative(tg.CumsumOp, "cumsum", x, axis, exclusive, reverse)

    def cumprod(
        self, x: Value, axis: int, exclusive: bool = False, reverse: bool = False
    ) -> Value:
        """Running product along ``axis`` (``np.cumprod``; flags as ``cumsum``)."""
        return self._cumulative(tg.CumprodOp, "cumprod", x, axis, exclusive, reverse)

    def _cumulative(
        self,
        cls: type[tg.CumulativeOp],
        what: str,
        x: Value,
        axis: int,
        exclusive: bool,
        reverse: bool,
    ) -> Value:
        if x.dtype == "float16":
            y = self._cumulative(
                cls, what, self.cast(x, "float32"), axis, exclusive, reverse
            )
            return self.cast(y, "float16")
        return self._emit(what, lambda: cls(x.ssa, axis, exclusive, reverse), x)

    def top_k(
        self, x: Value, k: int, axis: int = -1, largest: bool = True
    ) -> tuple[Value, Value]:
        """The ``k`` largest (or smallest) entries of every row along ``axis`` and
        their int64 positions, in order (ties by position, NaN above every number):
        a ``tg.top_k_indices`` and the ``tg.gather_elements`` of ``x`` by it."""
        keys = self.cast(x, "float32") if x.dtype == "float16" else x
        indices = self._emit(
            "top_k", lambda: tg.TopKIndicesOp(keys.ssa, axis, k, largest), keys
        )
        return self.gather_elements(x, indices, axis), indices

    def nonzero(self, x: Value) -> tuple[Value, Value]:
        """The positions of the non-zero entries of ``x`` (rank >= 1), row-major:
        an int64 ``[rank, numel(x)]`` tensor whose first ``count`` columns are the
        positions and the rest 0 (``tg.nonzero_indices``), and ``count``, an int64
        scalar (counted in float64: exact below 2^53 entries). A float entry is
        non-zero when it is not ``±0.0`` (NaN is)."""
        keys = self.cast(x, "float32") if x.dtype == "float16" else x
        positions = self._emit("nonzero", lambda: tg.NonzeroIndicesOp(keys.ssa), keys)
        mask = keys if keys.dtype == "bool" else self.not_equal(keys, 0)
        count = self.reduce_sum(self.cast(mask, "float64"))
        return positions, self.cast(count, "int64")

    def nms_keep(
        self,
        boxes: Value,
        scores: Value,
        max_per_class: int,
        iou_threshold: float,
        score_threshold: float | None = None,
        center: bool = False,
    ) -> tuple[Value, Value]:
        """Greedy non-maximum suppression per batch and class: the boxes of each
        class by descending score (ties by index: ``top_k``), an int64
        ``[B, C, N]``, and a bool ``[B, C, N]`` saying which of them are kept
        (``tg.nms_keep``). ``boxes`` f32 ``[B, N, 4]``, ``scores`` f32
        ``[B, C, N]``."""
        _, order = self.top_k(scores, scores.shape[-1], axis=-1, largest=True)
        keep = self._emit(
            "nms_keep",
            lambda: tg.NmsKeepOp(
                boxes.ssa,
                scores.ssa,
                order.ssa,
                max_per_class,
                iou_threshold,
                score_threshold,
                center,
            ),
            boxes,
            scores,
        )
        return order, keep

    # ---- reductions and nn ------------------------------------------------------

    def reduce_sum(
        self, x: Value, axes: int | Sequence[int] | None = None, keepdims: bool = False
    ) -> Value:
        """Sum over ``axes`` (an int, a list, or None for all axes)."""
        return self._reduce(tg.ReduceSumOp, "reduce_sum", x, axes, keepdims)

    def reduce_mean(
        self, x: Value, axes: int | Sequence[int] | None = None, keepdims: bool = False
    ) -> Value:
        return self._reduce(tg.ReduceMeanOp, "reduce_mean", x, axes, keepdims)

    def reduce_max(
        self, x: Value, axes: int | Sequence[int] | None = None, keepdims: bool = False
    ) -> Value:
        return self._reduce(tg.ReduceMaxOp, "reduce_max", x, axes, keepdims)

    def reduce_prod(
        self, x: Value, axes: int | Sequence[int] | None = None, keepdims: bool = False
    ) -> Value:
        """Product over ``axes``, on floats and integers (wrapping around)."""
        return self._reduce(tg.ReduceProdOp, "reduce_prod", x, axes, keepdims)

    def softmax(self, x: Value, axis: int = -1) -> Value:
        """``exp(x - max) / sum(exp(x - max))`` along ``axis``. On float16 it is
        that formula in float16 ops, as NumPy computes it (and ONNX's reference,
        whose default ``softmax_precision`` is the input's): every step rounded to
        float16, the max exact and the sum accumulated in float32."""
        if x.dtype == "float16":
            e = self.exp(x - self.reduce_max(x, axis, keepdims=True))
            return e / self.reduce_sum(e, axis, keepdims=True)
        return self._emit("softmax", lambda: tg.SoftmaxOp(x.ssa, axis), x)

    def max_pool2d(
        self,
        x: Value,
        kernel: IntOrPair,
        strides: IntOrPair | None = None,
        padding: IntOrPair = 0,
        dilation: IntOrPair = 1,
    ) -> Value:
        """Max over NCHW windows; ``strides`` defaults to the kernel size. f16 and
        integers up to 32 bits take the max in a float that holds them exactly."""
        if x.dtype in _WIDENED:
            y = self.max_pool2d(self._widened(x), kernel, strides, padding, dilation)
            return self._narrowed(y, x)
        k = _pair(kernel, "kernel")
        s = k if strides is None else _pair(strides, "strides")
        p, d = _padding(padding), _pair(dilation, "dilation")
        return self._emit("max_pool2d", lambda: tg.MaxPool2dOp(x.ssa, k, s, p, d), x)

    def avg_pool2d(
        self,
        x: Value,
        kernel: IntOrPair,
        strides: IntOrPair | None = None,
        padding: IntOrPair = 0,
        count_include_pad: bool = False,
        dilation: IntOrPair = 1,
    ) -> Value:
        """Mean over NCHW windows; ``strides`` defaults to the kernel size."""
        if x.dtype == "float16":  # in float32, rounded once (_widened)
            y = self.avg_pool2d(
                self._widened(x), kernel, strides, padding, count_include_pad, dilation
            )
            return self._narrowed(y, x)
        k = _pair(kernel, "kernel")
        s = k if strides is None else _pair(strides, "strides")
        p, d = _padding(padding), _pair(dilation, "dilation")
        return self._emit(
            "avg_pool2d",
            lambda: tg.AvgPool2dOp(x.ssa, k, s, p, count_include_pad, dilation=d),
            x,
        )

    def batch_norm(
        self,
        x: Value,
        scale: Value | npt.NDArray[Any],
        bias: Value | npt.NDArray[Any],
        mean: Value | npt.NDArray[Any],
        var: Value | npt.NDArray[Any],
        epsilon: float = 1e-5,
    ) -> Value:
        """Inference batch norm over dimension 1."""
        params = [self._tensor(p, x) for p in (scale, bias, mean, var)]
        s, b, m, v = (p.ssa for p in params)
        return self._emit(
            "batch_norm",
            lambda: tg.BatchNormOp(x.ssa, s, b, m, v, epsilon),
            x,
            *params,
        )

    # ---- custom ops (qidao.custom_op, frontend/custom.py) -------------------------

    def custom(self, name: str, *inputs: TensorLike) -> Value:
        """The registered single-result custom op ``name`` on ``inputs``
        (``custom_results`` for one with several): see ``custom_results``."""
        return self._custom(name, inputs, single=True)[0]

    def custom_results(self, name: str, *inputs: TensorLike) -> tuple[Value, ...]:
        """The registered custom op ``name`` on ``inputs``, its results in a tuple:
        one ``tg.custom`` whose ``body`` is the op's forward and whose ``grad`` is
        its vjp (empty without one), each built with this builder on fresh block
        arguments. The output types are what the forward builds (row-major: a
        strided result is copied); an ``infer`` rule is checked against them."""
        return self._custom(name, inputs, single=False)

    def _custom(
        self, name: str, inputs: Sequence[TensorLike], single: bool
    ) -> tuple[Value, ...]:
        definition = lookup(name)
        if definition is None:
            known = ", ".join(sorted(registered_names())) or "none"
            raise GraphError(
                f"custom op '{name}' is not registered (qidao.custom_op); the "
                f"registered ones are: {known}"
            )
        like = next((v for v in inputs if isinstance(v, Value)), None)
        xs = [self._tensor(v, like) for v in inputs]
        in_types = [x.type for x in xs]
        body, outs = self._custom_region(
            definition, definition.forward, in_types, ["x"] * len(xs)
        )
        if single and len(outs) != 1:
            raise GraphError(
                f"custom op '{name}' has {len(outs)} results: build it with "
                "custom_results"
            )
        out_types = [o.type for o in outs]
        self._check_custom_infer(definition, xs, outs)
        grad = None
        if definition.vjp is not None:
            grad, _ = self._custom_region(
                definition,
                definition.vjp,
                [*in_types, *out_types, *(gradient_type(t) for t in out_types)],
                ["x"] * len(xs) + ["y"] * len(outs) + ["dy"] * len(outs),
                gradients_of=len(xs),
            )
        op = tg.CustomOp(name, [x.ssa for x in xs], out_types, body, grad)
        self._emit(f"custom op '{name}'", lambda: op, *xs)
        return tuple(Value(self, r) for r in op.results)

    def _custom_region(
        self,
        definition: CustomOpDef,
        fn: Callable[..., Any],
        arg_types: Sequence[Attribute],
        arg_names: Sequence[str],
        gradients_of: int | None = None,
    ) -> tuple[Region, list[Value]]:
        """A region of a ``tg.custom``: ``fn`` (the forward, or with
        ``gradients_of`` the vjp) built in a graph of its own on block arguments
        of ``arg_types``, ending in ``tg.custom_yield`` of what it returns. The
        vjp returns one gradient for each of the first ``gradients_of`` arguments
        (the inputs), of its shape and dtype; None is a zero gradient."""
        role = "forward" if gradients_of is None else "vjp"
        where = f"custom op '{definition.name}': the {role}"
        sub = Graph(f"{definition.name} {role}")
        sub._source = self._source
        sub._block = Block(arg_types=list(arg_types))
        args = []
        for arg, hint in zip(sub._block.args, arg_names, strict=True):
            arg.name_hint = hint
            args.append(Value(sub, arg))
        try:
            answer = fn(sub, *args)
        except GraphError as e:
            raise GraphError(f"{where}: {e}") from None
        items = list(answer) if isinstance(answer, list | tuple) else [answer]
        if gradients_of is None and not items:
            raise GraphError(f"{where} returns no value")
        if gradients_of is not None and len(items) != gradients_of:
            raise GraphError(
                f"{where} returns {len(items)} gradient(s), but the op has "
                f"{gradients_of} input(s): one gradient (or None) per input"
            )
        values: list[Value] = []
        for k, item in enumerate(items):
            if item is None and gradients_of is not None:
                zero = np.zeros(args[k].shape, args[k].dtype)
                item = sub.constant(zero, dtype=args[k].dtype)
            if not isinstance(item, Value):
                raise GraphError(
                    f"{where} must return builder Values, result #{k} is "
                    f"{type(item).__name__}"
                )
            sub._own(item, f"{where} result #{k}")
            if gradients_of is not None and (item.shape, item.dtype) != (
                args[k].shape,
                args[k].dtype,
            ):
                raise GraphError(
                    f"{where}'s gradient #{k} is {fmt_shape(item.shape)} "
                    f"{item.dtype}, but input #{k} is {fmt_shape(args[k].shape)} "
                    f"{args[k].dtype}"
                )
            if not is_row_major(item.type):
                item = sub.contiguous(item)
            values.append(item)
        sub._block.add_op(tg.CustomYieldOp(*(v.ssa for v in values)))
        return Region(sub._block), values

    def _check_custom_infer(
        self, definition: CustomOpDef, xs: Sequence[Value], outs: Sequence[Value]
    ) -> None:
        """The op's ``infer`` rule, if it has one, agrees with its forward."""
        try:
            inferred = definition.inferred([(x.shape, x.dtype) for x in xs])
        except TypeError as e:
            raise GraphError(str(e)) from None
        built = [(o.shape, o.dtype) for o in outs]
        if inferred is not None and inferred != built:
            raise GraphError(
                f"custom op '{definition.name}': infer gives {inferred} but the "
                f"forward builds {built}"
            )

    # ---- internals --------------------------------------------------------------

    def _check_open(self) -> None:
        if self._module is not None:
            raise GraphError(
                f"graph '{self.name}' is finished (module() was called); build a new "
                "Graph to add more"
            )

    def _own(self, value: Value, what: str) -> Value:
        if not isinstance(value, Value):
            raise GraphError(
                f"{what} expects a graph Value, got {type(value).__name__}"
            )
        if value.graph is not self:
            raise GraphError(
                f"{what}: the value {value} belongs to graph '{value.graph.name}', not "
                f"to '{self.name}'"
            )
        return value

    def _tensor(self, value: TensorLike, like: Value | None) -> Value:
        """``value`` as a graph value: arrays and scalars become constants; a scalar
        takes the dtype of ``like`` (float32 without one)."""
        if isinstance(value, Value):
            return self._own(value, "operand")
        if isinstance(value, bool | int | float):
            dtype = "float32" if like is None else like.dtype
            return self.constant(np.array(value, dtype=dtype), dtype=dtype)
        return self.constant(np.asarray(value))

    def _operands(self, lhs: TensorLike, rhs: TensorLike) -> tuple[Value, Value]:
        like = (
            lhs if isinstance(lhs, Value) else rhs if isinstance(rhs, Value) else None
        )
        return self._tensor(lhs, like), self._tensor(rhs, like)

    def _binary(
        self,
        op: type[tg.BinaryElementwiseOp],
        what: str,
        lhs: TensorLike,
        rhs: TensorLike,
    ) -> Value:
        a, b = self._operands(lhs, rhs)
        return self._emit(what, lambda: op(a.ssa, b.ssa), a, b)

    def _reduce(
        self,
        op: type[tg.ReduceOp],
        what: str,
        x: Value,
        axes: int | Sequence[int] | None,
        keepdims: bool,
    ) -> Value:
        if x.dtype == "float16":  # in float32, rounded once (_widened)
            y = self._reduce(op, what, self._widened(x), axes, keepdims)
            return self._narrowed(y, x)
        if axes is None:
            axes = tuple(range(x.rank))
        elif isinstance(axes, int):
            axes = (axes,)
        ax = tuple(axes)
        return self._emit(what, lambda: op(x.ssa, ax, keepdims), x)

    def _widened(self, x: Value) -> Value:
        """``x`` cast to the float its op computes in (``_WIDENED``): the ops that
        accumulate (matmul, conv2d, reductions, softmax, pools) take f32 and f64
        only, so an f16 operand computes in float32 and its result is rounded to
        f16 once, as NumPy's float16 matmul and PyTorch's CPU kernels do."""
        return self.cast(x, _WIDENED[x.dtype])

    def _narrowed(self, y: Value, like: Value) -> Value:
        return self.cast(y, like.dtype)

    def _emit(
        self, what: str, build: Callable[[], Operation], *operands: Value
    ) -> Value:
        """Build one op, verify it and append it; errors become ``GraphError``."""
        self._check_open()
        for value in operands:
            self._own(value, what)
        try:
            op = build()
            op.verify()
        except VerifyException as e:
            shapes = ", ".join(fmt_shape(v.shape) for v in operands)
            raise GraphError(f"{what}({shapes}): {e}") from None
        for result in op.results:
            _check_size(what, result.type)
        return self._append(op)

    def _append(self, op: Operation) -> Value:
        self._check_open()
        if self._source is not None and has_runtime_domain(op):
            op.attributes[SOURCE_ATTR] = StringAttr(self._source)
        self._block.add_op(op)
        return Value(self, op.results[0])
