"""Vectorized loops on the GPU: ``float4`` loads and stores where the alignment is
proven (``qidao/compiler/targets/cuda/emit/vectors.py``, ``alignment.py``) and the
elementwise default schedule's 4 elements a thread (``defaults.py``,
``wide_loops``), without a GPU: the CUDA C and its launch header, ``nvcc`` for
sm_80 and sm_90 warning-free (the PTX's ``v4`` loads and stores), and the emulator
against NumPy, with and without tails, broadcasts, a transposed operand and
offset views (which must stay narrow). On a GPU the same cases run on it."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.parser import Parser

import qidao
from qidao.compiler.context import make_context
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.compiler.targets.cuda.emit import CudaEmitError, emit_kernel
from qidao.frontend.builder import Graph, Value
from qidao.runtime.cuda import cuda_unavailable_reason

NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ (the emulator) is not on PATH")
Arrays = list[np.ndarray[Any, Any]]
Built = tuple[Graph, Arrays, Arrays]


def compile_cuda(model: Any, **options: Any) -> CompiledCuda:
    """``qidao.compile(model, target="cuda", ...)``, typed as what it returns."""
    compiled = qidao.compile(model, target="cuda", **options)
    assert isinstance(compiled, CompiledCuda)
    return compiled


# --- the cases: graph, schedule, inputs, reference, and what the C must say ----------


@dataclass(frozen=True)
class VectorCase:
    """A graph and its schedule (``"default"`` or primitives); ``notes``: the lines
    the launch header must hold (how wide each vector access went); ``report``:
    what the default schedule's report must say; ``wide``: whether any access is
    a CUDA vector type; ``absent``: text the header must not hold."""

    build: Callable[[np.random.Generator], Built]
    schedule: Callable[[Schedule], None] | str = "default"
    notes: tuple[str, ...] = ()
    report: str = ""
    wide: bool = True
    absent: tuple[str, ...] = ()


def _chain(x: Value) -> Value:
    """The five-op chain of ``qidao bench``: relu(x * 3 + 1) * 0.5 + 2."""
    g = x.graph
    return g.relu(x * 3.0 + 1.0) * 0.5 + 2.0


def _chain_np(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    relu: np.ndarray[Any, Any] = np.maximum(x * 3 + 1, 0)
    return relu * 0.5 + 2


def chain(n: int, dtype: str = "float32") -> Callable[[np.random.Generator], Built]:
    def make(rng: np.random.Generator) -> Built:
        g = Graph("main")
        g.output(_chain(g.input("x", (n,), dtype)))
        x = rng.standard_normal(n).astype(dtype)
        return g, [x], [_chain_np(x.astype(np.float64))]

    return make


def broadcast(shape: tuple[int, ...], b_shape: tuple[int, ...]) -> Callable[..., Built]:
    """relu(x + b) * 2 with ``b`` broadcast along x's rows or columns."""

    def make(rng: np.random.Generator) -> Built:
        g = Graph("main")
        x, b = g.input("x", shape), g.input("b", b_shape)
        g.output(g.relu(x + b) * 2.0)
        xs = rng.standard_normal(shape).astype(np.float32)
        bs = rng.standard_normal(b_shape).astype(np.float32)
        return g, [xs, bs], [np.maximum(xs + bs, 0) * 2]

    return make


def transposed(rng: np.random.Generator) -> Built:
    """x^T + y: the transposed operand moves by a row a step of the inner loop."""
    g = Graph("main")
    x, y = g.input("x", (36, 64)), g.input("y", (64, 36))
    g.output(g.transpose(x) + y)
    xs = rng.standard_normal((36, 64)).astype(np.float32)
    ys = rng.standard_normal((64, 36)).astype(np.float32)
    return g, [xs, ys], [xs.T + ys]


def offset_views(rng: np.random.Generator) -> Built:
    """Three slices of 1024 floats, at offsets 1, 4 and 2 of their buffers."""
    g = Graph("main")
    x, y, z = (g.input(name, (1028,)) for name in "xyz")
    g.output(g.slice(x, [1], [1025]) * 2.0 + g.slice(y, [4]) + g.slice(z, [2], [1026]))
    xs, ys, zs = (rng.standard_normal(1028).astype(np.float32) for _ in range(3))
    return g, [xs, ys, zs], [xs[1:1025] * 2 + ys[4:] + zs[2:1026]]


