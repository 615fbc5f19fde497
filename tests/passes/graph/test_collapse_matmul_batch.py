"""``collapse-matmul-batch`` in the pipeline: a batched lhs times a 2-D rhs compiles
to one matmul nest of ``prod(b) * M`` rows, and computes what NumPy does.

Each case builds a graph (with the Python builder, or as an ONNX model), compiles
it with ``qidao.compile`` and compares with NumPy in float64; the IR checks look at
the ``tg`` stage (the 2-D matmul) and the ``affine`` stage (its ``i`` loop runs over
every row, and no batch loop ``b0`` is left).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.frontend.builder import Graph, Value

Array = np.ndarray[Any, Any]
rng = np.random.default_rng(11)


def rand(*shape: int) -> Array:
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def assert_close(
    got: Array, want: Array, rtol: float = 1e-5, atol: float = 1e-5
) -> None:
    """Equal shapes and values; a mismatch names the first index and both values."""
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"mismatch at index {idx}: got {got[idx]!r}, expected {want[idx]!r} "
            f"({int(bad.sum())} of {bad.size} differ)"
        )


def compile_graph(
    build: Callable[..., Value], inputs: dict[str, Array], **options: Any
) -> qidao.Compiled:
    g = Graph("main")
    values = [g.input(name, a.shape) for name, a in inputs.items()]
    g.output(build(g, *values))
    compiled = qidao.compile(g, **options)
    assert isinstance(compiled, qidao.Compiled)
    return compiled


def loop_extents(affine: str) -> dict[str, int]:
    """Loop name -> extent for every loop of ``affine`` (the lowering names each
    induction variable after its ``qd.loop``; the last loop of a name wins)."""
    pattern = r"affine\.for %(\w+) = 0 to (\d+) "
    return {name: int(extent) for name, extent in re.findall(pattern, affine)}


def kernels(affine: str) -> list[str]:
    """The ``qd.kernel`` label of every kernel, in order."""
    return re.findall(r'qd\.kernel = "([^"]+)"', affine)


def gelu(x: Array) -> Array:
    erf: Array = np.vectorize(math.erf)(x / math.sqrt(2.0))
    return x * 0.5 * (1.0 + erf)


# ----------------------------------------------------------------------------------
# fires


def test_bare_matmul_runs_as_one_matmul_of_nine_rows() -> None:
    x, w = rand(1, 3, 3, 64), rand(64, 32)
    compiled = compile_graph(lambda g, x, w: x @ w, {"x": x, "w": w})
    tg_ir = compiled.ir("tg")
    assert "(tensor<9x64xf32>, tensor<64x32xf32>) -> tensor<9x32xf32>" in tg_ir, tg_ir
    affine = compiled.ir("affine")
    extents = loop_extents(affine)
    assert extents["i"] == 9, affine
    assert "b0" not in extents, affine
    (got,) = compiled(x, w)
    assert_close(got, x.astype(np.float64) @ w)


def test_fused_bias_gelu_residual_on_a_batch_of_sequences() -> None:
    x, w, b, r = rand(2, 7, 48), rand(48, 32), rand(32), rand(2, 7, 32)

    def build(g: Graph, x: Value, w: Value, b: Value, r: Value) -> Value:
        h = x @ w + b
        act = h * 0.5 * (g.erf(h / math.sqrt(2.0)) + 1.0)
        return act + r

    compiled = compile_graph(build, {"x": x, "w": w, "b": b, "r": r})
    assert "-> tensor<14x32xf32>" in compiled.ir("tg")
    affine = compiled.ir("affine")
    # one kernel for the whole group; the output, a view of its [14, 32] result,
    # is copied into the caller's buffer
    assert kernels(affine) == [
        "tg.matmul+tg.add+tg.mul+tg.div+tg.erf+tg.add+tg.mul+tg.add",
        "copy",
    ]
    extents = loop_extents(affine)
    assert extents["i"] == 14 and "b0" not in extents
    (got,) = compiled(x, w, b, r)
    want = gelu(x.astype(np.float64) @ w + b) + r
    assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_one_row_per_batch() -> None:
    x, w, b = rand(2, 1, 48), rand(48, 32), rand(1, 1, 32)
    compiled = compile_graph(
        lambda g, x, w, b: g.relu(x @ w + b), {"x": x, "w": w, "b": b}
    )
    assert "(tensor<2x48xf32>, tensor<48x32xf32>) -> tensor<2x32xf32>" in compiled.ir(
        "tg"
    )
    (got,) = compiled(x, w, b)
    assert_close(got, np.maximum(x.astype(np.float64) @ w + b, 0.0))


def test_two_linears_in_a_row_share_the_2d_form() -> None:
    """An MLP on an NHWC map, as ConvNeXt's: the second matmul reads the first's
    2-D result, the residual is the input."""
    x, w1, b1, w2 = rand(1, 4, 4, 16), rand(16, 64), rand(64), rand(64, 16)

    def build(g: Graph, x: Value, w1: Value, b1: Value, w2: Value) -> Value:
        return x + g.relu(x @ w1 + b1) @ w2

    compiled = compile_graph(build, {"x": x, "w1": w1, "b1": b1, "w2": w2})
    tg_ir = compiled.ir("tg")
    assert "tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>" in tg_ir
    (got,) = compiled(x, w1, b1, w2)
    x64 = x.astype(np.float64)
    assert_close(got, x64 + np.maximum(x64 @ w1 + b1, 0.0) @ w2, rtol=1e-4)


def test_strided_lhs_that_has_a_view() -> None:
    """A slice of the last dimension: batch and rows still merge into one stride."""
    x, w = rand(2, 3, 16), rand(8, 32)
    compiled = compile_graph(
        lambda g, x, w: g.slice(x, [0, 0, 0], [2, 3, 8]) @ w, {"x": x, "w": w}
    )
    assert "tensor<6x8xf32, strided<[16, 1]>>" in compiled.ir("tg")
    (got,) = compiled(x, w)
    assert_close(got, x[:, :, :8].astype(np.float64) @ w)


def test_unfused_matmul_collapses_too() -> None:
    x, w, b = rand(3, 5, 24), rand(24, 16), rand(16)
    compiled = compile_graph(
        lambda g, x, w, b: x @ w + b, {"x": x, "w": w, "b": b}, fuse=False
    )
    assert "-> tensor<15x16xf32>" in compiled.ir("tg")
    (got,) = compiled(x, w, b)
    assert_close(got, x.astype(np.float64) @ w + b)


def onnx_linear(x_shape: tuple[int, ...], w: Array, b: Array) -> Any:
    """ONNX ``MatMul`` + ``Add`` (what exporters emit for a ``Linear`` on a batch of
    sequences; ``Gemm`` takes 2-D inputs only), the weights as initializers."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


