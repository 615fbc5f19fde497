"""``qidao.frontend.einsum``: einsum equations as transposes, diagonals, sums and
batched matmuls, compiled with ``qidao.compile`` and checked against NumPy's
``einsum`` (float32 within matmul rounding; float64; integers exactly, via float64);
and the ``GraphError`` a malformed or ill-fitting equation gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph
from qidao.frontend.einsum import einsum, parse_equation
from qidao.frontend.errors import GraphError

Array = np.ndarray[Any, Any]

CASES: list[tuple[str, list[tuple[int, ...]]]] = [
    ("ij->ji", [(3, 4)]),
    ("ij->i", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("->", [()]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("...ii->...i", [(3, 5, 5)]),
    ("iij->j", [(3, 3, 2)]),
    ("i,i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij, bjk -> bik", [(5, 2, 3), (5, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 5, 8)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("abc,cd->abd", [(2, 3, 4), (4, 5)]),
    ("ik,jkl->ijl", [(2, 3), (4, 3, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]),
    ("Ba,aC->BC", [(2, 3), (3, 4)]),
]


def _run(equation: str, arrays: list[Array]) -> Array:
    g = Graph()
    values = [g.input(f"x{k}", a.shape, str(a.dtype)) for k, a in enumerate(arrays)]
    g.output(einsum(g, equation, values))
    (got,) = qidao.compile(g)(*arrays)
    return np.asarray(got)


@pytest.mark.parametrize(("equation", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_matches_numpy_float32(equation: str, shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(len(equation))
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = _run(equation, arrays)
    want = np.einsum(equation, *(a.astype(np.float64) for a in arrays))
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float64", "int32", "int64", "float16"])
def test_other_dtypes(dtype: str) -> None:
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((2, 3, 4)) * 10).astype(dtype)
    b = (rng.standard_normal((2, 4, 5)) * 10).astype(dtype)
    got = _run("bij,bjk->bki", [a, b])
    want = np.einsum("bij,bjk->bki", a.astype(np.float64), b.astype(np.float64))
    assert got.dtype == np.dtype(dtype)
    if dtype.startswith("int"):
        np.testing.assert_array_equal(got, want.astype(dtype))
    else:
        rtol = 1e-12 if dtype == "float64" else 2e-3
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 100)


def test_parse_equation_expands_ellipses_right_aligned() -> None:
    inputs, output = parse_equation("...ij,...j->...i", [4, 2])
    assert inputs == [["...0", "...1", "i", "j"], ["...1", "j"]]
    assert output == ["...0", "...1", "i"]
    assert parse_equation("ba,ac", [2, 2])[1] == ["b", "c"]


BAD: list[tuple[str, list[tuple[int, ...]], str]] = [
    ("ij,jk->ik", [(3, 4)], "has 2 operand"),
    ("ij->iz", [(3, 4)], "outputs 'z', which no operand has"),
    ("ij->ii", [(3, 4)], "repeats a letter in its output"),
    ("ijk->i", [(3, 4)], "does not fit an operand of rank 2"),
    ("i1->i", [(3, 4)], "uses '1'"),
    ("ij,jk->ik", [(3, 4), (5, 6)], "gives 'j' the sizes 4 and 5"),
    ("i..j->i", [(3, 4)], "malformed ellipsis"),
]


@pytest.mark.parametrize(
    ("equation", "shapes", "message"), BAD, ids=[b[0] for b in BAD]
)
def test_a_bad_equation_is_a_graph_error_naming_it(
    equation: str, shapes: list[tuple[int, ...]], message: str
) -> None:
    g = Graph()
    values = [g.input(f"x{k}", s) for k, s in enumerate(shapes)]
    with pytest.raises(GraphError, match=f"einsum: equation '{equation}'.*{message}"):
        einsum(g, equation, values)