def rows(shape: tuple[int, int]) -> Callable[[np.random.Generator], Built]:
    def make(rng: np.random.Generator) -> Built:
        g = Graph("main")
        g.output(g.input("x", shape) + 1.0)
        xs = rng.standard_normal(shape).astype(np.float32)
        return g, [xs], [xs + 1]

    return make


def split_vectorize(width: int) -> Callable[[Schedule], None]:
    """The innermost loop split by ``width``, that part vectorized and unrolled,
    the rest on blockIdx.x x threadIdx.x (64 threads a block)."""

    def schedule(s: Schedule) -> None:
        (kernel,) = s.kernels()
        loop = s.loops(kernel)[-1]
        outer, inner = s.split(kernel, loop, width)
        s.vectorize(kernel, inner, width)
        s.unroll(kernel, inner, 0)
        blocks, threads = s.split(kernel, outer, 64)
        s.bind(kernel, blocks, "blockIdx.x")
        s.bind(kernel, threads, "threadIdx.x")

    return schedule


def row_per_block(s: Schedule) -> None:
    """A row a block (one thread), its loop vectorized by 4 with a scalar tail."""
    (kernel,) = s.kernels()
    row, col = s.loops(kernel)
    s.bind(kernel, row, "blockIdx.x")
    s.vectorize(kernel, col, 4)


CASES: dict[str, VectorCase] = {
    "chain_4x257": VectorCase(
        chain(4 * 257),
        notes=(
            "// load x: vector<4xf32> as 1 float4",
            "// store out: vector<4xf32> as 1 float4",
        ),
        report="4 elements a thread (i0_i vectorized): i0_o_o -> blockIdx.x, "
        "i0_o_i -> threadIdx.x",
    ),
    "chain_f64": VectorCase(
        chain(4 * 257, "float64"),
        notes=(
            "// load x: vector<4xf64> as 2 double2",
            "// store out: vector<4xf64> as 2 double2",
        ),
    ),
    "chain_1001": VectorCase(
        chain(1001),
        report="(one element a thread: loop 'i0' runs 1001 times, not a multiple of 4)",
        wide=False,
    ),
    "row_broadcast": VectorCase(
        broadcast((5, 1028), (1028,)),
        notes=(
            "// load x: vector<4xf32> as 1 float4",
            "// load b: vector<4xf32> as 1 float4",
            "// store out: vector<4xf32> as 1 float4",
        ),
        report="4 elements a thread (i1_i vectorized): i0 -> blockIdx.y",
    ),
    "short_rows": VectorCase(
        broadcast((3, 5, 72), (72,)),
        notes=("// load b: vector<4xf32> as 1 float4",),
        report="4 elements a thread (i2_i vectorized): i0 -> blockIdx.x, i1 -> "
        "threadIdx.y, i2_o -> threadIdx.x",
    ),
    "column_broadcast": VectorCase(
        broadcast((5, 1028), (5, 1)),
        notes=(
            "// load x: vector<4xf32> as 1 float4",
            "// store out: vector<4xf32> as 1 float4",
        ),
        absent=("// load b",),  # b[i0] does not move with the loop: a broadcast
    ),
    "transposed": VectorCase(
        transposed,
        report="with indices (d0, d1) -> (d0, d1) is not unit-stride in the loop",
        wide=False,
    ),
    "offset_views": VectorCase(
        offset_views,
        notes=(
            "// load in0: vector<4xf32> as 4 floats, not wide (not float4: its "
            "first element is 1 past a multiple of 4 elements; not float2: its "
            "first element is 1 past a multiple of 2 elements)",
            "// load in1: vector<4xf32> as 1 float4",
            "// load in2: vector<4xf32> as 2 float2 (not float4: its first element "
            "is 2 past a multiple of 4 elements)",
        ),
    ),
    "width_8": VectorCase(
        chain(8 * 100),
        split_vectorize(8),
        notes=(
            "// load x: vector<8xf32> as 2 float4",
            "// store out: vector<8xf32> as 2 float4",
        ),
    ),
    "width_2": VectorCase(
        chain(2 * 100),
        split_vectorize(2),
        notes=("// store out: vector<2xf32> as 1 float2",),
    ),
    "width_3": VectorCase(
        chain(3 * 100),
        split_vectorize(3),
        notes=(
            "// load x: vector<3xf32> as 3 floats, not wide (its 3 lanes are not a "
            "multiple of 4 or 2)",
        ),
        wide=False,
    ),
    "rows_of_1030": VectorCase(
        rows((6, 1030)),
        row_per_block,
        notes=(
            "// load x: vector<4xf32> as 2 float2 (not float4: each step of loop "
            "'i0' moves it by 1030 elements, not a multiple of 4)",
        ),
    ),
}


