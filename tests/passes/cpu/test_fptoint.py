"""Float-to-integer casts as ``convert-to-llvm`` writes them for f32 and f64
(``qidao/passes/cpu/llvm/fptoint.py``: a clamp, a plain conversion, the top of
the range and NaN selected): the saturating intrinsic's results, element for
element, at every edge of every integer type, on the vector body and the tail."""

from __future__ import annotations

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph

EDGES = [
    np.nan, np.inf, -np.inf, 0.0, -0.0, -0.5, 0.5, 0.99, -0.99, 1.5, -1.5, 127.9,
    128.0, 255.5, 256.0, -128.5, -129.0, 32767.9, 32768.0, 65535.9, 65536.0,
    2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0, 4294967040.0,
    4294967296.0, 9.2e18, 9.3e18, -9.3e18, 1.8e19, 1.9e19, 3.0e38, -3.0e38,
]  # fmt: skip


def saturated(x: float, dtype: str) -> int:
    """``llvm.fpto[su]i.sat``: truncate, clamp to the type's range, NaN -> 0."""
    if np.isnan(x):
        return 0
    info = np.iinfo(dtype)
    if x >= float(info.max):
        return int(info.max)
    if x <= float(info.min):
        return int(info.min)
    return int(np.trunc(x))


@pytest.mark.parametrize("source", ["float32", "float64"])
@pytest.mark.parametrize(
    "target", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
)
def test_casts_saturate_like_the_intrinsic(source: str, target: str) -> None:
    x = np.array(EDGES * 2, source)  # 68 elements: vectors and a tail
    g = Graph("main")
    g.output(g.cast(g.input("x", x.shape, source), target))
    (y,) = qidao.compile(g, threads=1)(x)
    assert y.dtype == np.dtype(target)
    want = [saturated(float(v), target) for v in x]
    assert [int(v) for v in y] == want
