"""The ``bind`` primitive: GPU axes are marked after their legality checks, the
``threads`` axis is the ``parallel`` pass, and the CPU pipeline refuses a kernel
with a GPU-bound loop instead of running it serially."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import Schedule
from qidao.frontend.builder import Graph
from qidao.passes.schedule.bind import (
    AxisAlreadyBoundError,
    BindNestingError,
    GpuLoopOnCpuError,
    LaunchLimitError,
    bound_axis,
    launch_extent,
)
from qidao.passes.schedule.loops.errors import (
    IllegalScheduleError,
    InvalidArgumentError,
)

MATMUL = "main_k0_matmul"


def matmul_graph(m: int = 16, k: int = 8, n: int = 12) -> Graph:
    g = Graph("main")
    a = g.input("a", (m, k))
    b = g.input("b", (k, n))
    g.output(g.matmul(a, b))
    return g


def loop_axes(s: Schedule, kernel: str) -> dict[str, str | None]:
    from qidao.passes.schedule.loops.nest import find_loop

    return {
        name: bound_axis(find_loop(s.module, "test", kernel, name)[1])
        for name in s.loops(kernel)
    }


def test_bind_marks_block_and_thread_loops() -> None:
    s = Schedule.for_model(matmul_graph())
    s.bind(MATMUL, "i", "blockIdx.x")
    s.bind(MATMUL, "j", "threadIdx.x")
    axes = loop_axes(s, MATMUL)
    assert axes["i"] == "blockIdx.x" and axes["j"] == "threadIdx.x"
    assert axes["k"] is None and axes["i_init"] is None
    assert 'bind{kernel="main_k0_matmul" loop="i" axis="blockIdx.x"}' in s.pipeline()
    replayed = Schedule.replay(Schedule.for_model(matmul_graph()).module, s.python())
    assert str(replayed.module) == str(s.module)


def test_each_nest_binds_its_own_axes() -> None:
    s = Schedule.for_model(matmul_graph())
    s.bind(MATMUL, "i", "blockIdx.x")
    s.bind(MATMUL, "i_init", "blockIdx.x")  # another top-level nest: another launch
    with pytest.raises(AxisAlreadyBoundError, match="already bound to loop 'i'"):
        s.bind(MATMUL, "k", "blockIdx.x")


def test_threads_inside_blocks() -> None:
    s = Schedule.for_model(matmul_graph())
    s.bind(MATMUL, "i", "threadIdx.x")
    with pytest.raises(BindNestingError, match="threadIdx loops go inside blockIdx"):
        s.bind(MATMUL, "j", "blockIdx.x")
    assert loop_axes(s, MATMUL)["j"] is None  # the failed request left no mark


def test_thread_limit() -> None:
    s = Schedule.for_model(matmul_graph(m=4, k=4, n=2048))
    with pytest.raises(LaunchLimitError, match="2048 iterations, over the limit 1024"):
        s.bind(MATMUL, "j", "threadIdx.x")
    s.split(MATMUL, "j", 256)
    s.bind(MATMUL, "j_o", "blockIdx.x")
    s.bind(MATMUL, "j_i", "threadIdx.x")
    s2 = Schedule.for_model(matmul_graph(m=4, k=4, n=2048))
    s2.split(MATMUL, "j", 512)
    s2.bind(MATMUL, "j_o", "threadIdx.y")
    with pytest.raises(LaunchLimitError, match="2048 threads per block"):
        s2.bind(MATMUL, "j_i", "threadIdx.x")


def test_split_extent_is_the_constant_bound() -> None:
    g = Graph("main")
    x = g.input("x", (1000,))
    g.output(g.relu(x))
    s = Schedule.for_model(g)
    (kernel,) = s.kernels()
    s.split(kernel, "i0", 256)
    s.bind(kernel, "i0_o", "blockIdx.x")
    s.bind(kernel, "i0_i", "threadIdx.x")
    from qidao.passes.schedule.loops.nest import find_loop

    assert launch_extent(find_loop(s.module, "t", kernel, "i0_i")[1]) == 256
    assert launch_extent(find_loop(s.module, "t", kernel, "i0_o")[1]) == 4


def test_reduction_loop_is_refused() -> None:
    g = Graph("main")
    x = g.input("x", (8, 50))
    g.output(g.softmax(x))
    s = Schedule.for_model(g)
    with pytest.raises(IllegalScheduleError, match="iter_args"):
        s.bind("main_k0_softmax", "r_max", "threadIdx.x")
    s.bind("main_k0_softmax", "i0", "blockIdx.x")
    # r_norm is legal for one row, but the r_sum loop next to it writes %out too
    # and every thread would run it: refused.
    with pytest.raises(IllegalScheduleError, match="outside the innermost bound"):
        s.bind("main_k0_softmax", "r_norm", "threadIdx.x")


def test_unknown_axis() -> None:
    s = Schedule.for_model(matmul_graph())
    with pytest.raises(InvalidArgumentError, match=r"unknown axis 'blockIdx\.w'"):
        s.bind(MATMUL, "i", "blockIdx.w")


def test_threads_is_parallel_and_runs_on_the_cpu() -> None:
    a = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((8, 12)).astype(np.float32)

    def schedule(s: Schedule) -> None:
        s.bind(MATMUL, "i", "threads")

    compiled = qidao.compile(matmul_graph(), schedule=schedule, threads=2)
    assert "qd.parallel" in compiled.ir("schedule")
    (y,) = compiled(a, b)
    np.testing.assert_allclose(y, a @ b, rtol=1e-5, atol=1e-5)


def test_threads_and_gpu_axes_do_not_mix() -> None:
    s = Schedule.for_model(matmul_graph())
    s.bind(MATMUL, "i", "threads")
    with pytest.raises(IllegalScheduleError, match="do not mix"):
        s.bind(MATMUL, "i_init", "blockIdx.x")


def test_cpu_pipeline_refuses_gpu_loops() -> None:
    def schedule(s: Schedule) -> Any:
        s.bind(MATMUL, "i", "blockIdx.x")

    with pytest.raises(GpuLoopOnCpuError, match=r"bound to blockIdx\.x, a GPU axis"):
        qidao.compile(matmul_graph(), schedule=schedule)
