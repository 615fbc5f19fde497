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
from qidao.errors import ResourceError
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
    [((5,), [2, 3]), ((2, 3, 4), [0, 2, 1, 1, 0, 3]), ((3, 4), [2, 0, 2, 3])],
)
def test_modes(mode: str, shape: tuple[int, ...], pads: list[int]) -> None:
    model = pad_model({"x": shape}, {"pads": i64(*pads)}, mode, ("x", "pads"))
    check(model, x=rand(*shape))


@pytest.mark.parametrize("mode", ["edge", "wrap"])
def test_edge_and_wrap_take_pads_beyond_the_axis(mode: str) -> None:
    """Edge repeats the border and wrap goes round again, as often as asked (ONNX
    Runtime and the reference agree); only reflect is bounded by the axis."""
    model = pad_model({"x": (3, 4)}, {"pads": i64(3, 0, 7, 9)}, mode, ("x", "pads"))
    check(model, x=rand(3, 4))


def ort_error(model: Any, **feeds: Array) -> str:
    """ONNX Runtime's message for a model it refuses to run."""
    import onnxruntime as ort

    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    with pytest.raises(Exception) as info:
        session.run(None, feeds)
    return str(info.value)


@pytest.mark.parametrize(
    ("shape", "pads", "axis", "size", "ort"),
    [
        ((5,), [0, 7], 0, 5, "post-pad (7) exceeds maximum allowed (4)"),
        ((5,), [5, 0], 0, 5, "pre-pad (5) exceeds maximum allowed (4)"),
        ((3, 4), [2, 0, 2, 4], 1, 4, "post-pad (4) exceeds maximum allowed (3)"),
        ((1, 3), [1, 0, 0, 0], 0, 1, "Pad reflect"),
    ],
)
def test_reflect_by_the_axis_size_or_more_is_refused_like_onnx_runtime(
    shape: tuple[int, ...], pads: list[int], axis: int, size: int, ort: str
) -> None:
    """Issue 29, F24: np.pad (and so ONNX's reference) reflects periodically; ONNX
    Runtime raises, and qidao now refuses naming the node, the pads and the axis."""
    model = pad_model({"x": shape}, {"pads": i64(*pads)}, "reflect", ("x", "pads"))
    assert ort in ort_error(model, x=rand(*shape))
    rank = len(shape)
    lo, hi = pads[axis], pads[rank + axis]
    with pytest.raises(
        OnnxImportError,
        match=rf"Pad node 'pad': mode 'reflect' pads axis {axis} of size {size} by "
        rf"{lo} before and {hi} after; a reflection takes at most {size - 1}",
    ):
        qidao.compile(model)


@pytest.mark.parametrize("checks", [False, True])
def test_reflect_pads_given_at_run_time_are_refused_by_the_call(checks: bool) -> None:
    """The reproducer of F24: the pads are a graph input, bound at the call
    (``qidao.frontend.onnx.specialize``); a pad of the axis size raises at that call,
    with or without checks, and pads in range still run (as ONNX Runtime)."""
    node = helper.make_node("Pad", ["x", "p"], ["y"], mode="reflect", name="pad")
    graph = helper.make_graph(
        [node],
        "pad",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [5]),
            helper.make_tensor_value_info("p", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = np.arange(5, dtype=np.float32)
    compiled = qidao.compile(model, checks=checks)
    assert "post-pad (7) exceeds" in ort_error(model, x=x, p=i64(0, 7))
    with pytest.raises(
        OnnxImportError, match="pads axis 0 of size 5 by 0 before and 7"
    ):
        compiled(x, i64(0, 7))
    (got,) = compiled(x, i64(1, 4))
    np.testing.assert_array_equal(got, np.pad(x, (1, 4), "reflect"))


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_copying_modes_refuse_to_pad_an_empty_axis(mode: str) -> None:
    """Nothing to copy: ONNX Runtime raises, np.pad raises (a bare ValueError
    before); zero pads on the empty axis are fine."""
    model = pad_model({"x": (0, 3)}, {"pads": i64(1, 0, 1, 0)}, mode, ("x", "pads"))
    ort_error(model, x=rand(0, 3))
    with pytest.raises(
        OnnxImportError, match=rf"mode '{mode}' cannot pad axis 0, which is empty"
    ):
        import_onnx(model)
    fine = pad_model({"x": (0, 3)}, {"pads": i64(0, 1, 0, 2)}, mode, ("x", "pads"))
    import_onnx(fine)


@pytest.mark.parametrize(
    ("mode", "pads"),
    [("reflect", [0, 2**62]), ("edge", [1, 2**62]), ("constant", [2**40, 0])],
)
def test_huge_pads_are_resource_errors_before_numpy(mode: str, pads: list[int]) -> None:
    """Issue 29, F17: the padded size is checked against qidao's limit before
    np.pad makes its index table (a bare 'array is too big' before)."""
    model = pad_model({"x": (5,)}, {"pads": i64(*pads)}, mode, ("x", "pads"))
    with pytest.raises(ResourceError, match=r"Pad node 'pad': a tensor of shape \["):
        import_onnx(model)


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
