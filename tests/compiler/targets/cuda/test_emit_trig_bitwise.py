"""The CUDA emitter's C for the ops of ``trig.py``, ``tg.fmod`` (``llvm.frem``:
``fmodf``/``fmod``), the shifts (``minui`` of the signed right shift) and
``tg.reduce_prod``, run by the emulator (``device="emulate"``, g++) against NumPy (float64: ``asin``,
not ``asinf``).
"""

from __future__ import annotations

import shutil
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph

pytestmark = [
    pytest.mark.skipif(
        shutil.which("g++") is None, reason="g++ (the emulator) is not on PATH"
    ),
    pytest.mark.slow,  # g++ compiles each program: seconds
]

REFERENCES: list[tuple[str, Any]] = [
    ("tan", np.tan),
    ("asin", np.arcsin),
    ("acos", np.arccos),
    ("atan", np.arctan),
    ("sinh", np.sinh),
    ("cosh", np.cosh),
    ("asinh", np.arcsinh),
    ("acosh", np.arccosh),
    ("atanh", np.arctanh),
]


def test_trig_and_fmod(dtype: str = "float64") -> None:
    g = Graph()
    x, y = g.input("x", (64,), dtype), g.input("y", (64,), dtype)
    g.output(*(getattr(g, name)(x) for name, _ in REFERENCES), g.fmod(x, y))
    rng = np.random.default_rng(0)
    xs = rng.uniform(-0.9, 0.9, 64).astype(dtype)
    ys = rng.uniform(-0.5, 0.5, 64).astype(dtype)
    got = qidao.compile(g, target="cuda", device="emulate")(xs, ys)
    with np.errstate(invalid="ignore"):
        want = [f(xs.astype(np.float64)) for _, f in REFERENCES]
    want.append(np.fmod(xs, ys))
    for (name, _), r, w in zip([*REFERENCES, ("fmod", None)], got, want, strict=True):
        np.testing.assert_allclose(
            r, w.astype(dtype), rtol=1e-5, equal_nan=True, err_msg=name
        )


def test_shifts_bitwise_and_reduce_prod() -> None:
    g = Graph()
    a, s = g.input("a", (3, 1), "int8"), g.input("s", (20,), "int8")
    m = g.input("m", (3, 40), "float32")
    g.output(g.shift_left(a, s), g.shift_right(a, s), g.bitwise_xor(a, s))
    g.output(g.bitwise_not(a), g.reduce_prod(m, [1]))
    av = np.array([[-5], [1], [100]], np.int8)
    sv = np.array([*range(17), -1, -2, -100], np.int8)
    mv = np.random.default_rng(1).uniform(0.5, 1.5, (3, 40)).astype(np.float32)
    got = qidao.compile(g, target="cuda", device="emulate")(av, sv, mv)
    for r, w in zip(got[:4], [av << sv, av >> sv, av ^ sv, ~av], strict=True):
        np.testing.assert_array_equal(r, w)
    np.testing.assert_allclose(got[4], np.prod(mv, axis=1), rtol=1e-5)
