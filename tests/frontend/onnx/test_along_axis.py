"""ONNX ``Tile``, ``CumSum``, ``CumProd``, ``TopK`` and ``ReverseSequence``
(``qidao/frontend/onnx/along_axis.py``) against ONNX Runtime.

Each model is compiled with ``qidao.compile`` and run on the CPU; its outputs must
equal ONNX Runtime's on the same inputs (dtype, shape, values: these ops only move
data or total it in order, so exactly). The integer inputs that decide shapes
(``repeats``, ``axis``, ``K``) come as initializers, as a ``Shape``-derived
subgraph, or as graph inputs that the compiled model binds at its first call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, ValueInfoProto, helper, numpy_helper

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)


def model_of(
    nodes: list[Any],
    inputs: dict[str, Array],
    outputs: list[str],
    initializers: dict[str, Array] | None = None,
    opset: int = 18,
) -> Any:
    graph = helper.make_graph(
        nodes,
        "test",
        [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
            )
            for n, a in inputs.items()
        ],
        [ValueInfoProto(name=n) for n in outputs],  # types: shape inference
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def check(model: Any, inputs: dict[str, Array]) -> list[Array]:
    """qidao's outputs equal ONNX Runtime's exactly (NaN where NaN)."""
    session = ort.InferenceSession(model.SerializeToString())
    expected = session.run(None, inputs)
    got: list[Array] = qidao.compile(model)(*inputs.values())
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype, f"dtype {g.dtype}, expected {e.dtype}"
        np.testing.assert_array_equal(g, e)
    return got


# ---- Tile -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_tile_with_constant_repeats(dtype: Any) -> None:
    x = RNG.integers(0, 5, (2, 3, 4)).astype(dtype)
    node = helper.make_node("Tile", ["x", "r"], ["y"])
    model = model_of([node], {"x": x}, ["y"], {"r": np.array([3, 1, 2], np.int64)})
    check(model, {"x": x})


def test_tile_repeats_from_a_shape_and_from_a_bound_input() -> None:
    """bloom-style: repeats = [Shape(b)[0], 1]; and repeats as a graph input."""
    x = RNG.standard_normal((1, 5)).astype(np.float32)
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    nodes = [
        helper.make_node("Shape", ["b"], ["s"], start=0, end=1),
        helper.make_node("Concat", ["s", "one"], ["r"], axis=0),
        helper.make_node("Tile", ["x", "r"], ["y"]),
    ]
    model = model_of(nodes, {"x": x, "b": b}, ["y"], {"one": np.array([1], np.int64)})
    check(model, {"x": x, "b": b})
    node = helper.make_node("Tile", ["x", "r"], ["y"])
    r = np.array([2, 3], np.int64)
    check(model_of([node], {"x": x, "r": r}, ["y"]), {"x": x, "r": r})


def test_tile_makes_one_copy_kernel_without_div_or_mod() -> None:
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    node = helper.make_node("Tile", ["x", "r"], ["y"])
    model = model_of([node], {"x": x}, ["y"], {"r": np.array([2, 2], np.int64)})
    affine = qidao.compile(model).ir("affine")
    # the tile's copy kernel, and the copy of its reshaped view into the output
    assert affine.count("func.func private") == 2
    assert "func.func private @main_k0_contiguous" in affine
    assert "floordiv" not in affine and " mod " not in affine


def test_tile_refuses_repeats_of_another_length() -> None:
    x = np.zeros((2, 3), np.float32)
    node = helper.make_node("Tile", ["x", "r"], ["y"])
    model = model_of([node], {"x": x}, ["y"], {"r": np.array([2], np.int64)})
    with pytest.raises(OnnxImportError, match="repeats"):
        import_onnx(model)


# ---- CumSum, CumProd --------------------------------------------------------------


@pytest.mark.parametrize("op", ["CumSum", "CumProd"])
@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_running_totals_match_onnxruntime(
    op: str, exclusive: int, reverse: int
) -> None:
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    i = RNG.integers(-3, 4, (3, 4, 5)).astype(np.int32)
    nodes = [
        helper.make_node(
            op, [v, "axis"], [f"y{v}"], exclusive=exclusive, reverse=reverse
        )
        for v in ("x", "i")
    ]
    axis = np.array(-2, np.int64)
    opset = 26 if op == "CumProd" else 18  # CumProd is new in opset 26
    model = model_of(nodes, {"x": x, "i": i}, ["yx", "yi"], {"axis": axis}, opset)
    check(model, {"x": x, "i": i})


def test_cumsum_with_the_axis_as_a_graph_input() -> None:
    x = RNG.standard_normal((3, 4)).astype(np.float64)
    node = helper.make_node("CumSum", ["x", "axis"], ["y"])
    for axis in (0, 1):
        a = np.array(axis, np.int32)
        check(model_of([node], {"x": x, "axis": a}, ["y"]), {"x": x, "axis": a})


def test_roberta_position_ids() -> None:
    """``cumsum(mask, axis=1) * mask + padding_idx`` on int64 (and the int32 cast
    the exporter makes), with the padding id 1."""
    ids = np.array([[0, 5, 7, 9, 2, 1, 1], [0, 8, 2, 1, 1, 1, 1]], np.int64)
    one = np.array(1, np.int64)
    nodes = [
        helper.make_node("Equal", ["ids", "pad"], ["is_pad"]),
        helper.make_node("Not", ["is_pad"], ["keep"]),
        helper.make_node("Cast", ["keep"], ["mask"], to=TensorProto.INT32),
        helper.make_node("CumSum", ["mask", "axis"], ["count"]),
        helper.make_node("Mul", ["count", "mask"], ["masked"]),
        helper.make_node("Cast", ["masked"], ["wide"], to=TensorProto.INT64),
        helper.make_node("Add", ["wide", "pad"], ["positions"]),
    ]
    model = model_of(
        nodes, {"ids": ids}, ["positions"], {"pad": one, "axis": np.array(1, np.int64)}
    )
    got = check(model, {"ids": ids})
    np.testing.assert_array_equal(got[0][0], [2, 3, 4, 5, 6, 1, 1])


# ---- TopK -------------------------------------------------------------------------


@pytest.mark.parametrize("largest", [1, 0])
def test_top_k_with_ties_and_nan_matches_onnxruntime(largest: int) -> None:
    x = RNG.integers(0, 4, (3, 8)).astype(np.float32)
    x[0, [1, 5]] = np.nan
    x[1, 3] = -np.inf
    node = helper.make_node(
        "TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest, sorted=1
    )
    model = model_of([node], {"x": x}, ["v", "i"], {"k": np.array([5], np.int64)})
    check(model, {"x": x})


def test_top_k_argsort_of_noise_with_k_as_a_graph_input() -> None:
    """vit-mae's random masking: the order of the noise of every row."""
    noise = RNG.random((2, 49)).astype(np.float32)
    k = np.array([49], np.int64)
    node = helper.make_node("TopK", ["noise", "k"], ["v", "order"], axis=-1, largest=0)
    check(
        model_of([node], {"noise": noise, "k": k}, ["v", "order"]),
        {"noise": noise, "k": k},
    )


def test_top_k_on_integers_along_the_first_axis() -> None:
    x = RNG.integers(-50, 50, (6, 3)).astype(np.int64)
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=0)
    check(
        model_of([node], {"x": x}, ["v", "i"], {"k": np.array([2], np.int64)}), {"x": x}
    )


# ---- ReverseSequence --------------------------------------------------------------


@pytest.mark.parametrize(("time_axis", "batch_axis"), [(0, 1), (1, 0)])
def test_reverse_sequence_with_runtime_and_constant_lengths(
    time_axis: int, batch_axis: int
) -> None:
    shape = (5, 3, 2) if time_axis == 0 else (3, 5, 2)
    x = RNG.standard_normal(shape).astype(np.float32)
    lens = np.array([5, 1, 3], np.int64)
    node = helper.make_node(
        "ReverseSequence",
        ["x", "lens"],
        ["y"],
        time_axis=time_axis,
        batch_axis=batch_axis,
    )
    check(model_of([node], {"x": x, "lens": lens}, ["y"]), {"x": x, "lens": lens})
    check(model_of([node], {"x": x}, ["y"], {"lens": lens}), {"x": x})
