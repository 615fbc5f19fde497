"""Tensor size limits (``qidao/frontend/limits.py``; issue 12, R12): a model that
asks for a tensor beyond ``$QIDAO_MAX_TENSOR_BYTES`` (default a quarter of the
physical memory) is a ``ResourceError`` naming the node, raised before anything that
large is allocated."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper

import qidao
from qidao.frontend.builder import Graph
from qidao.frontend.limits import ENV, max_tensor_bytes


def _model(
    nodes: list[Any], inputs: list[Any], inits: list[Any], out: int = TensorProto.FLOAT
) -> Any:
    graph = helper.make_graph(
        nodes,
        "g",
        inputs,
        [helper.make_tensor_value_info("y", out, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _int64(name: str, values: list[int], shape: list[int] | None = None) -> Any:
    dims = [len(values)] if shape is None else shape
    return helper.make_tensor(name, TensorProto.INT64, dims, values)


HUGE = 1 << 40

CASES = {
    "ConstantOfShape": _model(
        [helper.make_node("ConstantOfShape", ["s"], ["y"])],
        [],
        [_int64("s", [1 << 20, 1 << 20])],
    ),
    "OneHot": _model(
        [helper.make_node("OneHot", ["i", "d", "v"], ["y"])],
        [helper.make_tensor_value_info("i", TensorProto.INT64, [3])],
        [
            _int64("d", [HUGE], []),
            helper.make_tensor("v", TensorProto.FLOAT, [2], [0.0, 1.0]),
        ],
    ),
    "Expand": _model(
        [helper.make_node("Expand", ["c", "s"], ["y"])],
        [],
        [
            helper.make_tensor("c", TensorProto.FLOAT, [1], [1.0]),
            _int64("s", [HUGE]),
        ],
    ),
    "Range": _model(
        [
            helper.make_node("Range", ["a", "b", "c"], ["r"]),
            helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT),
        ],
        [],
        [_int64("a", [0], []), _int64("b", [HUGE], []), _int64("c", [1], [])],
    ),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_a_huge_tensor_is_refused_naming_the_node(op: str) -> None:
    with pytest.raises(qidao.ResourceError, match=rf"^{op} node '#0': a tensor of"):
        qidao.compile(CASES[op])


def test_the_limit_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    g = Graph("main")
    x = g.input("x", (64, 64))
    g.output(x + 1.0)
    qidao.compile(g)  # 16 KiB under the default
    monkeypatch.setenv(ENV, "1024")
    assert max_tensor_bytes() == 1024
    with pytest.raises(
        qidao.ResourceError, match=r"input 'x': .* 16.0 KiB\) is larger"
    ):
        Graph("main").input("x", (64, 64))
    small = Graph("main")
    y = small.input("y", (16,))  # 64 bytes
    with pytest.raises(qidao.ResourceError, match=r"^constant: .* 4.0 KiB"):
        small.output(y + np.ones((64, 16), np.float32))  # the constant is 4 KiB
    with pytest.raises(qidao.ResourceError, match=r"^broadcast: .* 4.0 KiB"):
        small.broadcast(y, (64, 16))
    monkeypatch.setenv(ENV, "lots")
    with pytest.raises(ValueError, match=r"QIDAO_MAX_TENSOR_BYTES must be a number"):
        max_tensor_bytes()


def _floats(name: str, array: Any) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(array), name)


SMALL = 4096
"""The limit the cases below run under: each input fits, the result does not."""

GROWING = {
    "Add": _model(  # [64, 1] + [1, 64]: 256 B each, a 16 KiB broadcast
        [helper.make_node("Add", ["a", "b"], ["y"])],
        [],
        [
            _floats("a", np.ones((64, 1), np.float32)),
            _floats("b", np.ones((1, 64), np.float32)),
        ],
    ),
    "Where": _model(
        [helper.make_node("Where", ["c", "a", "b"], ["y"])],
        [],
        [
            _floats("c", np.ones((64, 1), bool)),
            _floats("a", np.ones((1, 64), np.float32)),
            _floats("b", np.float32(0)),
        ],
    ),
    "Gather": _model(  # 64 rows picked 64 times: 16 KiB
        [helper.make_node("Gather", ["d", "i"], ["y"], axis=0)],
        [],
        [_floats("d", np.ones((1, 64), np.float32)), _int64("i", [0] * 64)],
    ),
    "Concat": _model(  # one 1 KiB constant, 8 times
        [helper.make_node("Concat", ["a"] * 8, ["y"], axis=0)],
        [],
        [_floats("a", np.ones((16, 16), np.float32))],
    ),
    "Cast": _model(  # 2,048 bools (2 KiB) as float32 (8 KiB)
        [helper.make_node("Cast", ["a"], ["y"], to=TensorProto.FLOAT)],
        [],
        [_floats("a", np.ones(2048, bool))],
    ),
}


@pytest.mark.parametrize("op", sorted(GROWING))
def test_a_folded_result_beyond_the_limit_is_refused_before_numpy(
    op: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29, F17's siblings: a broadcast, a gather, a concatenation or a wider
    cast of constants within the limit can make a result beyond it; the folder
    checks the result's size before NumPy makes it."""
    from qidao.frontend.onnx import import_onnx

    monkeypatch.setenv(ENV, str(SMALL))
    with pytest.raises(
        qidao.ResourceError, match=rf"^{op} node '#0': a tensor of shape .* 4.0 KiB"
    ):
        import_onnx(GROWING[op])


def test_index_tables_are_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A uint8 output of 605 bytes fits; its int64 index table (4,840 bytes) of a
    Pad or Resize does not, and is refused before NumPy makes it."""
    from qidao.frontend.onnx import import_onnx

    monkeypatch.setenv(ENV, str(SMALL))
    pad = _model(
        [helper.make_node("Pad", ["x", "p"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [5])],
        [_int64("p", [0, 600])],
        TensorProto.UINT8,
    )
    with pytest.raises(
        qidao.ResourceError, match=r"^Pad node '#0' \(the index table of axis 0\)"
    ):
        import_onnx(pad)
    resize = _model(
        [helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="nearest")],
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 1, 10])],
        [_int64("s", [1, 1, 1, 600])],
        TensorProto.UINT8,
    )
    with pytest.raises(
        qidao.ResourceError, match=r"^Resize node '#0' \(the index table of axis 3\)"
    ):
        import_onnx(resize)


def test_a_builder_constant_is_checked_before_it_is_copied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``g.constant`` copies the array into the IR (and ``dtype=`` converts it
    first): both are checked against the limit before, naming the constant."""
    monkeypatch.setenv(ENV, str(SMALL))
    g = Graph("main")
    g.constant(np.zeros(1024, np.float32))  # 4 KiB: at the limit
    with pytest.raises(qidao.ResourceError, match=r"^constant 'w': .* 8.0 KiB"):
        g.constant(np.zeros(2048, np.float32), name="w")
    with pytest.raises(qidao.ResourceError, match=r"^constant: .* 8.0 KiB"):
        g.constant(np.zeros(1024, np.int8), dtype="float64")
    with pytest.raises(qidao.ResourceError, match=r"^constant: .* 8.0 KiB"):
        g.constant(np.zeros(2048, np.float64))  # made float32: 8 KiB