def build(name: str) -> Built:
    return CASES[name].build(np.random.default_rng(11))


def check(got: Arrays, want: Arrays) -> None:
    for g, w in zip(got, want, strict=True):
        # vectorize contracts x * 3 + 1 into one fma: within a rounding of f32
        tol = 1e-6 if g.dtype == np.float32 else 1e-13
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


# --- the CUDA C ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_header_says_how_wide(name: str) -> None:
    case = CASES[name]
    g, _, _ = build(name)
    compiled = compile_cuda(g, schedule=case.schedule)
    source = compiled.ir("cuda")
    header = source[source.index("// grid") : source.index('extern "C"')]
    for note in case.notes:
        assert note in header.splitlines(), header
    for text in case.absent:
        assert text not in header, header
    if case.report:
        (report,) = compiled.stats["default_schedule"].values()
        assert case.report in report, report
    assert ("reinterpret_cast" in source) == case.wide, source


def test_a_float4_load_and_store() -> None:
    g, _, _ = build("chain_4x257")
    source = compile_cuda(g).ir("cuda")
    assert (
        "const float4 v6_float4 = *reinterpret_cast<const float4*>(&x[v5]);\n"
        "        const float v6[4] = {v6_float4.x, v6_float4.y, v6_float4.z, "
        "v6_float4.w};"
    ) in source, source
    assert (
        "*reinterpret_cast<float4*>(&out[v10]) = make_float4(v9[0], v9[1], v9[2], "
        "v9[3]);"
    ) in source, source
    # the launch writes out through a vector.store: not a const pointer
    assert "float* __restrict__ out" in source
    assert "const float* __restrict__ out" not in source


def test_narrow_accesses_go_lane_by_lane() -> None:
    """The view at offset 1: four loads of one float each, at the index plus 0..3."""
    g, _, _ = build("offset_views")
    source = compile_cuda(g).ir("cuda")
    assert "= {in0[1 + v1], in0[1 + v1 + 1], in0[1 + v1 + 2], in0[1 + v1 + 3]};" in (
        source
    )
    assert (
        "const float2 v7_float2_1 = *reinterpret_cast<const float2*>(&in2[2 + v6 + 2]);"
        in source
    )


