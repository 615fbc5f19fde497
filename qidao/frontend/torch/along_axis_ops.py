"""Converters for ``repeat``, ``cumsum``, ``cumprod``, ``topk`` and ``sort``.

- ``x.repeat(*sizes)`` is ``np.tile(x, sizes)`` (``Graph.tile``: views and one copy
  kernel), on float32, int32 and int64 tensors;
- ``cumsum`` / ``cumprod`` are ``tg.cumsum`` / ``tg.cumprod`` along ``dim``, the
  result of the input's dtype (float32 or int64; PyTorch makes an int32 or bool
  input's total int64, which is refused, as is a ``dtype`` argument that differs);
- ``topk`` and ``sort`` are a ``tg.top_k_indices`` and a ``tg.gather_elements``
  of the input by it (``Graph.top_k``): the values and the int64 indices, in order,
  ties by the lower index (stable), NaN above every number (as PyTorch orders
  them). ``sort`` is ``topk`` with ``k`` the whole dimension (descending is
  ``largest``); ``torch.argsort`` is ``sort``'s indices. Both are float32 only.

The converters register in ``ops.CONVERTERS`` (``importer.py`` imports this module).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from qidao.frontend.builder import Value
from qidao.frontend.torch.ops import Arg, FxValues, converter

aten = torch.ops.aten


@converter(aten.repeat.default, dtypes="same")
def _repeat(cv: FxValues, x: Arg, repeats: Sequence[int]) -> Value:
    return cv.g.tile(cv.tensor(x), [int(r) for r in repeats])


def _check_scan(*args: Any, **kwargs: Any) -> str | None:
    dtype = kwargs.get("dtype", args[2] if len(args) > 2 else None)
    source = args[0] if args else None
    meta = getattr(source, "meta", {}).get("val")
    if dtype is not None and meta is not None and dtype != meta.dtype:
        return f"a total in another dtype ({dtype}) is not supported"
    return None


def _at_least_1d(cv: FxValues, x: Arg) -> tuple[Value, bool]:
    v = cv.tensor(x)
    return (cv.g.reshape(v, [1]), True) if v.rank == 0 else (v, False)


@converter(aten.cumsum.default, check=_check_scan, dtypes="same")
def _cumsum(cv: FxValues, x: Arg, dim: int, dtype: Any = None) -> Value:
    v, scalar = _at_least_1d(cv, x)
    y = cv.g.cumsum(v, dim % v.rank)
    return cv.g.reshape(y, []) if scalar else y


@converter(aten.cumprod.default, check=_check_scan, dtypes="same")
def _cumprod(cv: FxValues, x: Arg, dim: int, dtype: Any = None) -> Value:
    v, scalar = _at_least_1d(cv, x)
    y = cv.g.cumprod(v, dim % v.rank)
    return cv.g.reshape(y, []) if scalar else y


def _selection(
    cv: FxValues, x: Arg, k: int | None, dim: int, largest: bool
) -> tuple[Value, Value]:
    v, scalar = _at_least_1d(cv, x)
    axis = dim % v.rank
    values, indices = cv.g.top_k(v, v.shape[axis] if k is None else k, axis, largest)
    if scalar:
        return cv.g.reshape(values, []), cv.g.reshape(indices, [])
    return values, indices


@converter(aten.topk.default, index_results=(1,))
def _topk(
    cv: FxValues,
    x: Arg,
    k: int,
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,
) -> tuple[Value, Value]:
    return _selection(cv, x, int(k), dim, largest)


@converter(aten.sort.default, index_results=(1,))
def _sort(
    cv: FxValues, x: Arg, dim: int = -1, descending: bool = False
) -> tuple[Value, Value]:
    return _selection(cv, x, None, dim, descending)


@converter(aten.argsort.default, index_results=(0,))
def _argsort(cv: FxValues, x: Arg, dim: int = -1, descending: bool = False) -> Value:
    return _selection(cv, x, None, dim, descending)[1]


@converter(aten.argsort.stable, index_results=(0,))
def _argsort_stable(
    cv: FxValues,
    x: Arg,
    *,
    stable: bool = False,
    dim: int = -1,
    descending: bool = False,
) -> Value:
    return _selection(cv, x, None, dim, descending)[1]


@converter(aten.sort.stable, index_results=(1,))
def _sort_stable(
    cv: FxValues,
    x: Arg,
    stable: bool | None = None,
    dim: int = -1,
    descending: bool = False,
) -> tuple[Value, Value]:
    return _selection(cv, x, None, dim, descending)
