"""Parallel loops on libgomp's threads: the ``parallel`` pass marks a loop, the
``convert-parallel-to-gomp`` pass outlines it, and the JIT code runs it through
``GOMP_parallel``. Every result is compared with NumPy; illegal requests raise an
``IllegalScheduleError`` naming the loop.

Thread counts 1, 2 and 3 with extents that 2 and 3 do not divide (37 rows, 7 filters,
1001 elements), so the uneven static split and its last, shorter chunk both run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr

import qidao
from qidao import Compiled
from qidao.compiler.context import make_context
from qidao.compiler.pipeline import run_stages, stages
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cpu.emit import llvm_ir_text
from qidao.frontend.builder import Graph
from qidao.passes import all_passes
from qidao.passes.schedule.loops.errors import IllegalScheduleError, LoopNotFoundError
from qidao.passes.schedule.parallel import parallelize
from qidao.runtime.cpu import JitModule, jit_compile, load_openmp_runtime
from qidao.runtime.executor import NativeFunction, ndarray_entry_ir

THREADS = (1, 2, 3)
RNG = np.random.default_rng(7)


def randn(*shape: int) -> np.ndarray[Any, Any]:
    return RNG.standard_normal(shape).astype(np.float32)


def kernel_named(module: ModuleOp, op_name: str) -> str:
    """The symbol of the first kernel whose ``qd.kernel`` mentions ``op_name``."""
    for op in module.ops:
        if not isinstance(op, func.FuncOp):
            continue
        label = op.attributes.get("qd.kernel")
        if isinstance(label, StringAttr) and op_name in label.data:
            return op.sym_name.data
    raise AssertionError(f"no kernel for {op_name}")


class Parallel:
    """A graph compiled with some loops parallel: ``affine`` stage + marks, then the
    rest of the pipeline, as ``qidao.compile`` runs it."""

    def __init__(
        self,
        graph: Graph,
        marks: Sequence[tuple[str, str]],
        threads: int,
        schedule: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> None:
        compiled: Compiled = qidao.compile(graph)
        module = compiled.module("affine")
        self.kernels = module
        for name, options in schedule:
            all_passes()[name]()(**options).apply(make_context(), module)
        for kernel, loop in marks:
            parallelize(module, kernel, loop)
        lowering = stages("cpu", "scf", "llvm-dialect")
        run_stages(module, lowering, settings={"threads": threads}, verify="each")
        n_args = len(compiled.inputs) + len(compiled.outputs)
        self.llvm_ir = llvm_ir_text(module)
        self.jit: JitModule = jit_compile(
            self.llvm_ir + ndarray_entry_ir("main", n_args)
        )
        self.native = NativeFunction(
            self.jit, "main", compiled.inputs, compiled.outputs
        )

    def __call__(self, *arrays: np.ndarray[Any, Any]) -> list[np.ndarray[Any, Any]]:
        return self.native(*arrays)


def affine_of(graph: Graph) -> ModuleOp:
    return qidao.compile(graph).module("affine")


# --- numerics ---------------------------------------------------------------------


@pytest.mark.parametrize("threads", THREADS)
def test_elementwise_outer_loop(threads: int) -> None:
    g = Graph("main")
    x = g.input("x", (37, 53))
    g.output(g.relu(x * 3.0 + 1.0) * 0.5)
    kernel = kernel_named(affine_of(g), "tg.relu")
    run = Parallel(g, [(kernel, "i0")], threads)
    a = randn(37, 53)
    (y,) = run(a)
    np.testing.assert_allclose(y, np.maximum(a * 3 + 1, 0) * 0.5, rtol=1e-6)
    assert '@"GOMP_parallel"' in run.llvm_ir


@pytest.mark.parametrize("threads", THREADS)
def test_elementwise_more_threads_than_iterations(threads: int) -> None:
    g = Graph("main")
    x = g.input("x", (2, 1001))
    g.output(x + 1.0)
    run = Parallel(g, [(kernel_named(affine_of(g), "tg.add"), "i0")], threads)
    a = randn(2, 1001)
    np.testing.assert_array_equal(run(a)[0], a + 1)


@pytest.mark.parametrize("threads", THREADS)
def test_matmul_i_loop(threads: int) -> None:
    g = Graph("main")
    x = g.input("x", (37, 29))
    w = g.input("w", (29, 23))
    b = g.input("b", (23,))
    g.output(g.relu(x @ w + b))
    run = Parallel(g, [(kernel_named(affine_of(g), "tg.matmul"), "i")], threads)
    a, m, c = randn(37, 29), randn(29, 23), randn(23)
    (y,) = run(a, m, c)
    np.testing.assert_allclose(y, np.maximum(a @ m + c, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", THREADS)
def test_conv_f_loop(threads: int) -> None:
    g = Graph("main")
    x = g.input("x", (1, 3, 9, 9))
    w = g.input("w", (7, 3, 3, 3))
    g.output(g.conv2d(x, w, padding=1))
    run = Parallel(g, [(kernel_named(affine_of(g), "tg.conv2d"), "f")], threads)
    a, k = randn(1, 3, 9, 9), randn(7, 3, 3, 3)
    (y,) = run(a, k)
    torch = pytest.importorskip("torch", reason="the conv2d reference is PyTorch's")
    expected = torch.nn.functional.conv2d(
        torch.from_numpy(a), torch.from_numpy(k), padding=1
    ).numpy()
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", (2, 3))
def test_split_then_parallel_outer_tile(threads: int) -> None:
    """``split`` by 8 leaves a short last tile (1001 = 125 * 8 + 1); the tiles run
    on the threads."""
    g = Graph("main")
    x = g.input("x", (1001,))
    g.output(g.sqrt(x * x + 1.0))
    kernel = kernel_named(affine_of(g), "tg.sqrt")
    split = ("split", {"kernel": kernel, "loop": "i0", "factor": 8})
    run = Parallel(g, [(kernel, "i0_o")], threads, schedule=[split])
    a = randn(1001)
    np.testing.assert_allclose(run(a)[0], np.sqrt(a * a + 1), rtol=1e-6)


def test_two_parallel_loops_in_one_kernel() -> None:
    """The matmul's init nest and its i loop, each its own parallel region."""
    g = Graph("main")
    x = g.input("x", (19, 5))
    w = g.input("w", (5, 11))
    g.output(x @ w)
    kernel = kernel_named(affine_of(g), "tg.matmul")
    run = Parallel(g, [(kernel, "i_init"), (kernel, "i")], 2)
    assert run.llvm_ir.count('call ccc void @"GOMP_parallel"') == 2
    a, m = randn(19, 5), randn(5, 11)
    np.testing.assert_allclose(run(a, m)[0], a @ m, rtol=1e-5, atol=1e-5)


