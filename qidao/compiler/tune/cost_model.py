"""A cost model learned from the measurements: gradient-boosted regression trees in
NumPy.

The tuner fits it on (features of a point, log GFLOP/s) after every batch and uses
its predictions to choose which candidates to measure next. Small and exact:
``n_trees`` depth-``depth`` trees, each fitted to the residuals of the ones before
by an exhaustive search over (feature, threshold) splits, shrunk by
``learning_rate``. Deterministic: no sampling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


@dataclass
class _Node:
    value: float
    feature: int = -1
    threshold: float = 0.0
    left: _Node | None = None
    right: _Node | None = None

    def predict(self, x: Array) -> Array:
        if self.left is None or self.right is None:
            return np.full(len(x), self.value)
        go_left = x[:, self.feature] <= self.threshold
        out = np.empty(len(x))
        out[go_left] = self.left.predict(x[go_left])
        out[~go_left] = self.right.predict(x[~go_left])
        return out


def _best_split(x: Array, y: Array, min_leaf: int) -> tuple[int, float, float]:
    """(feature, threshold, gain) of the split that most reduces the squared error;
    gain 0 when no split leaves ``min_leaf`` samples on both sides."""
    n = len(y)
    best = (-1, 0.0, 0.0)
    total = y.sum()
    for f in range(x.shape[1]):
        order = np.argsort(x[:, f], kind="stable")
        xs, ys = x[order, f], y[order]
        left_sum = np.cumsum(ys)[:-1]
        counts = np.arange(1, n)
        # split between positions i and i+1 where the value changes
        ok = (xs[1:] != xs[:-1]) & (counts >= min_leaf) & (n - counts >= min_leaf)
        if not ok.any():
            continue
        gain = left_sum**2 / counts + (total - left_sum) ** 2 / (n - counts)
        gain = np.where(ok, gain - total**2 / n, -np.inf)
        i = int(np.argmax(gain))
        if gain[i] > best[2] + 1e-12:
            best = (f, float((xs[i] + xs[i + 1]) / 2), float(gain[i]))
    return best


def _grow(x: Array, y: Array, depth: int, min_leaf: int) -> _Node:
    node = _Node(float(y.mean()) if len(y) else 0.0)
    if depth == 0 or len(y) < 2 * min_leaf:
        return node
    feature, threshold, gain = _best_split(x, y, min_leaf)
    if feature < 0 or gain <= 0:
        return node
    go_left = x[:, feature] <= threshold
    node.feature, node.threshold = feature, threshold
    node.left = _grow(x[go_left], y[go_left], depth - 1, min_leaf)
    node.right = _grow(x[~go_left], y[~go_left], depth - 1, min_leaf)
    return node


@dataclass
class BoostedTrees:
    """``fit(x, y)`` then ``predict(x)``; before any fit it predicts 0."""

    n_trees: int = 60
    depth: int = 3
    learning_rate: float = 0.15
    min_leaf: int = 2
    _base: float = 0.0
    _trees: list[_Node] = field(default_factory=list)

    def fit(self, x: Array, y: Array) -> BoostedTrees:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.ndim != 2 or len(x) != len(y):
            raise ValueError(f"expected x of shape (n, d) and y of (n,), got {x.shape}")
        self._base = float(y.mean()) if len(y) else 0.0
        self._trees = []
        residual = y - self._base
        for _ in range(self.n_trees if len(y) >= 2 * self.min_leaf else 0):
            tree = _grow(x, residual, self.depth, self.min_leaf)
            if tree.left is None:
                break
            self._trees.append(tree)
            residual = residual - self.learning_rate * tree.predict(x)
        return self

    def predict(self, x: Array) -> Array:
        x = np.asarray(x, dtype=np.float64)
        out = np.full(len(x), self._base)
        for tree in self._trees:
            out += self.learning_rate * tree.predict(x)
        return out