# --- nvcc and the emulator -------------------------------------------------------------


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_nvcc_compiles_it_warning_free(name: str, arch: str, tmp_path: Path) -> None:
    case = CASES[name]
    g, _, _ = build(name)
    source = tmp_path / f"{name}.cu"
    source.write_text(compile_cuda(g, schedule=case.schedule).ir("cuda"))
    ptx = tmp_path / f"{name}.ptx"
    cmd = [str(NVCC), f"-arch={arch}", "--ptx", "-o", str(ptx), str(source)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr, result.stderr
    text = ptx.read_text()
    assert (".v4.f32" in text or ".v2.f32" in text or ".v2.f64" in text) == case.wide
    assert ".local" not in text  # the lane arrays stay in registers


@needs_nvcc
def test_the_chain_is_one_16_byte_load_and_store_a_thread(tmp_path: Path) -> None:
    g, _, _ = build("chain_4x257")
    source = tmp_path / "chain.cu"
    source.write_text(compile_cuda(g).ir("cuda"))
    ptx = tmp_path / "chain.ptx"
    cmd = [str(NVCC), "-arch=sm_90", "--ptx", "-o", str(ptx), str(source)]
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    memory = [
        line.split()[0]
        for line in ptx.read_text().splitlines()
        if line.strip().startswith(("ld.global", "st.global"))
    ]
    assert memory == ["ld.global.nc.v4.f32", "st.global.v4.f32"], memory


@needs_gxx
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_emulator_matches_numpy(name: str) -> None:
    case = CASES[name]
    g, inputs, want = build(name)
    compiled = compile_cuda(g, schedule=case.schedule, device="emulate")
    check(compiled(*inputs), want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_matches_numpy(name: str) -> None:
    reason = cuda_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    case = CASES[name]
    g, inputs, want = build(name)
    check(compile_cuda(g, schedule=case.schedule)(*inputs), want)


# --- alignment and refusals, on hand-written kernels -----------------------------------


def _kernel(source: str) -> func.FuncOp:
    module = Parser(make_context(), source).parse_module()
    module.verify()
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def _emit(
    body: str,
    args: str = "%x: memref<64xf32> {llvm.noalias}, %y: memref<64xf32> {llvm.noalias}",
    axis: str = "threadIdx.x",
) -> str:
    """The C of a kernel whose body (inside ``affine.for %t`` bound to ``axis``,
    or serial with ``axis=""``) is ``body``."""
    bind = f', qd.bind = "{axis}"' if axis else ""
    source = f"""
func.func @k({args}) attributes {{qd.kernel = "t"}} {{
  affine.for %t = 0 to 16 {{
{body}
  }} {{qd.loop = "t"{bind}}}
  func.return
}}
"""
    (launch,) = emit_kernel(_kernel(source))
    return launch.source


def test_a_loop_start_and_a_view_offset_add_up() -> None:
    """x: offset 2 plus a loop from 2 in steps of 4, every access at a multiple of
    4 elements; y: rows of 34 floats, a multiple of 2 only."""
    source = _emit(
        """
    affine.for %j = 2 to 34 step 4 {
      %v = vector.load %x[%j] : memref<40xf32, strided<[1], offset: 2>>, vector<4xf32>
      %c = affine.apply affine_map<(d0) -> (d0 - 2)>(%j)
      vector.store %v, %y[%t, %c] : memref<16x34xf32>, vector<4xf32>
    } {qd.loop = "j"}""",
        "%x: memref<40xf32, strided<[1], offset: 2>> {llvm.noalias}, "
        "%y: memref<16x34xf32> {llvm.noalias}",
    )
    assert "// load x: vector<4xf32> as 1 float4" in source
    assert (
        "// store y: vector<4xf32> as 2 float2 (not float4: each step of loop 't' "
        "moves it by 34 elements, not a multiple of 4)"
    ) in source


def test_local_arrays_and_nonlinear_indices_stay_narrow() -> None:
    source = _emit(
        """
    %buf = memref.alloca() : memref<8xf32>
    %zero = arith.constant 0 : index
    %i = affine.apply affine_map<(d0) -> ((d0 mod 2) * 4)>(%t)
    %v = vector.load %x[%i] : memref<64xf32>, vector<4xf32>
    vector.store %v, %buf[%zero] : memref<8xf32>, vector<4xf32>
    %w = vector.load %buf[%zero] : memref<8xf32>, vector<4xf32>
    vector.store %w, %y[%t, %zero] : memref<16x4xf32>, vector<4xf32>""",
        "%x: memref<64xf32> {llvm.noalias}, %y: memref<16x4xf32> {llvm.noalias}",
    )
    assert (
        "// load x: vector<4xf32> as 4 floats, not wide (not float4: an index is not "
        "linear in the loop counters (mod, floordiv); not float2: an index is not "
        "linear in the loop counters (mod, floordiv))"
    ) in source
    assert (
        "// store buf: vector<4xf32> as 4 floats, not wide (not float4: %buf is a "
        "local or __shared__ array: its alignment is not known; not float2: %buf is "
        "a local or __shared__ array: its alignment is not known)"
    ) in source
    assert "// load buf: vector<4xf32> as 4 floats, not wide" in source
    assert "// store y: vector<4xf32> as 1 float4" in source


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            "%v = vector.load %x[%t] : memref<64xf32>, vector<4xf32>\n"
            "%r = vector.reduction <add>, %v : vector<4xf32> into f32",
            "'vector.reduction': vectorized reductions are not emitted",
        ),
        (
            "%v = vector.load %x[%t] : memref<64xf32>, vector<4xf32>\n"
            "%e = vector.extract %v[0] : f32 from vector<4xf32>",
            "'vector.extract': the CUDA emitter does not know this vector op",
        ),
        (
            "%f = arith.constant 1.0 : f32\n"
            "%b = vector.broadcast %f : f32 to vector<2x4xf32>",
            "'vector.broadcast': vector<2x4xf32>: only fixed one-dimensional vectors "
            "are emitted",
        ),
    ],
)
def test_other_vector_ops_are_refused(body: str, error: str) -> None:
    with pytest.raises(CudaEmitError, match=f"kernel 'k': {error}"):
        _emit(body, axis="")  # serial: no bind check runs before the emitter