def test_outlined_body_is_vectorized() -> None:
    g = Graph("main")
    x = g.input("x", (4096,))
    g.output(g.relu(x * 3.0 + 1.0))
    kernel = kernel_named(affine_of(g), "tg.relu")
    run = Parallel(g, [(kernel, "i0")], 2)
    optimized = run.jit.optimized_ir()
    body = optimized[optimized.index(f"@{kernel}_i0_par_body(") :]
    body = body[: body.index("\n}\n")]
    assert " x float>" in body, "the outlined loop body was not vectorized"


# --- legality -----------------------------------------------------------------------


def test_illegal_matmul_k_loop_names_the_loop() -> None:
    g = Graph("main")
    x = g.input("x", (8, 4))
    w = g.input("w", (4, 8))
    g.output(x @ w)
    module = affine_of(g)
    kernel = kernel_named(module, "tg.matmul")
    with pytest.raises(IllegalScheduleError, match=r"loop 'k'.*%out"):
        parallelize(module, kernel, "k")


def test_illegal_reduction_with_iter_args() -> None:
    g = Graph("main")
    x = g.input("x", (4, 16))
    g.output(g.reduce_sum(x, axes=[1]))
    module = affine_of(g)
    kernel = kernel_named(module, "tg.reduce_sum")
    loops = [
        op.attributes["qd.loop"]
        for op in module.walk()
        if "qd.loop" in op.attributes and op.results
    ]
    assert loops, "expected a reduction loop with iter_args"
    name = loops[0]
    assert isinstance(name, StringAttr)
    with pytest.raises(IllegalScheduleError, match=rf"loop '{name.data}'.*iter_args"):
        parallelize(module, kernel, name.data)


def test_unknown_loop() -> None:
    g = Graph("main")
    x = g.input("x", (8,))
    g.output(x + 1.0)
    module = affine_of(g)
    with pytest.raises(LoopNotFoundError, match="loop 'zz'"):
        parallelize(module, kernel_named(module, "tg.add"), "zz")


