"""The ATen converter table of the PyTorch frontend: one function per operator.

A converter takes the converter state and the node's arguments, with every graph
node already replaced by what it became (a builder ``Value``, a NumPy constant, a
tuple for multi-result ops) and Python values (ints, lists, strings) left as they
are; it builds tg ops through the ``Graph`` builder and returns the node's result::

    @converter(aten.relu.default)
    def _relu(cv: FxValues, x: Arg) -> Value:
        return cv.g.relu(cv.tensor(x))

The names of the arguments are ATen's schema names, so keyword arguments of the FX
node (``approximate="tanh"``) arrive by name. A ``check`` given to ``@converter``
sees the node's raw arguments and returns why this use of the operator is not
supported (``"approximate must be 'none' or 'tanh'"``), or None; a node that fails its
check counts as unsupported, exactly like an operator without a converter. ``cat``,
slicing, ``select``, ``narrow`` and ``split``/``chunk``/``unbind`` become
``tg.concat`` and ``tg.slice`` views; ``embedding``, ``index_select``, ``gather`` and
``x[:, i]`` with an integer tensor ``i`` become ``tg.take`` / ``tg.gather_elements``
(their index arguments, named by ``index_args``, are the only inputs that need not be
float32); ``max`` with indices stays unsupported (it falls back to PyTorch, or strict
mode lists it).

Only float32 is computed, unless a converter declares another rule with
``dtypes=`` (``DTYPE_RULES``): ``add`` also adds integers (BatchNorm's
``num_batches_tracked``), comparisons make bool tensors, ``where`` takes one.
``grad_ops.py`` holds the converters of the ops backward graphs bring.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch
from xdsl.dialects.builtin import UnitAttr

from qidao.dialects import tg
from qidao.dialects.attributes import NONNEGATIVE_ATTR
from qidao.frontend.builder import Graph, Value
from qidao.frontend.errors import GraphError
from qidao.frontend.spatial import SPATIAL_RANKS, Window, conv_nd, pool_nd

aten = torch.ops.aten

Arg = Any
"""A converted argument: a ``Value``, a NumPy constant, a Python scalar or list."""

Check = Callable[..., str | None]
Fn = TypeVar("Fn", bound=Callable[..., Any])


class FxValues:
    """What a converter gets: the graph being built (``g``) and the ways to turn an
    FX argument (a value, a NumPy constant, a Python number) into an operand.
    ``qidao.frontend.torch.importer.FxConverter`` walks the FX graph on top of it."""

    def __init__(self, name: str = "main") -> None:
        self.g: Graph = Graph(name)
        self._constants: dict[int, Value] = {}

    def tensor(self, x: Any) -> Value:
        """``x`` as a graph value: a NumPy constant becomes a cached ``tg.constant``."""
        if isinstance(x, Value):
            return x
        if isinstance(x, np.ndarray):
            key = id(x)
            if key not in self._constants:
                self._constants[key] = self.g.constant(x, dtype=str(x.dtype))
            return self._constants[key]
        if isinstance(x, bool | int | float):
            return self.g.constant(np.array(x, np.float32))
        raise GraphError(f"expected a tensor, got {type(x).__name__}")

    def operand(self, x: Any) -> Value | float:
        """A tensor operand, or a Python number the builder makes a scalar of."""
        if isinstance(x, bool | int | float):
            return float(x)
        return self.tensor(x)

    def scaled(self, x: Any, factor: float) -> Value | float:
        """``factor * x`` for a tensor or a number."""
        if isinstance(x, bool | int | float):
            return float(factor) * float(x)
        return self.tensor(x) * float(factor)


@dataclass(frozen=True)
class Converter:
    fn: Callable[..., Any]
    check: Check | None = None
    index_args: tuple[int, ...] = ()
    """Positions of the node's arguments that are integer index tensors (int32 or
    int64, or lists of them): the only inputs that need not be float32."""
    dtypes: str = "float32"
    """Which dtypes the other tensors (inputs and results) may have, one of
    ``DTYPE_RULES``; ``qidao.frontend.torch.importer.node_support`` checks it."""
    index_results: tuple[int, ...] = ()
    """Positions of the results of a multi-result op that are int64 index tensors
    (``topk``'s, ``sort``'s indices): the only results read that need not be
    float32."""


DTYPE_RULES: dict[str, str] = {
    "float32": "every tensor is float32",
    "same": "every tensor has one dtype: float32, int32 or int64",
    "compare": "the inputs have one dtype (float32, int32 or int64); the result: bool",
    "select": "the condition is bool, the other tensors float32",
    "bool": "every tensor is bool",
}
"""The dtype rules a ``Converter`` may declare (``dtypes=``): name -> what it
allows. Only float32 is computed unless a converter says otherwise."""


CONVERTERS: dict[Any, Converter] = {}
"""ATen overload (or ``operator.getitem``) -> its converter; filled by ``@converter``."""


def converter(
    *targets: Any,
    check: Check | None = None,
    index_args: tuple[int, ...] = (),
    dtypes: str = "float32",
    index_results: tuple[int, ...] = (),
) -> Callable[[Fn], Fn]:
    """Register a function as the converter of ATen overloads ``targets``;
    ``index_args``, ``dtypes`` and ``index_results``: see ``Converter``."""
    assert dtypes in DTYPE_RULES, f"unknown dtype rule {dtypes!r}"

    def register(fn: Fn) -> Fn:
        for target in targets:
            assert target not in CONVERTERS, f"two converters for {target}"
            CONVERTERS[target] = Converter(fn, check, index_args, dtypes, index_results)
        return fn

    return register


def op_name(target: Any) -> str:
    """How messages name an operator: ``aten.relu.default``, ``operator.getitem``."""
    if isinstance(target, torch._ops.OpOverload):
        return f"aten.{target.__name__}" if target.namespace == "aten" else str(target)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", None) or str(target)
    return f"{module.replace('_operator', 'operator')}.{name}".lstrip(".")


# ---- helpers ----------------------------------------------------------------


def int_list(value: int | Sequence[int], n: int = 2) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * n
    values = tuple(int(v) for v in value)
    return values * n if len(values) == 1 else values


def axis_list(dims: int | Sequence[int] | None, rank: int) -> tuple[int, ...]:
    """Dimensions as non-negative axes; None or [] means all of them."""
    if dims is None:
        return tuple(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    if len(dims) == 0:
        return tuple(range(rank))
    return tuple(sorted(d % rank if rank else 0 for d in dims))


def _shape(size: Sequence[int], numel: int) -> tuple[int, ...]:
    """A target shape with at most one ``-1`` resolved against ``numel``."""
    dims = [int(d) for d in size]
    if dims.count(-1) == 1:
        known = math.prod(d for d in dims if d != -1)
        dims[dims.index(-1)] = numel // known if known else 0
    return tuple(dims)


def _reshape(cv: FxValues, x: Arg, size: Sequence[int]) -> Value:
    v = cv.tensor(x)
    shape = _shape(size, math.prod(v.shape))
    return v if shape == v.shape else cv.g.reshape(v, shape)


def _is_float(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# ---- elementwise ------------------------------------------------------------


@converter(aten.add.Tensor, aten.add.Scalar, dtypes="same")
def _add(cv: FxValues, x: Arg, y: Arg, alpha: float = 1) -> Value:
    return cv.g.add(cv.operand(x), cv.operand(y) if alpha == 1 else cv.scaled(y, alpha))


@converter(aten.sub.Tensor, aten.sub.Scalar)
def _sub(cv: FxValues, x: Arg, y: Arg, alpha: float = 1) -> Value:
    return cv.g.sub(cv.operand(x), cv.operand(y) if alpha == 1 else cv.scaled(y, alpha))


@converter(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(cv: FxValues, x: Arg, y: Arg, alpha: float = 1) -> Value:
    return cv.g.sub(cv.operand(y), cv.operand(x) if alpha == 1 else cv.scaled(x, alpha))


@converter(aten.mul.Tensor, aten.mul.Scalar)
def _mul(cv: FxValues, x: Arg, y: Arg) -> Value:
    return cv.g.mul(cv.operand(x), cv.operand(y))


def _check_div(*args: Any, **kwargs: Any) -> str | None:
    mode = kwargs.get("rounding_mode", args[2] if len(args) > 2 else None)
    return None if mode is None else f"rounding_mode={mode!r} is not supported"


@converter(aten.div.Tensor, aten.div.Scalar)
@converter(aten.div.Tensor_mode, aten.div.Scalar_mode, check=_check_div)
def _div(cv: FxValues, x: Arg, y: Arg, rounding_mode: str | None = None) -> Value:
    return cv.g.div(cv.operand(x), cv.operand(y))


_UNARY: dict[Any, Callable[[FxValues, Value], Value]] = {
    aten.neg.default: lambda cv, x: cv.g.neg(x),
    aten.exp.default: lambda cv, x: cv.g.exp(x),
    aten.log.default: lambda cv, x: cv.g.log(x),
    aten.sqrt.default: lambda cv, x: cv.g.sqrt(x),
    aten.rsqrt.default: lambda cv, x: 1.0 / cv.g.sqrt(x),
    aten.reciprocal.default: lambda cv, x: 1.0 / x,
    aten.tanh.default: lambda cv, x: cv.g.tanh(x),
    aten.erf.default: lambda cv, x: cv.g.erf(x),
    aten.sin.default: lambda cv, x: cv.g.sin(x),
    aten.cos.default: lambda cv, x: cv.g.cos(x),
    aten.sigmoid.default: lambda cv, x: cv.g.sigmoid(x),
    aten.relu.default: lambda cv, x: cv.g.relu(x),
    aten.silu.default: lambda cv, x: x * cv.g.sigmoid(x),
    aten.abs.default: lambda cv, x: cv.g.maximum(x, cv.g.neg(x)),
}


def _unary(target: Any) -> None:
    build = _UNARY[target]

    def convert(cv: FxValues, x: Arg) -> Value:
        return build(cv, cv.tensor(x))

    converter(target)(convert)


for _target in _UNARY:
    _unary(_target)


def _check_gelu(*args: Any, **kwargs: Any) -> str | None:
    approximate = kwargs.get("approximate", args[1] if len(args) > 1 else "none")
    if approximate in ("none", "tanh"):
        return None
    return f"approximate must be 'none' or 'tanh', got {approximate!r}"


@converter(aten.gelu.default, check=_check_gelu)
def _gelu(cv: FxValues, x: Arg, approximate: str = "none") -> Value:
    """As the module asks for it: exact 0.5 x (1 + erf(x / sqrt 2)), or the tanh form
    0.5 x (1 + tanh(c (x + k x³)))."""
    v = cv.tensor(x)
    if approximate == "none":
        return 0.5 * v * (1.0 + cv.g.erf(v * (1.0 / math.sqrt(2.0))))
    inner = math.sqrt(2.0 / math.pi) * (v + 0.044715 * (v * v * v))
    return 0.5 * v * (1.0 + cv.g.tanh(inner))


@converter(aten.hardtanh.default)
def _hardtanh(
    cv: FxValues, x: Arg, min_val: float = -1.0, max_val: float = 1.0
) -> Value:
    return cv.g.maximum(cv.g.minimum(cv.tensor(x), max_val), min_val)


@converter(aten.relu6.default)
def _relu6(cv: FxValues, x: Arg) -> Value:
    return cv.g.maximum(cv.g.minimum(cv.tensor(x), 6.0), 0.0)


@converter(aten.leaky_relu.default)
def _leaky_relu(cv: FxValues, x: Arg, negative_slope: float = 0.01) -> Value:
    # PyTorch's ``x > 0 ? x : x * slope``: a product with an infinite slope is
    # never added to x's own branch (``relu(x) - slope * relu(-x)`` gave NaN for x > 0)
    v = cv.tensor(x)
    return cv.g.where(cv.g.greater(v, 0.0), v, v * negative_slope)


def _check_clamp(*args: Any, **kwargs: Any) -> str | None:
    bounds = [*args[1:3], kwargs.get("min"), kwargs.get("max")]
    if all(b is None or _is_float(b) for b in bounds):
        return None
    return "tensor bounds are not supported (scalar min/max only)"


@converter(aten.clamp.default, check=_check_clamp)
def _clamp(
    cv: FxValues, x: Arg, min: float | None = None, max: float | None = None
) -> Value:
    v = cv.tensor(x)
    if max is not None:
        v = cv.g.minimum(v, float(max))
    if min is not None:
        v = cv.g.maximum(v, float(min))
    return v


_POWERS = (-1.0, -0.5, 0.5, 1.0, 2.0, 3.0, 4.0)


def _check_pow(*args: Any, **kwargs: Any) -> str | None:
    exponent = kwargs.get("exponent", args[1] if len(args) > 1 else None)
    if isinstance(exponent, int | float) and float(exponent) in _POWERS:
        return None
    return f"exponent {exponent!r} is not supported (only {list(_POWERS)})"


@converter(aten.pow.Tensor_Scalar, check=_check_pow)
def _pow(cv: FxValues, x: Arg, exponent: float) -> Value:
    v = cv.tensor(x)
    e = float(exponent)
    if e == -1.0:
        return 1.0 / v
    if e == -0.5:
        return 1.0 / cv.g.sqrt(v)
    if e == 0.5:
        return cv.g.sqrt(v)
    result = v
    for _ in range(int(e) - 1):
        result = result * v
    return result


# ---- identities -------------------------------------------------------------


def _check_dropout(*args: Any, **kwargs: Any) -> str | None:
    train = kwargs.get("train", args[2] if len(args) > 2 else False)
    return "dropout in training mode (call model.eval())" if train else None


@converter(aten.dropout.default, check=_check_dropout)
def _dropout(cv: FxValues, x: Arg, p: float = 0.5, train: bool = False) -> Arg:
    return x


@converter(
    aten.clone.default,
    aten.contiguous.default,
    aten.alias.default,
    aten.detach.default,
    aten.lift_fresh_copy.default,
)
def _identity(cv: FxValues, x: Arg, *args: Any, **kwargs: Any) -> Arg:
    """Value semantics: a copy is the value itself (outputs are made row-major)."""
    return x


def _check_float32(*args: Any, **kwargs: Any) -> str | None:
    dtype = kwargs.get("dtype")
    if dtype in (None, torch.float32, torch.bfloat16, torch.float16):
        return None  # to a narrow float: the importer's cast (narrow.py)
    return f"conversion to {dtype} (only float32 is computed)"


@converter(aten._to_copy.default, aten.to.dtype, check=_check_float32)
def _to(cv: FxValues, x: Arg, *args: Any, **kwargs: Any) -> Arg:
    return x


@converter(operator.getitem)
def _getitem(cv: FxValues, x: Arg, index: int) -> Arg:
    if not isinstance(x, tuple | list):
        raise GraphError("getitem of a non-tuple value")
    item = x[index]
    if item is None:
        raise GraphError(f"result #{index} of a multi-result op is not supported")
    return item


# ---- contractions -----------------------------------------------------------


def _matmul_values(cv: FxValues, a: Value, b: Value) -> Value:
    """``torch.matmul``: a vector operand becomes a 1xK or Kx1 matrix first."""
    squeeze: list[int] = []
    if a.rank == 1:
        a = cv.g.reshape(a, (1, a.shape[0]))
        squeeze.append(-2)
    if b.rank == 1:
        b = cv.g.reshape(b, (b.shape[0], 1))
        squeeze.append(-1)
    y = cv.g.matmul(a, b)
    if squeeze:
        shape = [d for k, d in enumerate(y.shape) if k - y.rank not in squeeze]
        y = cv.g.reshape(y, shape)
    return y


@converter(aten.matmul.default, aten.mm.default, aten.bmm.default)
def _matmul(cv: FxValues, x: Arg, y: Arg) -> Value:
    return _matmul_values(cv, cv.tensor(x), cv.tensor(y))


@converter(aten.linear.default)
def _linear(cv: FxValues, x: Arg, weight: Arg, bias: Arg = None) -> Value:
    y = _matmul_values(cv, cv.tensor(x), cv.g.transpose(cv.tensor(weight)))
    return y if bias is None else y + cv.tensor(bias)


@converter(aten.addmm.default)
def _addmm(
    cv: FxValues, bias: Arg, m1: Arg, m2: Arg, beta: float = 1, alpha: float = 1
) -> Value:
    y = cv.g.matmul(cv.tensor(m1), cv.tensor(m2))
    if alpha != 1:
        y = y * float(alpha)
    return y + (cv.tensor(bias) if beta == 1 else cv.scaled(bias, beta))


def _check_sdpa(*args: Any, **kwargs: Any) -> str | None:
    names = ("attn_mask", "dropout_p", "is_causal")
    values = dict(zip(names, args[3:6], strict=False)) | {
        k: v for k, v in kwargs.items() if k in names
    }
    if values.get("attn_mask") is not None:
        return "attn_mask is not supported"
    if values.get("dropout_p", 0.0):
        return "dropout_p > 0 is not supported"
    if values.get("is_causal", False):
        return "is_causal=True is not supported"
    if kwargs.get("enable_gqa", False):
        return "enable_gqa=True is not supported"
    return None


@converter(aten.scaled_dot_product_attention.default, check=_check_sdpa)
def _sdpa(
    cv: FxValues,
    query: Arg,
    key: Arg,
    value: Arg,
    attn_mask: Arg = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Value:
    """softmax(q kᵀ · scale) v, scale defaulting to 1/sqrt(head size)."""
    q, k, v = cv.tensor(query), cv.tensor(key), cv.tensor(value)
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    perm = (*range(k.rank - 2), k.rank - 1, k.rank - 2)
    scores = cv.g.matmul(q, cv.g.transpose(k, perm)) * s
    return cv.g.matmul(cv.g.softmax(scores, -1), v)


def _kernel_rank(weight: Any) -> int | None:
    """The number of spatial axes of a convolution's weight ``[F, C / groups,
    *kernel]`` (an FX node, whose shape the export recorded), or None when it
    carries no shape."""
    meta = getattr(weight, "meta", {}).get("val")
    return None if meta is None else int(meta.dim()) - 2


def _check_conv(*args: Any, **kwargs: Any) -> str | None:
    rank = _kernel_rank(args[1]) if len(args) > 1 else None
    if rank is not None and rank not in SPATIAL_RANKS:
        return f"only 1-D, 2-D and 3-D convolutions are supported ({rank}-D)"
    stride = args[3] if len(args) > 3 else kwargs.get("stride", 1)
    padding = args[4] if len(args) > 4 else kwargs.get("padding", 0)
    if padding == "same" and set(int_list(stride, 1)) != {1}:
        return "padding='same' with a stride is not supported"
    return None


@converter(
    aten.conv1d.default,
    aten.conv1d.padding,
    aten.conv2d.default,
    aten.conv2d.padding,
    aten.conv3d.default,
    aten.conv3d.padding,
    check=_check_conv,
)
def _conv(
    cv: FxValues,
    x: Arg,
    weight: Arg,
    bias: Arg = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] | str = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Value:
    """Convolution with 1, 2 or 3 spatial axes (the weight's rank says which), one
    ``tg.conv2d`` (``qidao/frontend/spatial.py``); an unbatched input ``[C,
    *spatial]`` is a batch of one."""
    v, w = cv.tensor(x), cv.tensor(weight)
    rank = w.rank - 2
    unbatched = v.rank == w.rank - 1
    if unbatched:
        v = cv.g.reshape(v, [1, *v.shape])
    d = int_list(dilation, rank)
    if padding == "valid":
        pads: tuple[int, ...] = (0,) * 2 * rank
    elif padding == "same":
        total = [d[i] * (w.shape[2 + i] - 1) for i in range(rank)]
        pads = (*[t // 2 for t in total], *[t - t // 2 for t in total])
    else:
        assert not isinstance(padding, str)
        pads = int_list(padding, rank) * 2
    y = conv_nd(
        cv.g,
        v,
        w,
        None if bias is None else cv.tensor(bias),
        strides=int_list(stride, rank),
        padding=pads,
        dilation=d,
        groups=groups,
    )
    return cv.g.reshape(y, list(y.shape[1:])) if unbatched else y


def _check_convolution(*args: Any, **kwargs: Any) -> str | None:
    if len(args) > 6 and args[6]:
        return "transposed convolution is not supported"
    return _check_conv(*args, **kwargs)


@converter(aten.convolution.default, check=_check_convolution)
def _convolution(
    cv: FxValues,
    x: Arg,
    weight: Arg,
    bias: Arg,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Value:
    return _conv(cv, x, weight, bias, stride, padding, dilation, groups)


# ---- normalization ----------------------------------------------------------


def _check_batch_norm(*args: Any, **kwargs: Any) -> str | None:
    training = kwargs.get("training", args[5] if len(args) > 5 else False)
    if training:
        return "batch norm in training mode (call model.eval())"
    if any(a is None for a in args[3:5]):
        return "batch norm without running statistics"
    return None


def _batch_norm_values(
    cv: FxValues, x: Arg, weight: Arg, bias: Arg, mean: Arg, var: Arg, eps: float
) -> Value:
    v = cv.tensor(x)
    channels = v.shape[1]
    ones, zeros = np.ones(channels, np.float32), np.zeros(channels, np.float32)
    scale = cv.tensor(ones if weight is None else weight)
    shift = cv.tensor(zeros if bias is None else bias)
    return cv.g.batch_norm(v, scale, shift, cv.tensor(mean), cv.tensor(var), eps)


@converter(aten.batch_norm.default, check=_check_batch_norm)
def _batch_norm(
    cv: FxValues,
    x: Arg,
    weight: Arg,
    bias: Arg,
    running_mean: Arg,
    running_var: Arg,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool = True,
) -> Value:
    return _batch_norm_values(cv, x, weight, bias, running_mean, running_var, eps)


@converter(aten._native_batch_norm_legit_no_training.default)
def _native_batch_norm(
    cv: FxValues,
    x: Arg,
    weight: Arg,
    bias: Arg,
    running_mean: Arg,
    running_var: Arg,
    momentum: float,
    eps: float,
) -> tuple[Value, None, None]:
    y = _batch_norm_values(cv, x, weight, bias, running_mean, running_var, eps)
    return (y, None, None)


def _layer_norm_values(
    cv: FxValues,
    x: Arg,
    normalized_shape: Sequence[int],
    weight: Arg,
    bias: Arg,
    eps: float,
) -> tuple[Value, Value, Value]:
    """(y, mean, 1/std) over the last ``len(normalized_shape)`` dimensions."""
    v = cv.tensor(x)
    axes = tuple(range(v.rank - len(normalized_shape), v.rank))
    mean = cv.g.reduce_mean(v, axes, keepdims=True)
    centered = v - mean
    var = cv.g.reduce_mean(centered * centered, axes, keepdims=True)
    rstd = 1.0 / cv.g.sqrt(var + float(eps))
    y = centered * rstd
    if weight is not None:
        y = y * cv.tensor(weight)
    if bias is not None:
        y = y + cv.tensor(bias)
    return y, mean, rstd


@converter(aten.layer_norm.default)
def _layer_norm(
    cv: FxValues,
    x: Arg,
    normalized_shape: Sequence[int],
    weight: Arg = None,
    bias: Arg = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Value:
    return _layer_norm_values(cv, x, normalized_shape, weight, bias, eps)[0]


@converter(aten.native_layer_norm.default)
def _native_layer_norm(
    cv: FxValues,
    x: Arg,
    normalized_shape: Sequence[int],
    weight: Arg,
    bias: Arg,
    eps: float,
) -> tuple[Value, Value, Value]:
    return _layer_norm_values(cv, x, normalized_shape, weight, bias, eps)


def _check_softmax_dtype(*args: Any, **kwargs: Any) -> str | None:
    dtype = kwargs.get("dtype", args[2] if len(args) > 2 else None)
    # _softmax's third argument is half_to_float: a bfloat16/float16 input's
    # softmax given in float32, which is how the importer computes it anyway
    if dtype in (None, False, True, torch.float32):
        return None
    return f"softmax in {dtype} is not supported"


@converter(aten.softmax.int, aten._softmax.default, check=_check_softmax_dtype)
def _softmax(cv: FxValues, x: Arg, dim: int, *args: Any) -> Value:
    return cv.g.softmax(cv.tensor(x), dim)


@converter(aten.log_softmax.int, aten._log_softmax.default, check=_check_softmax_dtype)
def _log_softmax(cv: FxValues, x: Arg, dim: int, *args: Any) -> Value:
    """x - max - log(sum(exp(x - max))) over ``dim``."""
    v = cv.tensor(x)
    shifted = v - cv.g.reduce_max(v, dim, keepdims=True)
    return shifted - cv.g.log(cv.g.reduce_sum(cv.g.exp(shifted), dim, keepdims=True))


# ---- pooling ----------------------------------------------------------------


def _check_pool(*args: Any, **kwargs: Any) -> str | None:
    return "ceil_mode=True is not supported" if kwargs.get("ceil_mode") else None


def _check_max_pool(*args: Any, **kwargs: Any) -> str | None:
    if len(args) > 5 and args[5]:
        return "ceil_mode=True is not supported"
    return _check_pool(*args, **kwargs)


@converter(aten.max_pool2d.default, check=_check_max_pool)
def _max_pool2d(
    cv: FxValues,
    x: Arg,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Value:
    k = int_list(kernel_size)
    s = int_list(stride) if stride else k
    return cv.g.max_pool2d(cv.tensor(x), k, s, int_list(padding), int_list(dilation))


@converter(aten.max_pool2d_with_indices.default, check=_check_max_pool)
def _max_pool2d_with_indices(cv: FxValues, x: Arg, *args: Any) -> tuple[Value, None]:
    return (_max_pool2d(cv, x, *args), None)


def _check_avg_pool(*args: Any, **kwargs: Any) -> str | None:
    if (len(args) > 4 and args[4]) or kwargs.get("ceil_mode"):
        return "ceil_mode=True is not supported"
    divisor = args[6] if len(args) > 6 else kwargs.get("divisor_override")
    return None if divisor is None else "divisor_override is not supported"


@converter(aten.avg_pool2d.default, check=_check_avg_pool)
def _avg_pool2d(
    cv: FxValues,
    x: Arg,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: int | Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Value:
    k = int_list(kernel_size)
    s = int_list(stride) if stride else k
    return cv.g.avg_pool2d(cv.tensor(x), k, s, int_list(padding), count_include_pad)


@converter(aten.adaptive_avg_pool2d.default, aten._adaptive_avg_pool2d.default)
def _adaptive_avg_pool2d(cv: FxValues, x: Arg, output_size: Sequence[int]) -> Value:
    """A mean over H and W for 1x1; an even split of H and W into windows otherwise."""
    v = cv.tensor(x)
    out = int_list(output_size)
    h, w = v.shape[-2:]
    if out == (1, 1):
        return cv.g.reduce_mean(v, (v.rank - 2, v.rank - 1), keepdims=True)
    if h % out[0] or w % out[1]:
        raise GraphError(
            f"adaptive_avg_pool2d to {list(out)} needs the input size {[h, w]} to be "
            "a multiple of the output size"
        )
    k = (h // out[0], w // out[1])
    return cv.g.avg_pool2d(v, k, k)


def _pool_windows(
    rank: int,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int],
    padding: int | Sequence[int],
    dilation: int | Sequence[int] = 1,
) -> list[Window]:
    """PyTorch's pool arguments as one window per spatial axis (an empty stride is
    the kernel size; the padding is the same at both ends)."""
    k = int_list(kernel_size, rank)
    s = int_list(stride, rank) if stride else k
    p, d = int_list(padding, rank), int_list(dilation, rank)
    return [(k[i], s[i], d[i], p[i], p[i]) for i in range(rank)]


def _pool(cv: FxValues, x: Arg, kind: str, windows: list[Window], pad: bool) -> Value:
    """``pool_nd`` of ``[N, C, *spatial]``, or of an unbatched ``[C, *spatial]`` as a
    batch of one."""
    v = cv.tensor(x)
    unbatched = v.rank == len(windows) + 1
    if unbatched:
        v = cv.g.reshape(v, [1, *v.shape])
    y = pool_nd(cv.g, v, kind, windows, pad)
    return cv.g.reshape(y, list(y.shape[1:])) if unbatched else y


@converter(aten.max_pool1d.default, check=_check_max_pool)
def _max_pool1d(
    cv: FxValues,
    x: Arg,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Value:
    windows = _pool_windows(1, kernel_size, stride, padding, dilation)
    return _pool(cv, x, "max", windows, False)


@converter(aten.max_pool3d.default, check=_check_max_pool)
def _max_pool3d(
    cv: FxValues,
    x: Arg,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Value:
    windows = _pool_windows(3, kernel_size, stride, padding, dilation)
    return _pool(cv, x, "max", windows, False)


@converter(aten.max_pool3d_with_indices.default, check=_check_max_pool)
def _max_pool3d_with_indices(cv: FxValues, x: Arg, *args: Any) -> tuple[Value, None]:
    return (_max_pool3d(cv, x, *args), None)


@converter(aten.avg_pool1d.default, check=_check_avg_pool)
def _avg_pool1d(
    cv: FxValues,
    x: Arg,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: int | Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Value:
    windows = _pool_windows(1, kernel_size, stride, padding)
    return _pool(cv, x, "avg", windows, count_include_pad)


@converter(aten.avg_pool3d.default, check=_check_avg_pool)
def _avg_pool3d(
    cv: FxValues,
    x: Arg,
    kernel_size: Sequence[int],
    stride: Sequence[int] = (),
    padding: int | Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Value:
    windows = _pool_windows(3, kernel_size, stride, padding)
    return _pool(cv, x, "avg", windows, count_include_pad)


def _check_adaptive(*args: Any, **kwargs: Any) -> str | None:
    """Refuse (PyTorch then runs it) an output size that does not divide the input's
    spatial sizes: its windows then overlap and differ in size."""
    meta = getattr(args[0], "meta", {}).get("val") if args else None
    out = args[1] if len(args) > 1 else kwargs.get("output_size")
    if meta is None or out is None:
        return None
    sizes = list(meta.shape[-len(int_list(out, 1)) :])
    wanted = int_list(out, len(sizes))
    if any(size % o for size, o in zip(sizes, wanted, strict=True)):
        return (
            f"adaptive average pooling of spatial size {sizes} to {list(wanted)} "
            "(only output sizes that divide the input size are supported)"
        )
    return None


@converter(aten.adaptive_avg_pool1d.default, check=_check_adaptive)
def _adaptive_avg_pool1d(cv: FxValues, x: Arg, output_size: Sequence[int]) -> Value:
    return _adaptive_avg_pool(cv, x, int_list(output_size, 1))


@converter(
    aten.adaptive_avg_pool3d.default,
    aten._adaptive_avg_pool3d.default,
    check=_check_adaptive,
)
def _adaptive_avg_pool3d(cv: FxValues, x: Arg, output_size: Sequence[int]) -> Value:
    return _adaptive_avg_pool(cv, x, int_list(output_size, 3))


def _adaptive_avg_pool(cv: FxValues, x: Arg, out: tuple[int, ...]) -> Value:
    """A mean over the spatial axes for an output of ones; else, when every output
    size divides the input size, an average pool whose windows tile the input."""
    v = cv.tensor(x)
    rank = len(out)
    sizes = v.shape[-rank:]
    axes = tuple(range(v.rank - rank, v.rank))
    if set(out) == {1}:
        return cv.g.reduce_mean(v, axes, keepdims=True)
    if any(size % o for size, o in zip(sizes, out, strict=True)):
        raise GraphError(
            f"adaptive average pooling to {list(out)} needs the input size "
            f"{list(sizes)} to be a multiple of the output size"
        )
    windows = [(n // o, n // o, 1, 0, 0) for n, o in zip(sizes, out, strict=True)]
    return _pool(cv, v, "avg", windows, False)


# ---- reductions -------------------------------------------------------------


def _check_reduce_dtype(*args: Any, **kwargs: Any) -> str | None:
    dtype = kwargs.get("dtype")
    return None if dtype in (None, torch.float32) else f"reduction in {dtype}"


@converter(aten.mean.dim, aten.mean.default, check=_check_reduce_dtype)
def _mean(
    cv: FxValues, x: Arg, dim: Sequence[int] | None = None, keepdim: bool = False
) -> Value:
    v = cv.tensor(x)
    return cv.g.reduce_mean(v, axis_list(dim, v.rank), keepdims=keepdim)


@converter(aten.sum.dim_IntList, aten.sum.default, check=_check_reduce_dtype)
def _sum(
    cv: FxValues, x: Arg, dim: Sequence[int] | None = None, keepdim: bool = False
) -> Value:
    v = cv.tensor(x)
    return cv.g.reduce_sum(v, axis_list(dim, v.rank), keepdims=keepdim)


@converter(aten.amax.default, aten.max.default)
def _amax(
    cv: FxValues, x: Arg, dim: Sequence[int] = (), keepdim: bool = False
) -> Value:
    v = cv.tensor(x)
    return cv.g.reduce_max(v, axis_list(dim, v.rank), keepdims=keepdim)


@converter(aten.var.correction, aten.var.dim)
def _var(
    cv: FxValues,
    x: Arg,
    dim: Sequence[int] | None = None,
    unbiased: bool | None = None,
    keepdim: bool = False,
    correction: float | None = None,
) -> Value:
    """sum((x - mean)²) / (N - correction); ``var.dim`` passes ``unbiased``."""
    v = cv.tensor(x)
    axes = axis_list(dim, v.rank)
    if correction is None:
        correction = 0 if unbiased is False else 1
    n = math.prod(v.shape[a] for a in axes)
    centered = v - cv.g.reduce_mean(v, axes, keepdims=True)
    total = cv.g.reduce_sum(centered * centered, axes, keepdims=keepdim)
    return total / float(max(n - correction, 0))


# ---- layout -----------------------------------------------------------------


@converter(aten.view.default, aten.reshape.default, aten._unsafe_view.default)
def _view(cv: FxValues, x: Arg, size: Sequence[int]) -> Value:
    """``tg.reshape`` for both: tg's layouts need not match PyTorch's strides, so a
    view PyTorch can take may need a copy here (value semantics keep it correct)."""
    return _reshape(cv, x, size)


@converter(aten.flatten.using_ints)
def _flatten(cv: FxValues, x: Arg, start_dim: int = 0, end_dim: int = -1) -> Value:
    v = cv.tensor(x)
    if v.rank == 0:
        return _reshape(cv, v, (1,))
    start, end = start_dim % v.rank, end_dim % v.rank
    size = [*v.shape[:start], math.prod(v.shape[start : end + 1]), *v.shape[end + 1 :]]
    return _reshape(cv, v, size)


@converter(aten.unsqueeze.default)
def _unsqueeze(cv: FxValues, x: Arg, dim: int) -> Value:
    v = cv.tensor(x)
    size = list(v.shape)
    size.insert(dim % (v.rank + 1), 1)
    return _reshape(cv, v, size)


@converter(aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def _squeeze(cv: FxValues, x: Arg, dim: int | Sequence[int] | None = None) -> Value:
    v = cv.tensor(x)
    axes = set(axis_list(dim, v.rank)) if v.rank else set()
    return _reshape(
        cv, v, [d for k, d in enumerate(v.shape) if not (k in axes and d == 1)]
    )


@converter(aten.transpose.int)
def _transpose(cv: FxValues, x: Arg, dim0: int, dim1: int) -> Value:
    v = cv.tensor(x)
    if v.rank < 2:
        return v
    perm = list(range(v.rank))
    a, b = dim0 % v.rank, dim1 % v.rank
    perm[a], perm[b] = perm[b], perm[a]
    return cv.g.transpose(v, perm)


@converter(aten.t.default, aten.numpy_T.default)
def _t(cv: FxValues, x: Arg) -> Value:
    v = cv.tensor(x)
    return v if v.rank < 2 else cv.g.transpose(v)


@converter(aten.permute.default)
def _permute(cv: FxValues, x: Arg, dims: Sequence[int]) -> Value:
    v = cv.tensor(x)
    return cv.g.transpose(v, [d % v.rank for d in dims])


@converter(aten.expand.default)
def _expand(cv: FxValues, x: Arg, size: Sequence[int], implicit: bool = False) -> Value:
    v = cv.tensor(x)
    lead = len(size) - v.rank
    shape = [v.shape[k - lead] if d == -1 else int(d) for k, d in enumerate(size)]
    return v if tuple(shape) == v.shape else cv.g.broadcast(v, shape)


# ---- indexing ---------------------------------------------------------------


@converter(aten.cat.default, aten.concat.default)
def _cat(cv: FxValues, tensors: Sequence[Arg], dim: int = 0) -> Value:
    """``tg.concat``; like PyTorch, a 1-D empty tensor next to others is skipped."""
    values = [cv.tensor(t) for t in tensors]
    rank = max(v.rank for v in values)
    values = [v for v in values if not (v.shape == (0,) and rank > 1)] or values[:1]
    return values[0] if len(values) == 1 else cv.g.concat(values, dim)


def _slice_dim(
    cv: FxValues, v: Value, dim: int, start: int | None, end: int | None, step: int
) -> Value:
    """``v[..., start:end:step, ...]`` on dimension ``dim`` (a view)."""
    d = dim % v.rank
    starts: list[int | None] = [None] * v.rank
    stops: list[int | None] = [None] * v.rank
    steps: list[int | None] = [None] * v.rank
    starts[d], stops[d], steps[d] = start, end, step
    return cv.g.slice(v, starts, stops, steps)


@converter(aten.slice.Tensor)
def _slice(
    cv: FxValues,
    x: Arg,
    dim: int = 0,
    start: int | None = None,
    end: int | None = None,
    step: int = 1,
) -> Value:
    return _slice_dim(cv, cv.tensor(x), dim, start, end, step)


@converter(aten.narrow.default)
def _narrow(cv: FxValues, x: Arg, dim: int, start: int, length: int) -> Value:
    v = cv.tensor(x)
    begin = start % v.shape[dim % v.rank] if start < 0 else start
    return _slice_dim(cv, v, dim, begin, begin + length, 1)


@converter(aten.select.int)
def _select(cv: FxValues, x: Arg, dim: int, index: int) -> Value:
    """``x[..., index, ...]``: a one-entry slice, then a reshape (both views) that
    drops the dimension."""
    v = cv.tensor(x)
    d = dim % v.rank
    size = v.shape[d]
    if not -size <= index < size:
        raise GraphError(
            f"index {index} is out of range for dimension {dim} of size {size}"
        )
    i = index % size
    picked = _slice_dim(cv, v, d, i, i + 1, 1)
    return cv.g.reshape(picked, [s for k, s in enumerate(v.shape) if k != d])


def _pieces(cv: FxValues, x: Arg, sizes: Sequence[int], dim: int) -> list[Value]:
    v = cv.tensor(x)
    pieces, offset = [], 0
    for size in sizes:
        pieces.append(_slice_dim(cv, v, dim, offset, offset + size, 1))
        offset += size
    return pieces


@converter(aten.split.Tensor, aten.split_with_sizes.default)
def _split(
    cv: FxValues, x: Arg, split_size: int | Sequence[int], dim: int = 0
) -> list[Value]:
    """An int makes pieces of that size (the last one smaller); a list gives them."""
    v = cv.tensor(x)
    n = v.shape[dim % v.rank]
    if isinstance(split_size, int):
        step = max(split_size, 1)
        sizes = [min(step, n - k) for k in range(0, n, step)] or [0]
    else:
        sizes = [int(s) for s in split_size]
    return _pieces(cv, v, sizes, dim)


@converter(aten.chunk.default)
def _chunk(cv: FxValues, x: Arg, chunks: int, dim: int = 0) -> list[Value]:
    v = cv.tensor(x)
    n = v.shape[dim % v.rank]
    step = max(-(-n // max(chunks, 1)), 1)
    return _pieces(cv, v, [min(step, n - k) for k in range(0, n, step)] or [0], dim)


@converter(aten.unbind.int)
def _unbind(cv: FxValues, x: Arg, dim: int = 0) -> list[Value]:
    v = cv.tensor(x)
    return [_select(cv, v, dim, k) for k in range(v.shape[dim % v.rank])]


# ---- indexing by integer tensors ----------------------------------------------
#
# Runtime indices become ``tg.take`` / ``tg.gather_elements``. PyTorch raises on an
# index out of range; qidao's kernels cannot, so they clamp it into the dimension
# (``qidao/dialects/tg/dynamic_indexing.py``): only in-range indices give PyTorch's
# result.

_INDEX_DTYPES = (torch.int32, torch.int64)


def _index_value(cv: FxValues, index: Arg) -> Value:
    """An index tensor: a graph value, or a constant (an int buffer)."""
    return cv.tensor(index)


@converter(aten.embedding.default, index_args=(1,))
def _embedding(
    cv: FxValues,
    weight: Arg,
    indices: Arg,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Value:
    """``weight[indices]``: the rows of the table, ``tg.take`` along axis 0
    (``padding_idx`` and the rest only shape gradients)."""
    return _nonnegative(cv.g.take(cv.tensor(weight), _index_value(cv, indices), 0))


@converter(aten.index_select.default, index_args=(2,))
def _index_select(cv: FxValues, x: Arg, dim: int, index: Arg) -> Value:
    return _nonnegative(cv.g.take(cv.tensor(x), _index_value(cv, index), dim))


@converter(aten.gather.default, index_args=(2,))
def _gather(
    cv: FxValues, x: Arg, dim: int, index: Arg, sparse_grad: bool = False
) -> Value:
    """``torch.gather``: ``tg.gather_elements``."""
    gathered = cv.g.gather_elements(cv.tensor(x), _index_value(cv, index), dim)
    return _nonnegative(gathered)


def _nonnegative(value: Value) -> Value:
    """Mark the gather making ``value``: PyTorch raises on a negative index of
    ``embedding``, ``index_select`` and ``gather`` (not of ``x[:, i]``), so
    ``checks=True`` does too (``qidao.dialects.tg.domain``)."""
    owner = value.ssa.owner
    if isinstance(owner, tg.TakeOp | tg.GatherElementsOp):  # not a folded constant
        owner.attributes[NONNEGATIVE_ATTR] = UnitAttr()
    return value


def _check_index(*args: Any, **kwargs: Any) -> str | None:
    indices = args[1] if len(args) > 1 else kwargs.get("indices", [])
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(given) != 1:
        return "only one tensor index (x[i], x[:, i]) is supported"
    value = getattr(given[0][1], "meta", {}).get("val")
    if not isinstance(value, torch.Tensor) or value.dtype not in _INDEX_DTYPES:
        return "the index must be an int32 or int64 tensor (no bool masks)"
    return None


@converter(aten.index.Tensor, check=_check_index, index_args=(1,))
def _index(cv: FxValues, x: Arg, indices: Sequence[Arg | None]) -> Value:
    """``x[:, i]`` with one integer tensor ``i``: ``tg.take`` along its dimension."""
    (dim,) = [d for d, i in enumerate(indices) if i is not None]
    return cv.g.take(cv.tensor(x), _index_value(cv, indices[dim]), dim)
