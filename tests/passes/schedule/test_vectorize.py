"""The ``vectorize`` schedule primitive: numerics against NumPy, the vector code it
makes (``<16 x float>``, ``llvm.fma.v16f32`` in the optimized LLVM IR), scalar tails,
reductions, its trace, and its errors."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from xdsl.parser import Parser

import qidao
from qidao.bench import ladder
from qidao.compiler.context import make_context
from qidao.compiler.pipeline import run_stages, stages
from qidao.compiler.schedule import IllegalScheduleError, Schedule
from qidao.compiler.targets.cpu.emit import llvm_ir_text
from qidao.frontend.builder import Graph
from qidao.passes.schedule.vectorize import vectorize_loop
from qidao.runtime.cpu import jit_compile

Model = tuple[Graph, Callable[..., Any], list[np.ndarray[Any, Any]]]


def rand(*shape: int) -> np.ndarray[Any, Any]:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def add_relu() -> Model:
    g = Graph("main")
    x = g.input("x", (8, 64))
    y = g.input("y", (8, 64))
    g.output(g.relu(g.add(x, y)))
    return g, lambda a, b: np.maximum(a + b, 0), [rand(8, 64), rand(8, 64)]


def matmul() -> Model:
    g = Graph("main")
    x = g.input("x", (32, 48))
    w = g.input("w", (48, 64))
    g.output(x @ w)
    return g, lambda a, b: a @ b, [rand(32, 48), rand(48, 64)]


def elementwise(n: int) -> Model:
    g = Graph("main")
    x = g.input("x", (3, n))
    y = g.input("y", (3, n))
    g.output(g.relu(g.add(g.mul(x, y), y)))
    return g, lambda a, b: np.maximum(a * b + b, 0), [rand(3, n), rand(3, n + 1)[:, :n]]


def reduce_model(kind: str, n: int) -> Model:
    g = Graph("main")
    x = g.input("x", (4, n))
    if kind == "sum":
        g.output(g.reduce_sum(x, axes=[1]))
        return g, lambda a: a.astype(np.float64).sum(1), [rand(4, n)]
    if kind == "max":
        g.output(g.reduce_max(x, axes=[1]))
        return g, lambda a: a.max(1), [rand(4, n)]
    # a dot product per row: the fused mul + reduce_sum, contracted to an fma
    w = g.input("w", (4, n))
    g.output(g.reduce_sum(g.mul(x, w), axes=[1]))
    return g, lambda a, b: (a.astype(np.float64) * b).sum(1), [rand(4, n), rand(n, 4).T]


def check(
    model: Model, schedule: Any, rtol: float = 1e-5, atol: float = 1e-5
) -> qidao.Compiled:
    graph, reference, inputs = model
    compiled = qidao.compile(graph, schedule=schedule)
    (got,) = compiled(*(np.ascontiguousarray(a) for a in inputs))
    np.testing.assert_allclose(got, reference(*inputs), rtol=rtol, atol=atol)
    return compiled


def test_elementwise_innermost_loop() -> None:
    compiled = check(add_relu(), lambda s: s.vectorize("main_k0_fused", "i1"))
    scheduled = compiled.ir("schedule")
    assert "affine.for %i1 = 0 to 64 step 16" in scheduled
    assert "vector.load %x[%i0, %i1] : memref<8x64xf32>, vector<16xf32>" in scheduled
    assert "arith.maximumf" in scheduled and "vector.broadcast" in scheduled
    assert "<16 x float>" in compiled.ir("llvm-opt")
    assert compiled.stats["schedule"] == 's.vectorize("main_k0_fused", "i1", 16)\n'


def test_matmul_j_loop() -> None:
    compiled = check(matmul(), lambda s: s.vectorize("main_k0_matmul", "j"))
    scheduled = compiled.ir("schedule")
    # x[i, k] is invariant in j: a scalar load broadcast before the j loop.
    assert "vector.broadcast %1 : f32 to vector<16xf32>" in scheduled
    assert "vector.load %w[%k, %j] : memref<48x64xf32>, vector<16xf32>" in scheduled
    assert "vector.store" in scheduled and "affine.store %0, %out" in scheduled
    assert "<16 x float>" in compiled.ir("llvm-opt")


@pytest.mark.parametrize("width", [4, 8, 16, 32, 64])
def test_widths(width: int) -> None:
    check(matmul(), lambda s: s.vectorize("main_k0_matmul", "j", width))


def test_split_then_vectorize() -> None:
    def schedule(s: Schedule) -> None:
        s.split("main_k0_matmul", "j", 32)
        s.vectorize("main_k0_matmul", "j_i", 8)
        s.vectorize("main_k0_matmul", "j_init")

    check(matmul(), schedule)


def test_trace_replays() -> None:
    graph = matmul()[0]
    s = Schedule.for_model(graph)
    s.vectorize("main_k0_matmul", "j", 8)
    assert s.pipeline() == 'vectorize{kernel="main_k0_matmul" loop="j" width=8}'
    for text in (s.python(), s.pipeline()):
        again = Schedule.replay(Schedule.for_model(graph).module, text)
        assert str(again.module) == str(s.module)
    check(matmul(), s.pipeline())


@pytest.mark.parametrize(
    ("loop", "width", "reason"),
    [
        ("k", 16, "not innermost"),
        ("i", 16, "not innermost"),
    ],
)
def test_illegal_leaves_the_module(loop: str, width: int, reason: str) -> None:
    s = Schedule.for_model(matmul()[0])
    before = str(s.module)
    with pytest.raises(IllegalScheduleError, match=reason):
        s.vectorize("main_k0_matmul", loop, width)
    assert str(s.module) == before
    assert s.trace == []


def test_iter_arg_that_is_not_an_accumulation_is_refused() -> None:
    g = Graph("main")
    x = g.input("x", (4, 32))
    g.output(g.reduce_sum(x, axes=[1]))
    s = Schedule.for_model(g)
    kernel = "main_k0_reduce_sum"
    fn = next(f for f in s.module.ops if "reduce_sum" in str(f).split("\n")[0])
    # make the carried value feed a mulf: acc * x is no reassociable accumulation
    text = str(fn).replace("arith.addf", "arith.mulf")
    module = Parser(make_context(), f"builtin.module {{\n{text}\n}}").parse_module()
    before = str(module)
    with pytest.raises(
        IllegalScheduleError, match="iter_arg #0 is not an accumulation"
    ):
        vectorize_loop(module, kernel, "r0", 16)
    assert str(module) == before


# --- FMA contraction ----------------------------------------------------------------


def test_matmul_register_tile_uses_vector_fma() -> None:
    """The ladder's cache_write recipe: every a*b + c of the tile is one
    llvm.fma.v16f32, no <16 x float> fmul/fadd is left."""
    n = 64
    a, b = ladder.inputs(n)
    compiled = qidao.compile(ladder.matmul_graph(n), schedule=ladder.cache_write)
    (got,) = compiled(a, b)
    ladder.check("cache_write", got, a, b)
    scheduled = compiled.ir("schedule")
    assert "math.fma" in scheduled and "arith.mulf" not in scheduled
    optimized = compiled.ir("llvm-opt")
    assert "llvm.fma.v16f32" in optimized
    assert "fmul <16 x float>" not in optimized
    assert "fadd <16 x float>" not in optimized


# --- tails --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 15, 37, 100, 1000])
def test_tail(n: int) -> None:
    compiled = check(elementwise(n), lambda s: s.vectorize("main_k0_fused", "i1"))
    scheduled = compiled.ir("schedule")
    main = n // 16 * 16
    assert f"affine.for %i1 = 0 to {main} step 16" in scheduled
    assert ("i1_tail" in scheduled) == (n % 16 != 0)
    if n % 16:
        assert f"affine.for %i1_tail = {main} to {n}" in scheduled
        assert 'qd.loop = "i1_tail"' in scheduled


@pytest.mark.parametrize(("n", "factor"), [(100, 48), (37, 16), (1000, 64), (37, 5)])
def test_split_by_a_non_dividing_factor_then_vectorize(n: int, factor: int) -> None:
    def schedule(s: Schedule) -> None:
        s.split("main_k0_fused", "i1", factor)
        s.vectorize("main_k0_fused", "i1_i", 16)

    compiled = check(elementwise(n), schedule)
    assert "i1_i_tail" in compiled.ir("schedule")


def test_matmul_odd_sizes() -> None:
    g = Graph("main")
    x = g.input("x", (37, 29))
    w = g.input("w", (29, 100))
    g.output(x @ w)
    model: Model = (g, lambda a, b: a @ b, [rand(37, 29), rand(29, 100)])
    compiled = check(model, lambda s: s.vectorize("main_k0_matmul", "j"))
    assert "j_tail" in compiled.ir("schedule")
    assert "llvm.fma.v16f32" in compiled.ir("llvm-opt")


def test_trace_with_tail_replays() -> None:
    graph = elementwise(37)[0]
    s = Schedule.for_model(graph)
    s.vectorize("main_k0_fused", "i1", 16)
    again = Schedule.replay(Schedule.for_model(graph).module, s.pipeline())
    assert str(again.module) == str(s.module)


# --- reductions ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sum", "max", "dot"])
@pytest.mark.parametrize("n", [16, 37, 100, 1000])
def test_reduction(kind: str, n: int) -> None:
    kernel = "main_k0_fused" if kind == "dot" else f"main_k0_reduce_{kind}"
    loop = "r_sum" if kind == "dot" else "r0"
    compiled = check(
        reduce_model(kind, n),
        lambda s: s.vectorize(kernel, loop, 16),
        rtol=1e-4,
        atol=1e-4,
    )
    scheduled = compiled.ir("schedule")
    combining = "maximumf" if kind == "max" else "add"
    assert f"vector.reduction <{combining}>" in scheduled
    assert (f"{loop}_tail" in scheduled) == (n % 16 != 0)
    if kind == "dot":
        assert "math.fma" in scheduled
    if kind == "dot" and n >= 32:  # one iteration: LLVM folds fma(a, b, -0.0) to a*b
        assert "llvm.fma.v16f32" in compiled.ir("llvm-opt")


ROW_SUM = """
func.func @k(%x: memref<5x{n}xf32>, %acc: memref<5xf32>) attributes {{qd.kernel = "t"}} {{
  affine.for %i = 0 to 5 {{
    affine.for %j = 0 to {n} {{
      %v = affine.load %x[%i, %j] : memref<5x{n}xf32>
      %a = affine.load %acc[%i] : memref<5xf32>
      %s = arith.addf %a, %v : f32
      affine.store %s, %acc[%i] : memref<5xf32>
    }} {{qd.loop = "j"}}
  }} {{qd.loop = "i"}}
  func.return
}}
"""


@pytest.mark.parametrize("n", [8, 37, 1000])
def test_row_sum_through_memory(n: int) -> None:
    """acc[i] += x[i, j]: vector partial sums, then reduced into acc[i] (which
    starts from what the caller put there), the tail adding the rest."""
    module = Parser(make_context(), ROW_SUM.format(n=n)).parse_module()
    vectorize_loop(module, "k", "j", 16)
    scheduled = str(module)
    assert "vector.reduction <add>" in scheduled
    assert ("j_tail" in scheduled) == (n % 16 != 0)
    run_stages(module, stages("cpu", "scf", "llvm-dialect"))
    jit = jit_compile(llvm_ir_text(module))
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(
        jit.function_address("k")
    )
    x = rand(5, n)
    acc = rand(5)
    want = acc.astype(np.float64) + x.astype(np.float64).sum(1)
    kernel(x.ctypes.data, acc.ctypes.data)
    np.testing.assert_allclose(acc, want, rtol=1e-4, atol=1e-4)


def test_every_lanewise_op_has_a_vector_lowering() -> None:
    """vectorize accepts exactly the ops the vector lowering knows how to emit."""
    from qidao.passes.cpu.llvm import vector
    from qidao.passes.schedule.vectorize import LANEWISE

    lowered = set(vector._SAME_OP) | set(vector._INTRINSIC)
    assert set(LANEWISE) == lowered


# --- masks: comparisons that feed selects -------------------------------------------


def _special(shape: tuple[int, int]) -> np.ndarray[Any, Any]:
    """Values around Clip's bounds, with NaN, infinities and both zeros."""
    a = rand(*shape) * 8
    a.flat[:8] = [-0.0, 0.0, np.nan, 6.0, -np.inf, np.inf, -6.0, 5.999999]
    return a


