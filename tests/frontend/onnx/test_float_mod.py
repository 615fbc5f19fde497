"""ONNX ``Mod`` on float tensors (``qidao/frontend/onnx/logic.py``: ``tg.fmod``)
compiled with ``qidao.compile``, bit for bit against ONNX's reference (NumPy's
``fmod`` for ``fmod=1``, ``mod`` for ``fmod=0``): negative dividends and divisors,
a zero divisor (NaN), infinite dividends (NaN) and divisors, signed zeros; float16,
float32, float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import qidao

A = [5.5, -5.5, 7.0, -7.0, 0.0, -0.0, 1e30, -1e-30, np.inf, -np.inf, np.nan, 4.0, -4.0]
B = [2.0, 2.0, -2.5, -2.5, 3.0, -3.0, 7.0, 3.0, 2.0, 2.0, 1.0, 0.0, np.inf]


def model(fmod: int, dtype: Any, n: int) -> Any:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [helper.make_node("Mod", ["a", "b"], ["r"], fmod=fmod)],
        "mod",
        [helper.make_tensor_value_info(x, elem, (n,)) for x in "ab"],
        [helper.make_tensor_value_info("r", elem, (n,))],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("fmod", [1, 0])
def test_against_the_onnx_reference(fmod: int, dtype: Any) -> None:
    rng = np.random.default_rng(fmod)
    with np.errstate(over="ignore"):
        a = np.concatenate([A, rng.uniform(-50, 50, 40)]).astype(dtype)
        b = np.concatenate([B, rng.uniform(-9, 9, 40)]).astype(dtype)
    m = model(fmod, dtype, a.size)
    with np.errstate(all="ignore"):
        (want,) = ReferenceEvaluator(m).run(None, {"a": a, "b": b})
    (got,) = qidao.compile(m)(a, b)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
    same_sign = np.signbit(got) == np.signbit(want)
    assert same_sign[~np.isnan(want)].all()