def test_onnx_matmul_add() -> None:
    x, w, b = rand(4, 6, 32), rand(32, 48), rand(48)
    compiled = qidao.compile(onnx_linear(x.shape, w, b))
    assert "-> tensor<24x48xf32>" in compiled.ir("tg")
    (got,) = compiled(x)
    assert_close(got, x.astype(np.float64) @ w + b)


# ----------------------------------------------------------------------------------
# must not fire


@pytest.mark.parametrize(
    ("name", "build", "inputs", "reference", "batched"),
    [
        (
            "q @ k^T (an rhs with batch dimensions)",
            lambda g, q, k: q @ g.transpose(k, [0, 2, 1]),
            {"q": rand(2, 5, 16), "k": rand(2, 5, 16)},
            lambda q, k: q @ k.transpose(0, 2, 1),
            "tensor<2x5x5xf32>",
        ),
        (
            "a transposed lhs",
            lambda g, x, w: g.transpose(x, [1, 0, 2]) @ w,
            {"x": rand(3, 2, 16), "w": rand(16, 8)},
            lambda x, w: x.transpose(1, 0, 2) @ w,
            "-> tensor<2x3x8xf32>",
        ),
        (
            "a batch of one",
            lambda g, x, w: x @ w,
            {"x": rand(1, 6, 16), "w": rand(16, 8)},
            lambda x, w: x @ w,
            "-> tensor<1x6x8xf32>",
        ),
    ],
)
def test_must_not_fire(
    name: str,
    build: Callable[..., Value],
    inputs: dict[str, Array],
    reference: Callable[..., Array],
    batched: str,
) -> None:
    compiled = compile_graph(build, inputs)
    tg_ir = compiled.ir("tg")
    assert f"{batched}" in tg_ir and "tg.view" not in tg_ir, (name, tg_ir)
    (got,) = compiled(*inputs.values())
    assert_close(got, reference(*(a.astype(np.float64) for a in inputs.values())))


def test_eager_mode_keeps_the_batch_loops() -> None:
    x, w = rand(2, 3, 16), rand(16, 8)
    compiled = compile_graph(lambda g, x, w: x @ w, {"x": x, "w": w}, mode="eager")
    assert "b0" in loop_extents(compiled.ir("affine"))
    (got,) = compiled(x, w)
    assert_close(got, x.astype(np.float64) @ w)
