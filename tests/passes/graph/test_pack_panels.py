"""``pack-panels`` and ``tg.matmul``'s ``rhs_layout = "panels"``: the packing
against NumPy, matmuls through ``qidao.compile`` against NumPy (small and large
M, an epilogue, a batched lhs, one and two threads), the default schedule reading
the panels in place, and where it does not run."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.dialects.tg.linalg import PANEL_WIDTH, pack_panels, unpack_panels
from qidao.frontend.builder import Graph

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(11)


def rand(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


def test_packing_is_column_panels() -> None:
    w = rand(5, 96)
    packed = pack_panels(w)
    assert packed.shape == (3, 5, PANEL_WIDTH) and packed.flags.c_contiguous
    for p in range(3):
        np.testing.assert_array_equal(packed[p], w[:, 32 * p : 32 * p + 32])
    np.testing.assert_array_equal(unpack_panels(packed, 96), w)
    ragged = rand(5, 40)  # the last panel's 24 columns past N are zero
    packed = pack_panels(ragged)
    assert packed.shape == (2, 5, PANEL_WIDTH)
    np.testing.assert_array_equal(packed[1, :, :8], ragged[:, 32:])
    assert not packed[1, :, 8:].any()
    np.testing.assert_array_equal(unpack_panels(packed, 40), ragged)
    batched = rand(2, 4, 5, 64)  # each matrix in its panels
    packed = pack_panels(batched)
    assert packed.shape == (2, 4, 2, 5, PANEL_WIDTH)
    np.testing.assert_array_equal(packed[1, 2, 1], batched[1, 2, :, 32:64])
    np.testing.assert_array_equal(unpack_panels(packed, 64), batched)


@pytest.mark.parametrize(
    ("lhs", "rhs"), [((36, 16, 64), (36, 64, 64)), ((2, 3, 8, 64), (3, 64, 96))]
)
def test_batched_rhs_matches_numpy(lhs: tuple[int, ...], rhs: tuple[int, ...]) -> None:
    """A batched constant rhs (Winograd's 36 transformed filters; one broadcast
    over a batch of the lhs) packs matrix by matrix."""
    x, w = rand(*lhs), rand(*rhs)
    g = Graph("main")
    g.output(g.matmul(g.input("a", lhs), w))
    compiled = qidao.compile(g, threads=1)
    assert 'rhs_layout = "panels"' in compiled.ir("tg")
    np.testing.assert_allclose(compiled(x)[0], x @ w, rtol=1e-4, atol=1e-4)


def affine_model(m: int, k: int, n: int, batch: int = 0) -> tuple[Graph, Array, Array]:
    w, b = rand(k, n), rand(n)
    g = Graph("main")
    a = g.input("a", (batch, m, k) if batch else (m, k))
    g.output(g.relu(g.add(g.matmul(a, w), b)))
    return g, w, b


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("m", "k", "n", "batch"),
    [
        (1, 256, 512, 0),
        (9, 384, 256, 0),
        (16, 64, 1024, 0),
        (49, 96, 384, 0),
        (197, 64, 128, 0),
        (8, 64, 96, 3),
        (128, 256, 688, 0),  # N = 43 x 16: the last panel peeled (Llama's MLP)
        (16, 64, 1000, 0),  # N = 31 x 32 + 8
    ],
)
def test_packed_matmul_matches_numpy(
    m: int, k: int, n: int, batch: int, threads: int
) -> None:
    g, w, b = affine_model(m, k, n, batch)
    compiled = qidao.compile(g, threads=threads)
    assert 'rhs_layout = "panels"' in compiled.ir("tg")
    schedule = compiled.stats["schedule"]
    assert "s.cache_read" not in schedule  # the panels are read in place
    scheduled = compiled.ir("schedule")
    assert re.search(r"vector.load %\w*panels\[%j_o, %k, ", scheduled)
    x = rand(*((batch, m, k) if batch else (m, k)))
    want = np.maximum(x.astype(np.float64) @ w + b, 0)
    np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-4, atol=1e-4)


def test_not_packed_under_a_schedule_of_ones_own() -> None:
    """``pack_weights`` follows the schedule: one's own schedule meets the matmul
    as written (and ``pack_weights=False`` turns it off under the default)."""
    g, _, _ = affine_model(16, 64, 256)
    for options in ({"schedule": None}, {"pack_weights": False}):
        compiled = qidao.compile(g, threads=1, **options)
        assert "rhs_layout" not in compiled.ir("tg"), options


def test_packed_as_lowered_without_a_schedule() -> None:
    """``pack_weights=True`` with no schedule: the loops as lowered read
    ``w[j floordiv 32, k, j mod 32]``; the same numbers."""
    g, w, b = affine_model(16, 64, 256)
    compiled = qidao.compile(g, threads=1, schedule=None, pack_weights=True)
    assert 'rhs_layout = "panels"' in compiled.ir("tg")
    assert "floordiv 32" in compiled.ir("affine")
    x = rand(16, 64)
    want = np.maximum(x.astype(np.float64) @ w + b, 0)
    np.testing.assert_allclose(compiled(x)[0], want, rtol=1e-4, atol=1e-4)


def test_pack_weights_must_be_a_flag() -> None:
    g, _, _ = affine_model(16, 64, 256)
    with pytest.raises(TypeError, match="pack_weights must be None, True or False"):
        qidao.compile(g, pack_weights="yes")


def test_reference_interpreter_unpacks() -> None:
    """``numpy_eval`` (constant folding, ``checks``) reads the panels as B."""
    from xdsl.dialects import func
    from xdsl.parser import Parser

    from qidao.compiler.context import make_context
    from qidao.dialects.tg.numpy_eval import evaluate_function

    text = """
    func.func @main(%a: tensor<4x32xf32>, %p: tensor<2x32x32xf32>) -> tensor<4x64xf32> {
      %y = tg.matmul %a, %p rhs_layout = "panels" : (tensor<4x32xf32>, tensor<2x32x32xf32>) -> tensor<4x64xf32>
      func.return %y : tensor<4x64xf32>
    }
    """
    module = Parser(make_context(), text).parse_module()
    (fn,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    x, w = rand(4, 32), rand(32, 64)
    (got,) = evaluate_function(fn, [x, pack_panels(w)])
    np.testing.assert_allclose(got, x @ w, rtol=1e-5, atol=1e-5)
    ragged = text.replace("tensor<4x64xf32>", "tensor<4x40xf32>")
    module = Parser(make_context(), ragged).parse_module()
    (fn,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    (got,) = evaluate_function(fn, [x, pack_panels(w[:, :40])])
    np.testing.assert_allclose(got, x @ w[:, :40], rtol=1e-5, atol=1e-5)
