"""The vjp rules of ``tg.max_pool2d`` and ``tg.avg_pool2d``: float64 central
differences (``gradcheck.py``) with and without padding (symmetric, asymmetric,
ceil-mode end padding), dilation and ``count_include_pad`` both ways; against
``torch.autograd``, max-pool ties (the first maximum in row-major order takes the
gradient, padding none), drawn by hypothesis on inputs full of equal values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.parser import Parser

from qidao.compiler.context import make_context
from qidao.frontend.builder import Graph, Value
from qidao.passes.graph.autodiff import AutodiffError, AutodiffPass
from tests.dialects.tg.grad.gradcheck import check_vjp
from tests.dialects.tg.grad.torch_oracle import check_against_torch, ours

COVERS = {"tg.max_pool2d", "tg.avg_pool2d"}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""

RNG = np.random.default_rng(5)


@dataclass(frozen=True)
class Pool:
    """One pool: input shape, kernel, strides, [top, left, bottom, right], dilation."""

    x: tuple[int, int, int, int]
    kernel: tuple[int, int]
    strides: tuple[int, int]
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilation: tuple[int, int] = (1, 1)

    def distinct(self) -> np.ndarray:
        """Values 0.1 apart, shuffled: no ties, so the max is differentiable."""
        size = int(np.prod(self.x))
        return RNG.permutation(size).reshape(self.x) * 0.1 - size * 0.05

    def max(self, g: Graph, x: Value) -> Value:
        return g.max_pool2d(x, self.kernel, self.strides, self.padding, self.dilation)

    def avg(self, count_include_pad: bool) -> Any:
        def build(g: Graph, x: Value) -> Value:
            return g.avg_pool2d(
                x,
                self.kernel,
                self.strides,
                self.padding,
                count_include_pad,
                self.dilation,
            )

        return build


CASES = {
    "2x2 stride 2": Pool((2, 2, 4, 4), (2, 2), (2, 2)),
    "3x3 stride 2 padding 1": Pool((1, 2, 5, 5), (3, 3), (2, 2), (1, 1, 1, 1)),
    "asymmetric": Pool((1, 2, 5, 6), (2, 3), (1, 2), (1, 1, 0, 1)),
    "ceil mode (end padding)": Pool((1, 1, 5, 5), (2, 2), (2, 2), (0, 0, 1, 1)),
    "dilation 2 padding 1": Pool((1, 1, 6, 6), (2, 2), (1, 1), (1, 1, 1, 1), (2, 2)),
    "stride past the window": Pool((1, 1, 5, 7), (2, 1), (3, 3)),
    "a tap that only reads padding": Pool((1, 1, 2, 2), (3, 3), (3, 3), (2, 2, 2, 2)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_max_pool2d_central_differences(name: str) -> None:
    case = CASES[name]
    check_vjp(case.max, [case.distinct()])


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("name", list(CASES))
def test_avg_pool2d_central_differences(name: str, count_include_pad: bool) -> None:
    case = CASES[name]
    check_vjp(case.avg(count_include_pad), [RNG.standard_normal(case.x)])


def _torch_max(
    kernel: Any, strides: Any, padding: int, dilation: Any = 1, ceil: bool = False
) -> Any:
    def reference(x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(x, kernel, strides, padding, dilation, ceil_mode=ceil)

    return reference


TIES = np.array(
    [
        [
            [
                [1.0, 1.0, 2.0, 0.0],
                [1.0, 0.0, 2.0, 2.0],
                [3.0, 3.0, 0.0, 0.0],
                [3.0, 3.0, 0.0, 0.0],
            ]
        ]
    ]
)


@pytest.mark.parametrize(
    ("x", "kernel", "strides", "padding"),
    [
        (TIES, 2, 2, 0),
        (TIES, 2, 1, 0),
        (TIES, 3, 1, 1),
        (np.zeros((1, 2, 4, 4)), 3, 1, 1),  # padding (0 in the rule) ties with 0
        (-np.ones((1, 1, 3, 5)), 3, 2, 1),
    ],
    ids=["2x2/2", "2x2/1", "3x3/1 pad 1", "zeros pad 1", "minus ones pad 1"],
)
def test_max_pool2d_ties_go_to_the_first_maximum_as_in_torch(
    x: np.ndarray, kernel: int, strides: int, padding: int
) -> None:
    reference = _torch_max(kernel, strides, padding)
    out = reference(torch.tensor(x)).shape

    def build(g: Graph, a: Value) -> Value:
        return g.max_pool2d(a, kernel, strides, padding)

    check_against_torch(build, reference, [x], out, rtol=0)


def test_a_window_wholly_on_padding_sends_nothing_back() -> None:
    """A dilated window over a 1-row input reads only padding: its max is -inf and
    no input element reaches the output, so the gradient is 0 (PyTorch's CPU max
    pool corrupts its heap on this input, hence no comparison with it); the mean
    counting the padding checks against central differences."""
    x = np.ones((1, 1, 1, 2))

    def build(g: Graph, a: Value) -> Value:
        return g.max_pool2d(a, (2, 1), 1, (1, 0), (2, 1))

    (got,) = ours(build, [x], np.ones((1, 1, 1, 2)), [0])
    np.testing.assert_array_equal(got, np.zeros_like(x))
    check_vjp(lambda g, a: g.avg_pool2d(a, (2, 1), 1, (1, 0), True, (2, 1)), [x])


def _every_window_reads_the_input(
    size: int, kernel: int, stride: int, padding: int, dilation: int
) -> bool:
    out = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    rows = np.arange(out)[:, None] * stride + np.arange(kernel) * dilation - padding
    return bool(((rows >= 0) & (rows < size)).any(axis=1).all())


@st.composite
def tied_pools(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, ...]]:
    """Small integer inputs (many ties) and a geometry PyTorch accepts."""
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = (
        draw(st.integers(0, kernel[0] // 2)),
        draw(st.integers(0, kernel[1] // 2)),
    )
    size = [
        draw(st.integers(max(1, dilation[k] * (kernel[k] - 1) + 1 - 2 * padding[k]), 7))
        for k in range(2)
    ]
    for k in range(2):  # else PyTorch's max pool writes out of bounds
        assume(
            _every_window_reads_the_input(
                size[k], kernel[k], strides[k], padding[k], dilation[k]
            )
        )
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), *size)
    seed = draw(st.integers(0, 2**16))
    x = np.random.default_rng(seed).integers(-2, 2, shape).astype(np.float64)
    return x, (*kernel, *strides, *padding, *dilation)


@settings(max_examples=25, deadline=None)
@given(tied_pools())
def test_max_pool2d_drawn_ties_match_torch(
    drawn: tuple[np.ndarray, tuple[int, ...]],
) -> None:
    x, (kh, kw, sh, sw, ph, pw, dh, dw) = drawn
    reference = _torch_max((kh, kw), (sh, sw), (ph, pw), (dh, dw))  # type: ignore[arg-type]

    def build(g: Graph, a: Value) -> Value:
        return g.max_pool2d(a, (kh, kw), (sh, sw), (ph, pw), (dh, dw))

    check_against_torch(build, reference, [x], reference(torch.tensor(x)).shape, rtol=0)


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize(
    ("shape", "kernel", "strides", "padding"),
    [
        ((2, 2, 5, 5), 2, 2, 0),
        ((1, 2, 6, 5), 3, 2, 1),
        ((1, 1, 7, 6), (3, 2), 1, (1, 1)),
    ],
)
def test_avg_pool2d_matches_torch(
    shape: tuple[int, ...],
    kernel: Any,
    strides: int,
    padding: Any,
    count_include_pad: bool,
) -> None:
    x = RNG.standard_normal(shape)

    def build(g: Graph, a: Value) -> Value:
        return g.avg_pool2d(a, kernel, strides, padding, count_include_pad)

    def reference(a: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(
            a, kernel, strides, padding, count_include_pad=count_include_pad
        )

    check_against_torch(build, reference, [x], reference(torch.tensor(x)).shape)


def test_ceil_mode_as_end_padding_matches_torch() -> None:
    """PyTorch's ``ceil_mode`` is the pool with one more row and column of end
    padding: max and mean (real elements only) agree with it."""
    x = RNG.standard_normal((1, 2, 5, 5))
    reference = _torch_max(2, 2, 0, ceil=True)
    out = reference(torch.tensor(x)).shape
    check_against_torch(
        lambda g, a: g.max_pool2d(a, 2, 2, (0, 0, 1, 1)), reference, [x], out
    )

    def avg(a: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(a, 2, 2, ceil_mode=True, count_include_pad=False)

    check_against_torch(lambda g, a: g.avg_pool2d(a, 2, 2, (0, 0, 1, 1)), avg, [x], out)


NHWC_POOL = """
func.func @main(%x: tensor<1x4x4x2xf32>) -> tensor<1x2x2x2xf32> {
  %y = tg.{op} %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] {extra}layout = "NHWC" : tensor<1x4x4x2xf32> -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}
"""


@pytest.mark.parametrize(
    ("op", "extra"), [("max_pool2d", "dilation = [1, 1] "), ("avg_pool2d", "")]
)
def test_nhwc_pools_are_refused_naming_the_op(op: str, extra: str) -> None:
    text = NHWC_POOL.replace("{op}", op).replace("{extra}", extra)
    module = Parser(make_context(), text).parse_module()
    with pytest.raises(AutodiffError, match=rf"tg\.{op}: no gradient for layout NHWC"):
        AutodiffPass(wrt=("x",)).apply(Context(), module)
