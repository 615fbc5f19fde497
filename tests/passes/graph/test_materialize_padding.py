"""``tg.pad`` and ``materialize-padding`` against NumPy.

The pad kernel (``lowering/pad.py``) must give ``np.pad``'s answer bit for bit,
whatever the input's layout; a convolution whose padding ``materialize-padding``
moved into a ``tg.pad`` must give the same answer as NumPy's convolution, and so
must one it left alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.ir import Block

import qidao
from qidao.dialects import tg
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.dialects.tg.types import tensor_type
from qidao.frontend.builder import Graph
from qidao.passes.graph.materialize_padding import should_materialize

Array = np.ndarray[Any, Any]


def assert_close(got: Array, want: Array, rtol: float = 1e-4) -> None:
    """Equal within float32 accumulation error; on failure, name the worst index
    and the two values."""
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    atol = rtol * max(1.0, float(np.abs(want).max()))
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        bad = np.unravel_index(np.argmax(np.abs(got - want)), want.shape)
        index = tuple(int(i) for i in bad)
        pytest.fail(f"differs at {index}: got {got[bad]}, expected {want[bad]}")


# --- tg.pad -------------------------------------------------------------------------

PAD_CASES = [
    # (input shape, transpose perm or None, low, high, value)
    ((2, 3, 4, 5), (0, 2, 3, 1), (0, 1, 2, 0), (0, 1, 0, 0), -1.5),
    ((1, 8, 6, 6), (0, 2, 3, 1), (0, 1, 1, 0), (0, 1, 1, 0), 0.0),
    ((3, 4), None, (0, 2), (1, 3), 2.0),
    ((5,), None, (3,), (0,), 0.25),
    ((2, 3), None, (0, 0), (0, 0), 7.0),
    ((2, 3, 4), (2, 0, 1), (1, 0, 1), (0, 2, 1), 0.0),
]


@pytest.mark.parametrize("mode", ["graph", "eager"])
@pytest.mark.parametrize(("shape", "perm", "low", "high", "value"), PAD_CASES)
def test_pad_matches_numpy(
    shape: tuple[int, ...],
    perm: tuple[int, ...] | None,
    low: tuple[int, ...],
    high: tuple[int, ...],
    value: float,
    mode: str,
) -> None:
    g = Graph()
    x = g.input("x", shape)
    source = x if perm is None else g.transpose(x, perm)
    g.output(g.pad(source, low, high, value=value))
    compiled = qidao.compile(g, mode=mode)
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    moved = a if perm is None else np.transpose(a, perm)
    want = np.pad(moved, list(zip(low, high, strict=True)), constant_values=value)
    (got,) = compiled(a)
    np.testing.assert_array_equal(got, want)
    (reference,) = evaluate_function(_graph_function(g), [a])
    np.testing.assert_array_equal(reference, want)


def test_pad_of_a_view_is_one_copy_kernel() -> None:
    """The transpose is a view: the pad kernel reads through it, no other kernel."""
    g = Graph()
    x = g.input("x", (1, 4, 5, 6))
    g.output(g.pad(g.transpose(x, (0, 2, 3, 1)), (0, 1, 1, 0)))
    compiled = qidao.compile(g)
    assert compiled.stats["kernels"] == 1
    assert 'qd.kernel = "tg.pad"' in compiled.ir("affine")


def test_pad_high_defaults_to_low_and_folds() -> None:
    """``Graph.pad`` without ``high`` pads both sides; a constant's pad folds."""
    g = Graph()
    x = g.input("x", (2, 2))
    c = g.pad(g.constant(np.ones((1, 2), np.float32)), (1, 0))
    g.output(g.pad(x, (1, 2)) * 1.0, c)
    compiled = qidao.compile(g)
    assert compiled.ir("tg").count("tg.pad") == 1  # the constant's pad folded
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    got, folded = compiled(a)
    np.testing.assert_array_equal(got, np.pad(a, ((1, 1), (2, 2))))
    np.testing.assert_array_equal(folded, np.pad(np.ones((1, 2)), ((1, 1), (0, 0))))


def test_pad_rejects_bad_amounts() -> None:
    g = Graph()
    x = g.input("x", (2, 3))
    with pytest.raises(Exception, match="one amount per dimension"):
        g.pad(x, (1,))
    with pytest.raises(Exception, match=">= 0"):
        g.pad(x, (0, -1))


# --- materialize-padding: numerics on both sides of the rule ------------------------

CONV_CASES = [
    # (N, C, H, W, F, stride, padding, expect the pass to fire)
    (1, 3, 7, 9, 5, 2, 1, False),  # 5 output channels: not whole vectors
    (1, 3, 7, 9, 64, 2, 1, True),
    (1, 16, 7, 9, 32, 1, 1, True),
    (2, 8, 6, 5, 16, 1, (1, 2), True),
    (1, 8, 6, 6, 16, 1, 0, False),  # no padding
]


@pytest.mark.parametrize(
    ("n", "c", "h", "w", "f", "stride", "pad", "fires"), CONV_CASES
)
def test_conv_numerics(
    n: int,
    c: int,
    h: int,
    w: int,
    f: int,
    stride: int,
    pad: int | tuple[int, int],
    fires: bool,
) -> None:
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((f, c, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(f).astype(np.float32)
    g = Graph()
    x = g.input("x", (n, c, h, w))
    g.output(g.relu(g.conv2d(x, weight, bias, strides=stride, padding=pad)))
    compiled = qidao.compile(g)
    assert ("tg.pad" in compiled.ir("tg")) == fires
    a = rng.standard_normal((n, c, h, w)).astype(np.float32)
    (want,) = evaluate_function(_graph_function(g), [a])
    (got,) = compiled(a)
    assert_close(got, want)
    (plain,) = qidao.compile(g, schedule=None)(a)  # without the default schedule
    assert_close(plain, want)


def test_rule_is_what_the_docstring_says() -> None:
    """A 3x3 conv 64 -> 64 on 56x56 fires; its 1x1 twin to 16 channels does not."""
    block = Block(arg_types=[tensor_type((1, 56, 56, 64))])
    w3 = tg.ConstantOp.from_numpy(np.zeros((3, 3, 64, 64), np.float32))
    w1 = tg.ConstantOp.from_numpy(np.zeros((1, 1, 64, 16), np.float32))
    x = block.args[0]
    big = tg.Conv2dOp(x, w3.result, padding=(1, 1, 1, 1), layout="NHWC")
    small = tg.Conv2dOp(x, w1.result, padding=(1, 1, 1, 1), layout="NHWC")
    assert should_materialize(big)
    assert not should_materialize(small)


def _graph_function(g: Graph) -> func.FuncOp:
    return next(op for op in g.module().walk() if isinstance(op, func.FuncOp))