@pytest.mark.parametrize("n", [64, 67])
def test_clip_masks_keep_every_bit(n: int) -> None:
    """ONNX Clip's ``where(x >= lo, x, max(x, lo))`` then ``where(.. <= hi, ..)``,
    vectorized with lanes.cmpf/lanes.select (and a scalar tail when 16 does not
    divide n): bit for bit NumPy's clip, -0.0 and NaN included."""
    g = Graph("main")
    x = g.input("x", (8, n))
    y = g.where(g.greater_equal(x, 0.0), x, g.maximum(x, 0.0))
    g.output(g.where(g.less_equal(y, 6.0), y, g.minimum(y, 6.0)))
    kernel = "main_k0_fused"
    compiled = qidao.compile(g, schedule=lambda s: s.vectorize(kernel, "i1"))
    a = _special((8, n))
    (got,) = compiled(a)
    ref = np.clip(a, np.float32(0), np.float32(6))
    assert np.array_equal(got.view(np.uint32), ref.view(np.uint32))
    assert "lanes.cmpf oge" in compiled.ir("schedule")
    optimized = compiled.ir("llvm-opt")
    assert "fcmp oge <16 x float>" in optimized
    assert "select <16 x i1>" in optimized


def test_comparison_as_a_value_is_refused() -> None:
    """A mask cast to float is a value, not a select's condition: refused, and
    the module is left as it was."""
    g = Graph("main")
    x = g.input("x", (4, 32))
    g.output(g.cast(g.greater(x, 0.0), "float32"))
    s = Schedule.for_model(g)
    kernel = next(k for k, ops in s.kernels().items() if "tg.greater" in ops)
    before = str(s.module)
    with pytest.raises(
        IllegalScheduleError, match="other than as a select's condition"
    ):
        s.vectorize(kernel, "i1")
    assert str(s.module) == before


