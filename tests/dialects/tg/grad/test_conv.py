"""The vjp rule of ``tg.conv2d`` and ``conv2d_grads``: float64 central differences
(``gradcheck.py``) and ``torch.autograd`` over strides, symmetric and asymmetric
padding, dilation, groups (depthwise included) and bias; hypothesis draws more
geometries against PyTorch; one small CNN compiled end to end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType
from xdsl.parser import Parser

import qidao
from qidao.compiler.context import make_context
from qidao.dialects.tg.base import ints
from qidao.dialects.tg.grad.conv import conv2d_grads
from qidao.dialects.tg.grad.emit import Emit
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph, Value
from qidao.passes.graph.autodiff import AutodiffError, AutodiffPass
from tests.dialects.tg.grad.gradcheck import check_vjp
from tests.dialects.tg.grad.torch_oracle import check_against_torch

COVERS = {"tg.conv2d"}
"""The ops whose vjp rules this file checks (``test_coverage.py``)."""

RNG = np.random.default_rng(11)


@dataclass(frozen=True)
class Conv:
    """One convolution: input and weight shapes and the op's properties."""

    x: tuple[int, int, int, int]
    w: tuple[int, int, int, int]
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, left, bottom, right
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    bias: bool = True

    def inputs(self) -> list[np.ndarray]:
        arrays = [RNG.standard_normal(self.x), RNG.standard_normal(self.w)]
        return [*arrays, RNG.standard_normal(self.w[0])] if self.bias else arrays

    def build(self, g: Graph, x: Value, w: Value, b: Value | None = None) -> Value:
        return g.conv2d(
            x,
            w,
            b,
            strides=self.strides,
            padding=self.padding,
            dilation=self.dilation,
            groups=self.groups,
        )

    def torch(self, x: Any, w: Any, b: Any = None) -> torch.Tensor:
        top, left, bottom, right = self.padding
        return F.conv2d(
            F.pad(x, (left, right, top, bottom)),
            w,
            b,
            stride=self.strides,
            dilation=self.dilation,
            groups=self.groups,
        )

    def out_shape(self) -> tuple[int, ...]:
        return tuple(self.torch(torch.zeros(self.x), torch.zeros(self.w)).shape)


