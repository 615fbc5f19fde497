"""The public entry points with bad input (issue 12, item 2): only ``QidaoError``
subclasses, or a documented ``TypeError``/``ValueError`` for Python-level misuse,
come out; never a bare ``BaseException`` subclass, ``RecursionError``,
``AssertionError``, ``KeyError``, ``AttributeError``, ``IndexError`` or
``MemoryError`` from deep inside."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper

import qidao
from qidao.frontend.builder import Graph

RAW = (RecursionError, AssertionError, KeyError, AttributeError, IndexError)


def _relu() -> Graph:
    g = Graph("main")
    x = g.input("x", (4, 41))
    g.output(g.relu(x))
    return g


def _take() -> Graph:
    g = Graph("main")
    g.output(g.take(g.input("x", (5,)), g.input("i", (1,), "int64"), 0))
    return g


def _div() -> Graph:
    g = Graph("main")
    g.output(g.div(g.input("a", (3,), "int32"), g.input("b", (3,), "int32")))
    return g


def _on_last_loop(method: str, *args: Any) -> Callable[[Any], None]:
    def schedule(s: Any) -> None:
        kernel = next(iter(s.kernels()))
        getattr(s, method)(kernel, s.loops(kernel)[-1], *args)

    return schedule


def _onnx(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    return path


def _valid_onnx() -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return bytes(model.SerializeToString())


CASES: dict[str, tuple[Callable[[Path], Any], type[BaseException]]] = {
    "schedule text that is not a schedule": (
        lambda _: qidao.compile(_relu(), schedule="not a schedule"),
        qidao.QidaoError,
    ),
    "a split with a loop that is a number": (
        lambda _: qidao.compile(_relu(), schedule="s.split('main_k0_relu', 5, 4)"),
        qidao.QidaoError,
    ),
    "vectorize with a boolean width": (
        lambda _: qidao.compile(_relu(), schedule=_on_last_loop("vectorize", True)),
        qidao.ScheduleError,
    ),
    "vectorize 2^31 lanes": (
        lambda _: qidao.compile(_relu(), schedule=_on_last_loop("vectorize", 1 << 31)),
        qidao.ScheduleError,
    ),
    "split by 0": (
        lambda _: qidao.compile(_relu(), schedule=_on_last_loop("split", 0)),
        qidao.ScheduleError,
    ),
    "opt_level 99": (lambda _: qidao.compile(_relu(), opt_level=99), ValueError),
    "a schedule that is an int": (
        lambda _: qidao.compile(_relu(), schedule=123),
        TypeError,
    ),
    "a missing model file": (
        lambda p: qidao.compile(p / "missing.onnx"),
        FileNotFoundError,
    ),
    "an onnx file of garbage": (
        lambda p: qidao.compile(_onnx(p, b"\x00garbage\xff" * 10)),
        qidao.ModelError,
    ),
    "a truncated onnx file": (
        lambda p: qidao.compile(_onnx(p, _valid_onnx()[:-7])),
        qidao.ModelError,
    ),
    "a big-endian input": (
        lambda _: qidao.compile(_relu())(np.zeros((4, 41), ">f4")),
        qidao.ArgumentError,
    ),
    "a list instead of an array": (
        lambda _: qidao.compile(_relu())([[1.0]]),
        qidao.ArgumentError,
    ),
    "checks=True and an index out of range": (
        lambda _: qidao.compile(_take(), checks=True)(
            np.zeros(5, np.float32), np.array([5])
        ),
        qidao.CheckError,
    ),
    "checks=True and an integer division by zero": (
        lambda _: qidao.compile(_div(), checks=True)(
            np.ones(3, np.int32), np.zeros(3, np.int32)
        ),
        qidao.CheckError,
    ),
    "too many arguments": (
        lambda _: qidao.compile(_relu())(np.zeros((4, 41), np.float32), 1),
        qidao.ArgumentError,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gives_a_clear_error(case: str, tmp_path: Path) -> None:
    run, expected = CASES[case]
    with pytest.raises(BaseException) as info:
        run(tmp_path)
    err = info.value
    assert isinstance(err, Exception), f"{case}: a bare {type(err).__name__}"
    assert not isinstance(err, RAW) or isinstance(err, qidao.QidaoError), (
        f"{case}: raw {type(err).__name__}: {err}"
    )
    assert isinstance(err, expected), f"{case}: {type(err).__name__}: {err}"
    assert str(err), f"{case}: an empty message"


def test_the_hierarchy() -> None:
    for name in (
        "ModelError",
        "UnsupportedError",
        "ScheduleError",
        "RecordsError",
        "ArgumentError",
        "ResourceError",
        "CheckError",
        "InternalCompilerError",
    ):
        assert issubclass(getattr(qidao, name), qidao.QidaoError), name
    assert issubclass(qidao.UnsupportedError, qidao.ModelError)
    assert issubclass(qidao.ArgumentError, TypeError | ValueError)
    assert issubclass(qidao.CheckError, ValueError)
    from qidao.frontend.errors import FrontendError, UnsupportedOpsError

    assert issubclass(FrontendError, qidao.ModelError)
    assert issubclass(UnsupportedOpsError, qidao.UnsupportedError)