def test_conv_relu6_epilogue_is_one_vectorized_kernel() -> None:
    """A conv2d with ReLU6 (Clip 0..6) is one kernel under the default schedule,
    its mask compare vectorized, and matches torch's conv2d + clamp (NaN where
    the input has one)."""
    torch = pytest.importorskip("torch")
    g = Graph("main")
    x = g.input("x", (1, 16, 12, 12))
    w = g.input("w", (32, 16, 3, 3))
    y = g.conv2d(x, w, padding=1)
    y = g.where(g.greater_equal(y, 0.0), y, g.maximum(y, 0.0))
    g.output(g.where(g.less_equal(y, 6.0), y, g.minimum(y, 6.0)))
    compiled = qidao.compile(g)
    fused = [k for k in compiled.stats["default_schedule"] if "fused" in k]
    assert len(fused) == 1, compiled.stats["default_schedule"]
    a, b = rand(1, 16, 12, 12) * 4, rand(32, 16, 3, 3)
    a[0, 3, 5, 5] = np.nan
    (got,) = compiled(a, b)
    conv = torch.nn.functional.conv2d(torch.tensor(a), torch.tensor(b), padding=1)
    ref = torch.clamp(conv, 0, 6).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    assert np.array_equal(np.isnan(got), np.isnan(ref)) and np.isnan(ref).any()
    assert "fcmp oge <16 x float>" in compiled.ir("llvm-opt")
