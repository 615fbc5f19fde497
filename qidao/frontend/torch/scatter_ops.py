"""Converters for PyTorch's scatters: ``scatter`` (a tensor or a value),
``scatter_add``, ``scatter_reduce`` and ``index_put`` with one index tensor.

All become ``tg.scatter_elements`` (``qidao/dialects/tg/scatter.py``):

- ``scatter(x, dim, index, src)``: reduction ``none``; ``src`` may be larger than
  ``index`` (PyTorch reads its leading corner), so it is sliced to the index's
  shape; ``scatter(x, dim, index, value)`` scatters a constant of that shape;
- ``scatter_add``: ``add``; ``scatter_reduce`` with ``sum``, ``prod``, ``amax``,
  ``amin`` (``add``, ``mul``, ``max``, ``min``). With ``include_self=False`` the
  entries an index hits start from the reduction's identity instead of ``x``: a
  first scatter writes the identity there (``mean`` is refused);
- ``index_put(x, [None, .., i], v, accumulate)`` (``x[:, i] = v``, ``x[:, i] += v``)
  with one 1-D integer index tensor on dimension ``d``: the index is broadcast to
  ``x.shape[:d] + i.shape + x.shape[d + 1:]``, so is ``v``, and scattered on ``d``
  (``add`` when ``accumulate``).

PyTorch raises on an index out of range (and a scatter's negative index); here an
update with such an index is skipped, and ``checks=True`` raises as PyTorch does.
Repeated indices without a reduction: the last update in row-major order wins
(PyTorch leaves it undefined).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import UnitAttr

from qidao.dialects import tg
from qidao.dialects.attributes import NONNEGATIVE_ATTR
from qidao.frontend.builder import Value
from qidao.frontend.torch.ops import Arg, FxValues, converter

aten = torch.ops.aten

_REDUCTIONS = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min"}
"""``scatter_reduce``'s names -> ``tg.scatter_elements``' reductions."""


def _nonnegative(value: Value) -> Value:
    """Mark the scatter making ``value``: PyTorch's scatters reject a negative
    index, so ``checks=True`` does too."""
    owner = value.ssa.owner
    if isinstance(owner, tg.ScatterElementsOp):
        owner.attributes[NONNEGATIVE_ATTR] = UnitAttr()
    return value


def _source(cv: FxValues, src: Arg, index: Value) -> Value:
    """``src`` cut to the index's shape (PyTorch reads that corner of it)."""
    s = cv.tensor(src)
    if s.shape == index.shape:
        return s
    return cv.g.slice(s, [0] * s.rank, list(index.shape))


def _scatter(
    cv: FxValues, x: Arg, dim: int, index: Arg, src: Value, reduction: str
) -> Value:
    i = cv.tensor(index)
    scattered = cv.g.scatter_elements(cv.tensor(x), i, src, dim, reduction)
    return _nonnegative(scattered)


@converter(aten.scatter.src, index_args=(2,), dtypes="same")
def _scatter_src(cv: FxValues, x: Arg, dim: int, index: Arg, src: Arg) -> Value:
    """``x.scatter(dim, index, src)``."""
    i = cv.tensor(index)
    return _scatter(cv, x, dim, i, _source(cv, src, i), "none")


@converter(aten.scatter.value, index_args=(2,), dtypes="same")
def _scatter_value(cv: FxValues, x: Arg, dim: int, index: Arg, value: Any) -> Value:
    """``x.scatter(dim, index, value)``: a constant of the index's shape."""
    v, i = cv.tensor(x), cv.tensor(index)
    filled = cv.g.constant(np.full(i.shape, value, v.dtype), dtype=v.dtype)
    return _scatter(cv, v, dim, i, filled, "none")


@converter(aten.scatter_add.default, index_args=(2,), dtypes="same")
def _scatter_add(cv: FxValues, x: Arg, dim: int, index: Arg, src: Arg) -> Value:
    """``x.scatter_add(dim, index, src)``."""
    i = cv.tensor(index)
    return _scatter(cv, x, dim, i, _source(cv, src, i), "add")


def _check_reduce(*args: Any, **kwargs: Any) -> str | None:
    reduce = args[4] if len(args) > 4 else kwargs.get("reduce")
    if reduce not in _REDUCTIONS:
        return f"reduce '{reduce}' is not supported (sum, prod, amax and amin are)"
    return None


def _identity(reduce: str, dtype: str) -> float | int:
    """The value ``reduce`` leaves any other unchanged by."""
    if reduce == "sum":
        return 0
    if reduce == "prod":
        return 1
    kind = np.dtype(dtype)
    if kind.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(kind)
    return int(info.min) if reduce == "amax" else int(info.max)


@converter(aten.scatter_reduce.two, check=_check_reduce, index_args=(2,), dtypes="same")
def _scatter_reduce(
    cv: FxValues,
    x: Arg,
    dim: int,
    index: Arg,
    src: Arg,
    reduce: str,
    include_self: bool = True,
) -> Value:
    """``x.scatter_reduce(dim, index, src, reduce, include_self)``."""
    v, i = cv.tensor(x), cv.tensor(index)
    if not include_self:  # the entries hit start from the identity
        fill = np.full(i.shape, _identity(reduce, v.dtype), v.dtype)
        v = _scatter(cv, v, dim, i, cv.g.constant(fill, dtype=v.dtype), "none")
    return _scatter(cv, v, dim, i, _source(cv, src, i), _REDUCTIONS[reduce])


def _check_index_put(*args: Any, **kwargs: Any) -> str | None:
    indices = args[1] if len(args) > 1 else kwargs.get("indices", [])
    given = [i for i in indices if i is not None]
    if len(given) != 1:
        return "only one index tensor (x[i] = v, x[:, i] = v) is supported"
    value = getattr(given[0], "meta", {}).get("val")
    if not isinstance(value, torch.Tensor) or value.dtype not in (
        torch.int32,
        torch.int64,
    ):
        return "the index must be an int32 or int64 tensor (no bool masks)"
    if value.dim() != 1:
        return f"the index must be 1-D, got {value.dim()}-D"
    return None


@converter(
    aten.index_put.default, check=_check_index_put, index_args=(1,), dtypes="same"
)
def _index_put(
    cv: FxValues,
    x: Arg,
    indices: Sequence[Arg | None],
    values: Arg,
    accumulate: bool = False,
) -> Value:
    """``x[:, i] = values`` (``+=`` with ``accumulate``) for one 1-D index ``i``."""
    g = cv.g
    v = cv.tensor(x)
    (dim,) = [d for d, i in enumerate(indices) if i is not None]
    i = cv.tensor(indices[dim])
    target = (*v.shape[:dim], i.shape[0], *v.shape[dim + 1 :])
    along = [1] * v.rank
    along[dim] = i.shape[0]
    spread = g.broadcast(g.reshape(i, along), target)
    updates = cv.tensor(values)
    if updates.dtype != v.dtype:
        updates = g.cast(updates, v.dtype)
    if updates.shape != target:
        updates = g.broadcast(updates, target)
    reduction = "add" if accumulate else "none"
    return g.scatter_elements(v, spread, updates, dim, reduction)
