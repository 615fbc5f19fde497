"""NumPy semantics of ``tg.grid_sample`` (the rules of ``grid_sample.py``), for
``numpy_eval``: every output position at once, one gather per tap."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]

_CUBIC_A = -0.75
_OFFSETS = {"nearest": (0,), "linear": (0, 1), "cubic": (-1, 0, 1, 2)}
_SLACK = 4


def _position(g: Array, size: int, mode: str, padding: str, aligned: bool) -> Array:
    """Unnormalize, round (nearest) and move (border, reflection) ``g``."""
    if aligned:
        u = (g + 1) * 0.5 * (size - 1)
        lo, hi = 0.0, size - 1.0
    else:
        u = ((g + 1) * size - 1) * 0.5
        lo, hi = -0.5, size - 0.5
    if mode == "nearest":
        u = np.rint(u)
    if mode == "cubic":
        return u
    below, above = u < lo, u > hi
    if padding == "border":
        return np.where(below, 0.0, np.where(above, size - 1.0, u)).astype(u.dtype)
    if padding == "reflection":
        span = hi - lo
        if span == 0:
            return np.where(below | above, lo, u).astype(u.dtype)
        beyond = np.where(below, lo - u, u - hi)
        flips = np.floor(beyond / span)
        rest = beyond - flips * span
        odd = np.mod(flips, 2) != 0
        near = np.where(below, lo + rest, hi - rest)
        far = np.where(below, hi - rest, lo + rest)
        moved = np.where(odd, far, near)
        return np.where(below | above, moved, u).astype(u.dtype)
    return u


def _weights(t: Array, mode: str) -> list[Array | None]:
    if mode == "nearest":
        return [None]
    if mode == "linear":
        return [1 - t, t]
    a = _CUBIC_A

    def outer(s: Array) -> Array:
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a

    def inner(s: Array) -> Array:
        return ((a + 2) * s - (a + 3)) * s * s + 1

    return [outer(t + 1), inner(t), inner(1 - t), outer(2 - t)]


def _entry(j: Array, size: int, padding: str, aligned: bool) -> Array:
    """The entry an integer position reads (before the zeros mask)."""
    if padding == "reflection":
        period = 2 * (size - 1) if aligned else 2 * size
        if period == 0:
            return np.zeros_like(j)
        m = np.mod(j, period)
        back = (period if aligned else period - 1) - m
        j = np.where(m < size, m, back)
    return np.clip(j, 0, size - 1)


def grid_sample(x: Array, grid: Array, mode: str, padding: str, aligned: bool) -> Array:
    """``tg.grid_sample`` of ``x [N, C, D..]`` at ``grid [N, O.., k]``."""
    batch, channels, *sizes = x.shape
    out_spatial = grid.shape[1:-1]
    result = np.zeros((batch, channels, *out_spatial), dtype=x.dtype)
    if result.size == 0:
        return result
    rank = len(sizes)
    per_dim = []
    nan = np.zeros((batch, *out_spatial), dtype=bool)
    with np.errstate(invalid="ignore", over="ignore"):
        for d, size in enumerate(sizes):
            u = _position(grid[..., rank - 1 - d], size, mode, padding, aligned)
            nan |= np.isnan(u)
            base = u if mode == "nearest" else np.floor(u)
            weights = _weights(u - base, mode)
            top = size - 1
            period = 2 * (size - 1) if aligned else 2 * size
            if mode == "cubic" and padding == "reflection" and period > 0:
                base = base - np.floor(base / period) * period
                top = period
            bounded = np.fmin(np.fmax(base, -_SLACK), top + _SLACK)
            start = bounded.astype(np.int64)
            taps = []
            for offset, weight in zip(_OFFSETS[mode], weights, strict=True):
                j = start + offset
                ok = (j >= 0) & (j < size) if padding == "zeros" else None
                taps.append((_entry(j, size, padding, aligned), ok, weight))
            per_dim.append(taps)
        moved = np.moveaxis(x, 1, -1)  # [N, D.., C]
        n = np.arange(batch).reshape((batch,) + (1,) * len(out_spatial))
        total = np.zeros((batch, *out_spatial, channels), dtype=x.dtype)
        for combo in itertools.product(*per_dim):
            v = moved[(n, *[at for at, _, _ in combo])]
            for _, ok, _ in combo:
                if ok is not None:
                    v = np.where(ok[..., None], v, 0)
            w = None
            for _, _, weight in combo:
                if weight is not None:
                    w = weight if w is None else w * weight
            total = total + (v if w is None else w[..., None] * v)
        if mode == "nearest":
            total = np.where(nan[..., None], np.nan, total)
    return np.moveaxis(total, -1, 1).astype(x.dtype)
