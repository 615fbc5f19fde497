"""ONNX ``Einsum`` (``qidao/frontend/onnx/einsum.py``) compiled with
``qidao.compile``, against ONNX Runtime on the same model and inputs; and the error
naming the node and the equation for one that does not fit its inputs. The
equations themselves are covered in ``tests/frontend/test_einsum.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import helper

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")


def model(equation: str, shapes: list[tuple[int, ...]], out: tuple[int, ...]) -> Any:
    names = [f"x{k}" for k in range(len(shapes))]
    graph = helper.make_graph(
        [helper.make_node("Einsum", names, ["y"], equation=equation, name="mix")],
        "einsum",
        [
            helper.make_tensor_value_info(n, 1, s)
            for n, s in zip(names, shapes, strict=True)
        ],
        [helper.make_tensor_value_info("y", 1, out)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])


CASES = [
    ("bij,bjk->bik", [(5, 2, 3), (5, 3, 4)], (5, 2, 4)),
    ("bhqd,bhkd->bhqk", [(1, 2, 4, 8), (1, 2, 6, 8)], (1, 2, 4, 6)),
    ("...ii->...i", [(3, 5, 5)], (3, 5)),
    ("i,i", [(5,), (5,)], ()),
    ("ij,jk,kl->li", [(2, 3), (3, 4), (4, 5)], (5, 2)),
]


@pytest.mark.parametrize(
    ("equation", "shapes", "out"), CASES, ids=[c[0] for c in CASES]
)
def test_against_onnxruntime(
    equation: str, shapes: list[tuple[int, ...]], out: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(0)
    arrays = {
        f"x{k}": rng.standard_normal(s).astype(np.float32) for k, s in enumerate(shapes)
    }
    m = model(equation, shapes, out)
    (want,) = ort.InferenceSession(m.SerializeToString()).run(None, arrays)
    (got,) = qidao.compile(m)(*arrays.values())
    assert np.asarray(got).shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_an_equation_that_does_not_fit_is_an_error_naming_it() -> None:
    m = model("ij,jk->ik", [(3, 4), (5, 6)], (3, 6))
    with pytest.raises(OnnxImportError, match=r"mix.*'ij,jk->ik' gives 'j' the sizes"):
        import_onnx(m)
