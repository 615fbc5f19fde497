"""ONNX ``ReduceProd`` on runtime tensors (``qidao/frontend/onnx/reduce.py``:
``tg.reduce_prod``) compiled with ``qidao.compile``, against ONNX Runtime: axes as
an input (opset 18) and as an attribute (opset 13), keepdims, no axes (all, or
``noop_with_empty_axes``), float32 and int64.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import helper, numpy_helper

import qidao

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

SHAPE = (3, 4, 5)


def model(axes: list[int] | None, opset: int, dtype: Any, **attrs: Any) -> Any:
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inputs, initializers = ["x"], []
    if axes is not None and opset >= 18:
        inputs.append("axes")
        initializers.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    elif axes is not None:
        attrs["axes"] = axes
    graph = helper.make_graph(
        [helper.make_node("ReduceProd", inputs, ["y"], **attrs)],
        "prod",
        [helper.make_tensor_value_info("x", elem, SHAPE)],
        [helper.make_tensor_value_info("y", elem, None)],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


CASES = [
    ([1], 18, {"keepdims": 0}),
    ([0, -1], 18, {}),
    (None, 18, {}),
    (None, 18, {"noop_with_empty_axes": 1}),
    ([2], 13, {"keepdims": 0}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize(("axes", "opset", "attrs"), CASES)
def test_against_onnxruntime(
    axes: list[int] | None, opset: int, attrs: dict[str, int], dtype: Any
) -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, SHAPE).astype(np.float32)
    if dtype == np.int64:
        x = rng.integers(-9, 9, SHAPE).astype(np.int64)
    m = model(axes, opset, dtype, **attrs)
    (want,) = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    (got,) = qidao.compile(m)(x)
    assert np.asarray(got).shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5)