# --- plumbing -----------------------------------------------------------------------


def test_threads_default_and_openmp_runtime() -> None:
    """``threads=0`` leaves the count to libgomp; the runtime loads once."""
    assert load_openmp_runtime() == load_openmp_runtime()
    g = Graph("main")
    x = g.input("x", (33, 7))
    g.output(x * 2.0)
    run = Parallel(g, [(kernel_named(affine_of(g), "tg.mul"), "i0")], 0)
    a = randn(33, 7)
    np.testing.assert_array_equal(run(a)[0], a * 2)


def test_pipeline_runs_the_backend_pass_and_serial_models_still_compile() -> None:
    (scf,) = stages("cpu", "scf", "scf")
    assert scf.passes[-1] == "convert-parallel-to-gomp"
    g = Graph("main")
    x = g.input("x", (5,))
    g.output(x + 1.0)
    compiled = qidao.compile(g, threads=2)
    a = randn(5)
    np.testing.assert_array_equal(compiled(a)[0], a + 1)
    assert "GOMP_parallel" not in compiled.ir("llvm")


@pytest.mark.parametrize("threads", (1, 2))
def test_compile_with_a_parallel_schedule(threads: int) -> None:
    """Through ``qidao.compile``: the Schedule's ``parallel`` applies the pass and
    ``threads=`` reaches ``GOMP_parallel``'s thread count."""
    g = Graph("main")
    x = g.input("x", (37, 29))
    w = g.input("w", (29, 23))
    g.output(x @ w)
    kernel = kernel_named(affine_of(g), "tg.matmul")
    compiled = qidao.compile(
        g, threads=threads, schedule=lambda s: s.parallel(kernel, "i")
    )
    assert f"i32 {threads}, i32 0)" in compiled.ir("llvm")
    a, m = randn(37, 29), randn(29, 23)
    np.testing.assert_allclose(compiled(a, m)[0], a @ m, rtol=1e-5, atol=1e-5)


def test_parallel_outer_loop_of_a_vectorized_matmul() -> None:
    """The schedule of docs/schedules.md: vector loads/stores inside a parallel loop are checked
    (each covers W elements of the last dimension) and the result is right."""
    g = Graph("main")
    x = g.input("x", (64, 32))
    w = g.input("w", (32, 48))
    g.output(g.matmul(x, w))

    def schedule(s: Schedule) -> None:
        k = "main_k0_matmul"
        s.split(k, "i", 8)
        s.reorder(k, "i_o", "k", "i_i", "j")
        s.vectorize(k, "j", 16)
        s.parallel(k, "i_o")

    compiled = qidao.compile(g, schedule=schedule, threads=2)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 32), dtype=np.float32)
    b = rng.standard_normal((32, 48), dtype=np.float32)
    np.testing.assert_allclose(compiled(a, b)[0], a @ b, rtol=1e-4, atol=1e-4)
    assert "GOMP_parallel" in compiled.ir("llvm")


@pytest.mark.parametrize("order", ["vectorize first", "parallel first"])
def test_the_vectorized_loop_made_parallel(order: str) -> None:
    """``vectorize`` hoists the splats of the kernel's constants (2.0, 1.0) out of
    its loop; made parallel afterwards, the loop's body makes them again from the
    scalars (a vector cannot be passed to the threads: qidao fuzz --kinds schedule
    --seed 40006 was refused)."""
    g = Graph("main")
    x = g.input("x", (5, 48))
    g.output(g.tanh(x * 2.0) + 1.0)

    def schedule(s: Schedule) -> None:
        kernel = next(iter(s.kernels()))
        steps = [lambda: s.vectorize(kernel, "i1", 8), lambda: s.parallel(kernel, "i1")]
        for step in steps if order == "vectorize first" else steps[::-1]:
            step()

    compiled: Any = qidao.compile(g, schedule=schedule, threads=2)
    assert "vector.broadcast" in compiled.ir("schedule")
    assert "GOMP_parallel" in compiled.ir("llvm")
    xs = np.random.default_rng(5).standard_normal((5, 48)).astype(np.float32)
    np.testing.assert_allclose(
        compiled(xs)[0], np.tanh(xs * 2) + 1, rtol=1e-5, atol=1e-6
    )
