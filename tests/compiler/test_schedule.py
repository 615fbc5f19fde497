"""The Schedule API: primitives on real kernels, checked against NumPy; traces that
replay (as Python, as a qidao-opt pipeline) to the same IR; legality errors that
name the loop; the ``qidao.compile(schedule=...)`` hook."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import (
    IllegalScheduleError,
    InvalidArgumentError,
    KernelNotFoundError,
    LoopNotFoundError,
    NonConstantBoundsError,
    NotPerfectlyNestedError,
    Schedule,
    ScheduleError,
    TraceEntry,
    parse_trace,
)
from qidao.frontend.builder import Graph
from qidao.passes import all_passes

Model = tuple[Graph, Callable[..., Any], list[np.ndarray[Any, Any]]]


def rand(*shape: int) -> np.ndarray[Any, Any]:
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


def chain() -> Model:
    g = Graph("main")
    x = g.input("x", (7, 10))
    g.output(g.relu(x * 2.0 + 1.0) * 0.5)
    return g, lambda a: np.maximum(a * 2 + 1, 0) * 0.5, [rand(7, 10)]


def matmul() -> Model:
    g = Graph("main")
    x = g.input("x", (6, 5))
    w = g.input("w", (5, 7))
    b = g.input("b", (7,))
    g.output(g.relu(x @ w + b))
    return (
        g,
        lambda a, c, d: np.maximum(a @ c + d, 0),
        [rand(6, 5), rand(5, 7), rand(7)],
    )


def plain_matmul() -> Model:
    g = Graph("main")
    x = g.input("x", (9, 6))
    w = g.input("w", (6, 10))
    g.output(x @ w)
    return g, lambda a, c: a @ c, [rand(9, 6), rand(6, 10)]


def reduction() -> Model:
    g = Graph("main")
    x = g.input("x", (6, 9))
    g.output(g.reduce_sum(x, axes=[1]))
    return g, lambda a: a.sum(axis=1), [rand(6, 9)]


def conv() -> Model:
    g = Graph("main")
    x = g.input("x", (1, 3, 6, 6))
    w = g.input("w", (4, 3, 3, 3))
    g.output(g.conv2d(x, w, padding=1))

    def reference(a: np.ndarray[Any, Any], k: np.ndarray[Any, Any]) -> Any:
        padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((1, 4, 6, 6), np.float32)
        for i in range(3):
            for j in range(3):
                window = padded[:, :, i : i + 6, j : j + 6]
                out += np.einsum("nchw,fc->nfhw", window, k[:, :, i, j])
        return out

    return g, reference, [rand(1, 3, 6, 6), rand(4, 3, 3, 3)]


MODELS = {
    "chain": chain,
    "matmul": matmul,
    "plain_matmul": plain_matmul,
    "reduction": reduction,
    "conv": conv,
}


def check(model: Model, schedule: Any) -> qidao.Compiled:
    graph, reference, inputs = model
    compiled = qidao.compile(graph, schedule=schedule)
    (got,) = compiled(*inputs)
    np.testing.assert_allclose(got, reference(*inputs), rtol=1e-5, atol=1e-5)
    return compiled


def random_schedule(s: Schedule, rng: random.Random, steps: int) -> None:
    """Try ``steps`` random primitives; an illegal one must raise a ScheduleError
    and leave the module as it was."""
    for _ in range(steps):
        kernel = rng.choice(list(s.kernels()))
        loops = s.loops(kernel)
        if not loops:
            continue
        k = rng.randrange(len(loops))
        loop = loops[k]
        after = loops[k + 1] if k + 1 < len(loops) else loop
        before = str(s.module)
        choice = rng.choice(["split", "split", "reorder", "fuse", "unroll"])
        try:
            if choice == "split":
                s.split(kernel, loop, rng.choice([1, 2, 3, 4, 5, 8]))
            elif choice == "reorder":
                s.reorder(kernel, after, loop)
            elif choice == "fuse":
                s.fuse(kernel, loop, after)
            else:
                s.unroll(kernel, loop, rng.choice([2, 3]))
        except ScheduleError as err:
            assert err.kernel == kernel
            assert str(s.module) == before, f"{err} changed the module"


# --- numerics ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_random_schedules_match_numpy(name: str, seed: int) -> None:
    model = MODELS[name]()
    s = Schedule.for_model(model[0])
    random_schedule(s, random.Random(seed), steps=10)
    compiled = check(model, s.python())
    assert compiled.stats["schedule"] == s.python()
    assert compiled.ir("schedule") == str(s.module)


@pytest.mark.parametrize("factor", [1, 2, 3, 4, 7, 16])
def test_split_any_factor(factor: int) -> None:
    """Factors that divide 7 x 10 and factors that leave a tail."""

    def schedule(s: Schedule) -> None:
        s.split("main_k0_fused", "i0", factor)
        s.split("main_k0_fused", "i1", factor)

    check(chain(), schedule)


def test_matmul_tiled() -> None:
    """A tiled matmul: split i and j with tails, tiles outside k, unroll k."""

    def schedule(s: Schedule) -> None:
        assert s.split("main_k0_matmul", "i", 4) == ("i_o", "i_i")
        s.split("main_k0_matmul", "j", 3)
        s.reorder("main_k0_matmul", "i_o", "j_o", "k", "i_i", "j_i")
        s.unroll("main_k0_matmul", "k", 4)
        assert s.fuse("main_k0_matmul", "i_init", "j_init") == "i_init_j_init"

    compiled = check(plain_matmul(), schedule)
    affine = compiled.ir("schedule")
    for name in ("i_o", "j_o", "k", "k_rem", "i_i_u1", "i_init_j_init"):
        assert f'qd.loop = "{name}"' in affine


def test_matmul_reduction_reordered() -> None:
    """Two loops that both revisit out[i, j] swap: a reassociated float sum."""

    def schedule(s: Schedule) -> None:
        s.split("main_k0_matmul", "k", 2)
        s.reorder("main_k0_matmul", "i", "k_i", "k_o", "j")

    check(plain_matmul(), schedule)


def test_reduction_and_conv() -> None:
    def reduce_schedule(s: Schedule) -> None:
        s.split("main_k0_reduce_sum", "r0", 3)
        s.unroll("main_k0_reduce_sum", "r0_i", 0)
        s.unroll("main_k0_reduce_sum", "i0", 4)
        assert "r0_o_u1" in s.loops("main_k0_reduce_sum")

    check(reduction(), reduce_schedule)

    def conv_schedule(s: Schedule) -> None:
        s.reorder("main_k1_conv2d", "kw", "kh")
        s.fuse("main_k1_conv2d", "n", "oh")
        s.split("main_k1_conv2d", "f", 3)

    check(conv(), conv_schedule)


# --- traces -----------------------------------------------------------------------


def scheduled_matmul() -> Schedule:
    s = Schedule.for_model(plain_matmul()[0])
    s.split("main_k0_matmul", "i", 4)
    s.reorder("main_k0_matmul", "i_o", "k", "i_i", "j")
    s.fuse("main_k0_matmul", "i_init", "j_init")
    s.unroll("main_k0_matmul", "j", 3)
    return s


def test_trace_prints_python_and_pipeline() -> None:
    s = scheduled_matmul()
    assert s.python().splitlines() == [
        's.split("main_k0_matmul", "i", 4)',
        's.reorder("main_k0_matmul", "i_o", "k", "i_i", "j")',
        's.fuse("main_k0_matmul", "i_init", "j_init")',
        's.unroll("main_k0_matmul", "j", 3)',
    ]
    assert s.pipeline() == (
        'split{kernel="main_k0_matmul" loop="i" factor=4},'
        'reorder{kernel="main_k0_matmul" loops="i_o,k,i_i,j"},'
        'loop-fuse{kernel="main_k0_matmul" outer="i_init" inner="j_init"},'
        'unroll{kernel="main_k0_matmul" loop="j" factor=3}'
    )
    assert parse_trace(s.python()) == s.trace
    assert parse_trace(s.pipeline()) == s.trace


def test_python_trace_executed_replays_the_same_ir() -> None:
    s = scheduled_matmul()
    fresh = Schedule.for_model(plain_matmul()[0])
    exec(s.python(), {"s": fresh})  # the printed trace is runnable Python
    assert str(fresh.module) == str(s.module)
    replayed = Schedule.replay(Schedule.for_model(plain_matmul()[0]).module, s.trace)
    assert str(replayed.module) == str(s.module)
    assert replayed.trace == s.trace


def test_pipeline_through_qidao_opt_gives_the_same_ir(tmp_path: Path) -> None:
    s = scheduled_matmul()
    source = tmp_path / "matmul.mlir"
    source.write_text(str(Schedule.for_model(plain_matmul()[0]).module))
    opt = shutil.which("qidao-opt") or str(Path(sys.executable).parent / "qidao-opt")
    proc = subprocess.run(
        [opt, str(source), "-p", s.pipeline()],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == str(s.module).strip()


def test_compile_takes_trace_text_and_records_it() -> None:
    s = scheduled_matmul()
    graph, reference, inputs = plain_matmul()
    by_pipeline = qidao.compile(graph, schedule=s.pipeline())
    by_python = qidao.compile(graph, schedule=s.python())
    assert by_pipeline.stats["schedule"] == by_python.stats["schedule"] == s.python()
    assert by_pipeline.ir("schedule") == by_python.ir("schedule") == str(s.module)
    (got,) = by_pipeline(*inputs)
    np.testing.assert_allclose(got, reference(*inputs), rtol=1e-5, atol=1e-5)
    assert "schedule" not in qidao.compile(graph, schedule=None).stats
    # the default schedules leave a 9x6x10 matmul as it is, and say why
    default = qidao.compile(graph).stats
    assert default["schedule"] == ""
    assert default["default_schedule"] == {
        "main_k0_matmul": "none: 9x6x10 is too small to tile"
    }


def test_bad_trace_text_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"expected s\.<primitive>"):
        parse_trace('s.swizzle("k", "i")')
    with pytest.raises(ValueError, match="not a schedule primitive"):
        parse_trace("fuse")


# --- errors ----------------------------------------------------------------------


def test_errors_name_the_kernel_and_the_loop() -> None:
    s = Schedule.for_model(plain_matmul()[0])
    with pytest.raises(LoopNotFoundError, match="loop 'q' in kernel 'main_k0_matmul'"):
        s.split("main_k0_matmul", "q", 2)
    with pytest.raises(KernelNotFoundError, match="the kernels are: main_k0_matmul"):
        s.loops("nope")
    with pytest.raises(InvalidArgumentError, match="factor must be at least 1"):
        s.split("main_k0_matmul", "i", 0)
    with pytest.raises(NotPerfectlyNestedError, match="'i_init' is not perfectly"):
        s.fuse("main_k0_matmul", "i", "i_init")
    s.split("main_k0_matmul", "k", 4)
    with pytest.raises(NonConstantBoundsError, match="loop 'k_i'"):
        s.unroll("main_k0_matmul", "k_i", 2)
    with pytest.raises(IllegalScheduleError, match="bounds of 'k_i' use 'k_o'"):
        s.reorder("main_k0_matmul", "i", "k_i", "k_o", "j")
    assert [e.method for e in s.trace] == ["split"]


def test_reorder_refuses_a_reversed_dependence() -> None:
    """y[i, j] = y[i, j + 1]: the indices differ, so no reorder is proven safe."""
    from xdsl.parser import Parser

    from qidao.compiler.context import make_context

    text = """
    func.func private @k(%y: memref<4x9xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
      affine.for %i = 0 to 4 {
        affine.for %j = 0 to 8 {
          %v = affine.load %y[%i, %j + 1] : memref<4x9xf32>
          affine.store %v, %y[%i, %j] : memref<4x9xf32>
        } {qd.loop = "j"}
      } {qd.loop = "i"}
      func.return
    }
    """
    s = Schedule(Parser(make_context(), text).parse_module())
    assert s.loops("k") == ["i", "j"]
    with pytest.raises(IllegalScheduleError, match="element of %y"):
        s.reorder("k", "j", "i")


def test_parallel_is_recorded_or_refused() -> None:
    s = Schedule.for_model(chain()[0])
    entry = TraceEntry("parallel", "main_k0_fused", ("i0",))
    assert entry.pass_spec() == 'parallel{kernel="main_k0_fused" loop="i0"}'
    if "parallel" not in all_passes():
        with pytest.raises(ScheduleError, match="not registered"):
            s.parallel("main_k0_fused", "i0")
        return
    s.parallel("main_k0_fused", "i0")
    assert s.trace == [entry]
    assert s.pipeline() == entry.pass_spec()


def test_affine_stage_keeps_the_loops_before_the_schedule() -> None:
    compiled = check(plain_matmul(), lambda s: s.split("main_k0_matmul", "i", 2))
    assert 'qd.loop = "i_o"' not in compiled.ir("affine")
    assert 'qd.loop = "i_o"' in compiled.ir("schedule")
