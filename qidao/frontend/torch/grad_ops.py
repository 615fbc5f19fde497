"""Converters for the ATen ops that AOTAutograd's backward graphs bring.

``torch.compile(model, backend="qidao")`` trains through AOTAutograd
(``qidao/frontend/torch/training.py``), whose backward graphs, once decomposed, hold
ops a forward graph rarely does: comparisons and ``where`` (ReLU's
``threshold_backward`` is ``where(x <= 0, 0, g)``), boolean masks, filled tensors,
``constant_pad_nd`` (max pooling's backward, ``training.max_pool2d_backward``),
``var_mean`` (training-mode BatchNorm's batch statistics), and the two backward
ops qidao converts whole:

- ``embedding_dense_backward(g, indices, V, padding_idx, scale_grad_by_freq)``: the
  rows of ``g`` summed into the rows of the table they were read from, as
  ``onehot(indices)ᵀ · g`` (a ``tg.equal`` against ``0..V-1``, a cast, a matmul):
  tg has no scatter-add, and the one-hot product is exact (one non-zero per
  row). It costs ``tokens × V × D`` multiply-adds: cheap for small vocabularies,
  a real price for large ones. The row of ``padding_idx`` gets no gradient, as in
  PyTorch; ``scale_grad_by_freq`` is refused.
- ``convolution_backward``: ``dx`` and ``dw`` from
  ``qidao.dialects.tg.grad.conv.conv2d_grads`` (the vjp of ``tg.conv2d``, built
  through an ``Emit``), the bias gradient the sum of ``g`` over N, H and W; only
  the gradients in ``output_mask`` are built. A 1-D convolution's are those of
  its unit-height 2-D views; a 3-D one's backward is refused (it runs in PyTorch).

The converters register in ``ops.CONVERTERS`` (``importer.py`` imports this module),
each with the dtype rule (``ops.DTYPE_RULES``) that lets its bool or integer
tensors through: comparisons make bool tensors from float32 or integer ones,
``where`` takes a bool condition, the logical (and, on bool, bitwise) ops take and
make bool tensors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from xdsl.ir import Operation

from qidao.dialects.tg.grad.conv import conv2d_grads
from qidao.dialects.tg.grad.emit import Emit
from qidao.frontend.builder import Value
from qidao.frontend.errors import GraphError
from qidao.frontend.torch.ops import Arg, FxValues, axis_list, converter, int_list

aten = torch.ops.aten

# ---- comparisons, logic, where ----------------------------------------------

_COMPARISONS: dict[Any, Callable[[FxValues, Value, Value | float], Value]] = {
    aten.eq.Scalar: lambda cv, x, y: cv.g.equal(x, y),
    aten.eq.Tensor: lambda cv, x, y: cv.g.equal(x, y),
    aten.ne.Scalar: lambda cv, x, y: cv.g.not_equal(x, y),
    aten.ne.Tensor: lambda cv, x, y: cv.g.not_equal(x, y),
    aten.lt.Scalar: lambda cv, x, y: cv.g.less(x, y),
    aten.lt.Tensor: lambda cv, x, y: cv.g.less(x, y),
    aten.le.Scalar: lambda cv, x, y: cv.g.less_equal(x, y),
    aten.le.Tensor: lambda cv, x, y: cv.g.less_equal(x, y),
    aten.gt.Scalar: lambda cv, x, y: cv.g.greater(x, y),
    aten.gt.Tensor: lambda cv, x, y: cv.g.greater(x, y),
    aten.ge.Scalar: lambda cv, x, y: cv.g.greater_equal(x, y),
    aten.ge.Tensor: lambda cv, x, y: cv.g.greater_equal(x, y),
}


def _check_compare(*args: Any, **kwargs: Any) -> str | None:
    """An integer tensor against a fractional number: the number would become an
    integer constant (the builder gives a scalar the tensor's dtype)."""
    x, y = [*args, kwargs.get("other")][:2]
    value = getattr(x, "meta", {}).get("val")
    integer = isinstance(value, torch.Tensor) and not value.dtype.is_floating_point
    if integer and isinstance(y, float) and not y.is_integer():
        return f"an integer tensor compared with {y}"
    return None


def _comparison(target: Any) -> None:
    build = _COMPARISONS[target]

    def convert(cv: FxValues, x: Arg, y: Arg) -> Value:
        return build(cv, cv.tensor(x), cv.operand(y))

    converter(target, check=_check_compare, dtypes="compare")(convert)


for _target in _COMPARISONS:
    _comparison(_target)


_LOGICAL: dict[Any, Callable[[FxValues, Value, Value], Value]] = {
    aten.logical_and.default: lambda cv, x, y: cv.g.logical_and(x, y),
    aten.bitwise_and.Tensor: lambda cv, x, y: cv.g.logical_and(x, y),
    aten.__and__.Tensor: lambda cv, x, y: cv.g.logical_and(x, y),
    aten.logical_or.default: lambda cv, x, y: cv.g.logical_or(x, y),
    aten.bitwise_or.Tensor: lambda cv, x, y: cv.g.logical_or(x, y),
    aten.__or__.Tensor: lambda cv, x, y: cv.g.logical_or(x, y),
    aten.logical_xor.default: lambda cv, x, y: cv.g.logical_xor(x, y),
    aten.bitwise_xor.Tensor: lambda cv, x, y: cv.g.logical_xor(x, y),
    aten.__xor__.Tensor: lambda cv, x, y: cv.g.logical_xor(x, y),
}


def _logical(target: Any) -> None:
    build = _LOGICAL[target]

    def convert(cv: FxValues, x: Arg, y: Arg) -> Value:
        return build(cv, cv.tensor(x), cv.tensor(y))

    converter(target, dtypes="bool")(convert)


for _target in _LOGICAL:
    _logical(_target)


@converter(aten.logical_not.default, aten.bitwise_not.default, dtypes="bool")
def _logical_not(cv: FxValues, x: Arg) -> Value:
    return cv.g.logical_not(cv.tensor(x))


@converter(aten.where.self, dtypes="select")
def _where(cv: FxValues, condition: Arg, x: Arg, y: Arg) -> Value:
    return cv.g.where(cv.tensor(condition), cv.operand(x), cv.operand(y))


# ---- filled tensors, padding ------------------------------------------------


def _check_fill(*args: Any, **kwargs: Any) -> str | None:
    if kwargs.get("device") not in (None, torch.device("cpu")):
        return f"a tensor on {kwargs['device']} (qidao computes on the CPU)"
    return None


def _filled(cv: FxValues, size: Sequence[int], value: float) -> Value:
    """A float32 tensor of ``size`` holding ``value``: a scalar constant, broadcast
    (no dense constant of the whole size)."""
    scalar = cv.g.constant(np.array(value, np.float32))
    shape = tuple(int(d) for d in size)
    return scalar if not shape else cv.g.broadcast(scalar, shape)


@converter(aten.scalar_tensor.default, check=_check_fill)
def _scalar_tensor(cv: FxValues, s: float, **kwargs: Any) -> Value:
    return _filled(cv, (), float(s))


@converter(aten.full.default, check=_check_fill)
def _full(cv: FxValues, size: Sequence[int], fill_value: float, **kwargs: Any) -> Value:
    return _filled(cv, size, float(fill_value))


def _check_pad(*args: Any, **kwargs: Any) -> str | None:
    value = kwargs.get("value", args[2] if len(args) > 2 else 0.0)
    return None if math.isfinite(value) else f"padding with {value} (finite only)"


def _check_pad_mode(*args: Any, **kwargs: Any) -> str | None:
    mode = kwargs.get("mode", args[2] if len(args) > 2 else "constant")
    if mode != "constant":
        return f"mode={mode!r} is not supported (only 'constant')"
    value = kwargs.get("value", args[3] if len(args) > 3 else None)
    return _check_pad(*args[:2], 0.0 if value is None else value)


@converter(aten.pad.default, check=_check_pad_mode)
def _pad(
    cv: FxValues,
    x: Arg,
    pad: Sequence[int],
    mode: str = "constant",
    value: float | None = None,
) -> Value:
    return _constant_pad_nd(cv, x, pad, 0.0 if value is None else value)


@converter(aten.constant_pad_nd.default, check=_check_pad)
def _constant_pad_nd(
    cv: FxValues, x: Arg, pad: Sequence[int], value: float = 0.0
) -> Value:
    """``F.pad``'s constant mode: ``pad`` pairs (before, after) from the last
    dimension backwards; a negative amount cuts elements off."""
    v = cv.tensor(x)
    if len(pad) % 2 or len(pad) // 2 > v.rank:
        raise GraphError(
            f"constant_pad_nd: pad {list(pad)} must hold a (before, after) pair per "
            f"padded dimension of the rank-{v.rank} input"
        )
    low, high = [0] * v.rank, [0] * v.rank
    for k in range(len(pad) // 2):
        low[v.rank - 1 - k], high[v.rank - 1 - k] = int(pad[2 * k]), int(pad[2 * k + 1])
    if any(a < 0 for a in low + high):
        start = [max(-a, 0) for a in low]
        stop = [d - max(-a, 0) for d, a in zip(v.shape, high, strict=True)]
        v = cv.g.slice(v, start, stop)
    if any(a > 0 for a in low + high):
        v = cv.g.pad(v, [max(a, 0) for a in low], [max(a, 0) for a in high], value)
    return v


# ---- statistics -------------------------------------------------------------


@converter(aten.var_mean.correction)
def _var_mean(
    cv: FxValues,
    x: Arg,
    dim: Sequence[int] | None = None,
    *,
    correction: float | None = None,
    keepdim: bool = False,
) -> tuple[Value, Value]:
    """(variance, mean) over ``dim``, the variance ``sum((x - mean)²) / (N -
    correction)`` (``correction`` defaults to 1); training-mode BatchNorm's
    decomposition computes its batch statistics with it."""
    v = cv.tensor(x)
    axes = axis_list(dim, v.rank)
    n = math.prod(v.shape[a] for a in axes)
    mean = cv.g.reduce_mean(v, axes, keepdims=True)
    centered = v - mean
    total = cv.g.reduce_sum(centered * centered, axes, keepdims=keepdim)
    var = total / float(max(n - (1 if correction is None else correction), 0))
    return var, mean if keepdim else cv.g.reshape(mean, var.shape)


@converter(aten.var_mean.dim)
def _var_mean_dim(
    cv: FxValues,
    x: Arg,
    dim: Sequence[int] | None,
    unbiased: bool = True,
    keepdim: bool = False,
) -> tuple[Value, Value]:
    return _var_mean(cv, x, dim, correction=int(unbiased), keepdim=keepdim)


# ---- embedding_dense_backward -----------------------------------------------


def _check_embedding_backward(*args: Any, **kwargs: Any) -> str | None:
    if kwargs.get("scale_grad_by_freq", args[4] if len(args) > 4 else False):
        return "scale_grad_by_freq=True is not supported"
    return None


@converter(
    aten.embedding_dense_backward.default,
    check=_check_embedding_backward,
    index_args=(1,),
)
def _embedding_dense_backward(
    cv: FxValues,
    grad_output: Arg,
    indices: Arg,
    num_weights: int,
    padding_idx: int,
    scale_grad_by_freq: bool,
) -> Value:
    """``onehot(indices)ᵀ · g`` (see the module docstring); ``padding_idx`` -1 is
    none, as ``F.embedding`` passes it."""
    g, i = cv.tensor(grad_output), cv.tensor(indices)
    tokens = math.prod(i.shape)
    width = g.shape[-1]
    rows = np.arange(num_weights, dtype=i.dtype)
    hits = cv.g.equal(cv.g.reshape(i, (tokens, 1)), rows.reshape(1, num_weights))
    onehot = cv.g.cast(hits, "float32")  # tokens x V
    flat = cv.g.reshape(g, (tokens, width))
    dweight = cv.g.matmul(cv.g.transpose(onehot), flat)
    if 0 <= padding_idx < num_weights:
        keep = np.ones((num_weights, 1), np.float32)
        keep[padding_idx] = 0.0
        dweight = dweight * keep
    return dweight


# ---- convolution_backward ---------------------------------------------------


def _check_convolution_backward(*args: Any, **kwargs: Any) -> str | None:
    transposed = kwargs.get("transposed", args[7] if len(args) > 7 else False)
    if transposed:
        return "transposed convolution is not supported"
    stride = kwargs.get("stride", args[4] if len(args) > 4 else [1, 1])
    if len(stride) not in (1, 2):
        return (
            f"only the backward of 1-D and 2-D convolutions is supported (stride "
            f"{list(stride)})"
        )
    return None


@contextmanager
def _emit(cv: FxValues) -> Iterator[Emit]:
    """An ``Emit`` that appends to ``cv``'s graph: it inserts before a placeholder
    op, appended now and erased when the block ends."""
    anchor = cv.g.constant(np.zeros((), np.float32)).ssa.owner
    assert isinstance(anchor, Operation)
    try:
        yield Emit(anchor)
    finally:
        anchor.detach()
        anchor.erase()


@converter(
    aten.convolution_backward.default,
    check=_check_convolution_backward,
)
def _convolution_backward(
    cv: FxValues,
    grad_output: Arg,
    input: Arg,
    weight: Arg,
    bias_sizes: Sequence[int] | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
    output_mask: Sequence[bool],
) -> tuple[Value | None, Value | None, Value | None]:
    """(dx, dw, db) of ``convolution``, each None where ``output_mask`` says it is
    not needed. A 1-D convolution is the 2-D one of the unit-height views ``[N, C,
    1, L]`` (as its forward, ``qidao/frontend/spatial.py``): its gradients are
    those of the views."""
    g, x, w = cv.tensor(grad_output), cv.tensor(input), cv.tensor(weight)
    one_d = x.rank == 3
    if one_d:
        g, x, w = (cv.g.reshape(v, [*v.shape[:2], 1, v.shape[2]]) for v in (g, x, w))
        stride = [1, *int_list(stride, 1)]
        padding = [0, *int_list(padding, 1)]
        dilation = [1, *int_list(dilation, 1)]
    dx = dw = db = None
    if output_mask[0] or output_mask[1]:
        ph, pw = int_list(padding)
        with _emit(cv) as e:
            dx_ssa, dw_ssa = conv2d_grads(
                e,
                x.ssa,
                w.ssa,
                g.ssa,
                strides=int_list(stride),
                padding=(ph, pw, ph, pw),
                dilation=int_list(dilation),
                groups=groups,
            )
        dx = Value(cv.g, dx_ssa) if output_mask[0] else None
        dw = Value(cv.g, dw_ssa) if output_mask[1] else None
        if one_d:  # [.., .., 1, L] back to [.., .., L]
            dx = None if dx is None else cv.g.reshape(dx, [*dx.shape[:2], dx.shape[3]])
            dw = None if dw is None else cv.g.reshape(dw, [*dw.shape[:2], dw.shape[3]])
    if output_mask[2]:
        db = cv.g.reduce_sum(g, (0, 2, 3))
    return dx, dw, db
