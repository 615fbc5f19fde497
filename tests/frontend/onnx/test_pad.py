"""ONNX ``Pad`` beyond a finite constant: a runtime ``constant_value``, non-finite
constant values, and the modes ``edge``, ``reflect`` and ``wrap`` on float32,
compiled and compared with ``onnx.reference.ReferenceEvaluator`` (``np.pad``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

Array = np.ndarray[Any, Any]


def rand(*shape: int) -> Array:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def pad_model(
    inputs: Mapping[str, Sequence[int]],
    initializers: Mapping[str, Array],
    mode: str = "constant",
    node_inputs: Sequence[str] = ("x", "pads", "v"),
) -> Any:
    node = helper.make_node("Pad", list(node_inputs), ["y"], mode=mode, name="pad")
    graph = helper.make_graph(
        [node],
        "pad",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
            for n, s in inputs.items()
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    return model


def check(model: Any, **feeds: Array) -> str:
    """Compile ``model``, run it on ``feeds``, compare bit for bit with the ONNX
    reference (padding copies values: nothing is rounded); return the tg IR."""
    compiled = qidao.compile(model)
    got = compiled(*feeds.values())
    (want,) = ReferenceEvaluator(model).run(None, feeds)
    assert got[0].shape == want.shape
    np.testing.assert_array_equal(got[0], want)
    return compiled.ir("input")


def i64(*values: int) -> Array:
    return np.array(values, np.int64)


@pytest.mark.parametrize("value_shape", [(), (1,)])
def test_runtime_constant_value(value_shape: tuple[int, ...]) -> None:
    model = pad_model(
        {"x": (2, 3, 4), "v": value_shape}, {"pads": i64(0, 1, 2, 1, 0, 3)}
    )
    v = np.full(value_shape, -2.5, np.float32)
    ir = check(model, x=rand(2, 3, 4), v=v)
    assert "tg.pad" not in ir and "tg.gather" in ir


def test_runtime_constant_value_with_axes_and_infinity() -> None:
    model = pad_model(
        {"x": (2, 3, 4), "v": ()},
        {"pads": i64(1, 2, 0, 1), "axes": i64(-1, 0)},
        node_inputs=("x", "pads", "v", "axes"),
    )
    check(model, x=rand(2, 3, 4), v=np.array(np.inf, np.float32))


@pytest.mark.parametrize("value", [-np.inf, np.nan])
def test_non_finite_constant_value(value: float) -> None:
    model = pad_model(
        {"x": (3, 4)}, {"pads": i64(1, 0, 2, 2), "v": np.array(value, np.float32)}
    )
    check(model, x=rand(3, 4))


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
@pytest.mark.parametrize(
    ("shape", "pads"),
    [((5,), [2, 3]), ((2, 3, 4), [0, 2, 1, 1, 0, 3]), ((3, 4), [3, 0, 4, 2])],
)
def test_modes(mode: str, shape: tuple[int, ...], pads: list[int]) -> None:
    model = pad_model({"x": shape}, {"pads": i64(*pads)}, mode, ("x", "pads"))
    check(model, x=rand(*shape))


def test_mode_ignores_the_constant_value() -> None:
    model = pad_model({"x": (4, 3), "v": ()}, {"pads": i64(1, 1, 2, 0)}, "edge")
    check(model, x=rand(4, 3), v=np.array(7.0, np.float32))


def test_finite_constant_stays_one_pad() -> None:
    model = pad_model(
        {"x": (3, 4)}, {"pads": i64(1, 0, 2, 2), "v": np.array(1.5, np.float32)}
    )
    ir = check(model, x=rand(3, 4))
    assert "tg.pad" in ir and "tg.gather" not in ir


def test_runtime_constant_value_of_two_elements_is_refused() -> None:
    model = pad_model({"x": (3, 4), "v": (2,)}, {"pads": i64(1, 0, 2, 2)})
    with pytest.raises(
        OnnxImportError,
        match=r"Pad node 'pad': constant_value 'v' must hold one element, got shape "
        r"\[2\]",
    ):
        import_onnx(model)