CASES = {
    "plain": Conv((2, 3, 5, 5), (4, 3, 3, 3)),
    "stride 2, padding 1, no bias": Conv(
        (1, 2, 6, 7), (3, 2, 3, 3), (2, 2), (1, 1, 1, 1), bias=False
    ),
    "asymmetric padding, stride (2, 1)": Conv(
        (1, 2, 6, 5), (3, 2, 2, 3), (2, 1), (0, 1, 2, 0)
    ),
    "dilation 2": Conv((1, 2, 7, 7), (2, 2, 3, 2), (1, 1), (2, 1, 2, 1), (2, 2)),
    "groups 2, stride 2, dilation (1, 2)": Conv(
        (2, 4, 6, 7), (6, 2, 3, 3), (2, 2), (1, 1, 1, 1), (1, 2), 2
    ),
    "depthwise": Conv((2, 3, 5, 6), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), groups=3),
    "depthwise, multiplier 2, stride 2": Conv(
        (1, 2, 6, 6), (4, 1, 3, 3), (2, 2), (1, 0, 0, 1), groups=2, bias=False
    ),
    "stride past the window (rows never read)": Conv(
        (1, 2, 7, 5), (2, 2, 2, 1), (3, 3)
    ),
    "padding beyond the window": Conv((1, 2, 3, 3), (2, 2, 1, 1), (3, 2), (4, 1, 4, 0)),
    "every window on padding": Conv((1, 1, 1, 2), (1, 1, 1, 1), (3, 3), (1, 0, 1, 0)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_conv2d_central_differences(name: str) -> None:
    case = CASES[name]
    check_vjp(case.build, case.inputs())


@pytest.mark.parametrize("name", list(CASES))
def test_conv2d_matches_torch(name: str) -> None:
    case = CASES[name]
    check_against_torch(case.build, case.torch, case.inputs(), case.out_shape())


@st.composite
def convs(draw: st.DrawFn) -> Conv:
    groups = draw(st.integers(1, 3))
    per_group_in, per_group_out = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = tuple(draw(st.integers(0, 2)) for _ in range(4))
    size = []
    for k in range(2):
        extent = dilation[k] * (kernel[k] - 1) + 1
        least = max(1, extent - padding[k] - padding[k + 2])
        size.append(draw(st.integers(least, least + 4)))
    return Conv(
        (draw(st.integers(1, 2)), groups * per_group_in, size[0], size[1]),
        (groups * per_group_out, per_group_in, *kernel),
        strides,
        padding,  # type: ignore[arg-type]
        dilation,
        groups,
        draw(st.booleans()),
    )


@settings(max_examples=25, deadline=None)
@given(convs())
def test_conv2d_drawn_geometries_match_torch(case: Conv) -> None:
    check_against_torch(case.build, case.torch, case.inputs(), case.out_shape())


def test_conv2d_grads_for_a_frontend() -> None:
    """``conv2d_grads`` on its own (as aten's ``convolution_backward`` uses it):
    ``(dx, dw)`` of a given output gradient, padding in the op's order."""
    case = Conv((2, 4, 7, 6), (4, 2, 3, 2), (2, 1), (2, 0, 1, 1), (1, 2), 2)
    out = case.out_shape()
    g = Graph("main")
    x = g.input("x", case.x, "float64")
    g.input("w", case.w, "float64")
    g.input("gy", out, "float64")
    g.output(x)  # replaced by (dx, dw) below
    module = g.module()
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    ret = fn.body.blocks[0].last_op
    assert isinstance(ret, func.ReturnOp)
    dx, dw = conv2d_grads(
        Emit(ret),
        *fn.args,
        strides=case.strides,
        padding=case.padding,
        dilation=case.dilation,
        groups=case.groups,
    )
    ret.operands = [dx, dw]
    fn.function_type = FunctionType.from_lists(
        fn.function_type.inputs.data, [dx.type, dw.type]
    )
    module.verify()
    arrays = [RNG.standard_normal(case.x), RNG.standard_normal(case.w)]
    arrays.append(RNG.standard_normal(out))
    got = evaluate_function(fn, arrays)
    tx, tw = (torch.tensor(a, requires_grad=True) for a in arrays[:2])
    case.torch(tx, tw).backward(torch.tensor(arrays[2]))
    np.testing.assert_allclose(got[0], tx.grad.numpy(), rtol=1e-10)  # type: ignore[union-attr]
    np.testing.assert_allclose(got[1], tw.grad.numpy(), rtol=1e-10)  # type: ignore[union-attr]


def _grads_of(case: Conv) -> list[Any]:
    """The ops ``conv2d_grads`` emits for ``case`` (float32)."""
    g = Graph("main")
    x, _, _ = (
        g.input("x", case.x),
        g.input("w", case.w),
        g.input("gy", case.out_shape()),
    )
    g.output(x)
    module = g.module()
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    ret = fn.body.blocks[0].last_op
    assert isinstance(ret, func.ReturnOp)
    kw = dict(strides=case.strides, padding=case.padding, dilation=case.dilation)
    conv2d_grads(Emit(ret), *fn.args, **kw, groups=case.groups)  # type: ignore[arg-type]
    return [op for op in fn.walk() if op.name.startswith("tg.")]


def test_a_strided_input_gradient_is_one_small_convolution_per_phase() -> None:
    """Stride 2, 3x3: the four phases of dx read g through 1x1, 1x2, 2x1 and 2x2
    taps of the flipped kernel (9 in all, as many as the forward), never a g
    dilated with zeros (4x the work); dw is one im2col matmul over the 9 taps."""
    ops = _grads_of(Conv((2, 3, 8, 8), (4, 3, 3, 3), (2, 2), (1, 1, 1, 1), bias=False))
    convs = [op for op in ops if op.name == "tg.conv2d"]
    kernels = sorted(tuple(op.weight.type.get_shape()[2:]) for op in convs)
    assert kernels == [(1, 1), (1, 2), (2, 1), (2, 2)], kernels
    assert all(list(ints(op.strides)) == [1, 1] for op in convs)
    # no g dilated with zeros ([2, 4, 4, 4] spread to 8 x 8 rows and columns)
    dilated = [
        op
        for op in ops
        if op.name == "tg.pad" and len(op.operands[0].type.get_shape()) == 6
    ]
    assert not dilated, dilated
    (matmul,) = [op for op in ops if op.name == "tg.matmul"]
    assert matmul.result.type.get_shape() == (1, 4, 27)  # [groups, F, taps C]
    im2col = [op for op in ops if op.name == "tg.concat" and len(op.operands) == 9]
    assert len(im2col) == 1


NHWC_CONV = """
func.func @main(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x3x3x4xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x5x5x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x3x3x4xf32>
  func.return %y : tensor<1x3x3x4xf32>
}
"""


def test_nhwc_conv2d_is_refused_naming_the_op() -> None:
    module = Parser(make_context(), NHWC_CONV).parse_module()
    with pytest.raises(AutodiffError, match=r"tg\.conv2d: no gradient for layout NHWC"):
        AutodiffPass(wrt=("x",)).apply(Context(), module)


def test_a_small_cnn_compiled_matches_torch() -> None:
    """conv (groups 2, stride 2, asymmetric padding) -> batch_norm -> relu ->
    max_pool (padded) -> avg_pool, compiled for the CPU in float32: every gradient as
    autograd's."""
    eps = 2.0**-10
    g = Graph("main")
    x, w, b = g.input("x", (2, 4, 9, 9)), g.input("w", (6, 2, 3, 3)), g.input("b", (6,))
    s, bb, m, v = (g.input(n, (6,)) for n in ("s", "bb", "m", "v"))
    y = g.conv2d(x, w, b, strides=2, padding=(1, 0, 1, 1), groups=2)
    y = g.max_pool2d(g.relu(g.batch_norm(y, s, bb, m, v, epsilon=eps)), 3, 1, 1)
    y = g.avg_pool2d(y, 2, 2, 1)
    g.output(g.reduce_sum(y * y, [0, 1, 2, 3]))
    names = ["x", "w", "b", "s", "bb", "m", "v"]
    f = qidao.compile(g, grad=names)
    arrays = [
        RNG.standard_normal((2, 4, 9, 9)),
        RNG.standard_normal((6, 2, 3, 3)) * 0.3,
        RNG.standard_normal(6),
        RNG.uniform(0.5, 2.0, 6),
        RNG.standard_normal(6),
        RNG.standard_normal(6) * 0.1,
        RNG.uniform(0.5, 2.0, 6),
    ]
    arrays = [a.astype(np.float32) for a in arrays]
    _, *grads = f(*arrays)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    tx, tw, tb, ts_, tbb, tm, tv = ts
    ty = F.conv2d(F.pad(tx, (0, 1, 1, 1)), tw, tb, stride=2, groups=2)
    ty = (ty - tm[:, None, None]) / torch.sqrt(tv[:, None, None] + eps)
    ty = F.relu(ty * ts_[:, None, None] + tbb[:, None, None])
    ty = F.avg_pool2d(F.max_pool2d(ty, 3, 1, 1), 2, 2, 1, count_include_pad=False)
    (ty * ty).sum().backward()
    for name, got, t in zip(names, grads, ts, strict=True):
        want = t.grad.numpy()  # type: ignore[union-attr]
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(got, want, atol=1e-5 * scale, err_msg=name)
