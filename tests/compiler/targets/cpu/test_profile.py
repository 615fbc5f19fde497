"""Per-kernel profiling: ``qidao.compile(model, profile=True)``, ``compiled.profile``,
``qidao profile``, and the ``instrument-kernels`` pass it runs."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context

import qidao
from qidao import Compiled
from qidao.examples import chain_graph
from qidao.frontend.builder import Graph
from qidao.passes.cpu.instrument_kernels import InstrumentError, InstrumentKernelsPass
from qidao.tools.cli import main


def _two_kernels(n: int = 1 << 12) -> Graph:
    """exp(x) @ w then a softmax: three kernels (no prologues: exp is its own)."""
    g = Graph("main")
    x = g.input("x", (64, n // 64))
    w = g.input("w", (n // 64, 32))
    g.output(g.softmax(g.exp(x) @ w))
    return g


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [
        rng.standard_normal((64, 64)).astype(np.float32) * 0.1,
        rng.standard_normal((64, 32)).astype(np.float32) * 0.1,
    ]


def test_profiled_code_computes_the_same_results() -> None:
    x, w = _inputs()
    plain = qidao.compile(_two_kernels())
    profiled = qidao.compile(_two_kernels(), profile=True)
    np.testing.assert_array_equal(profiled(x, w)[0], plain(x, w)[0])
    e = np.exp(x.astype(np.float64)) @ w
    want = np.exp(e - e.max(-1, keepdims=True))
    want /= want.sum(-1, keepdims=True)
    np.testing.assert_allclose(profiled(x, w)[0], want, rtol=1e-5, atol=1e-6)


def test_profile_times_every_kernel_once_per_call() -> None:
    compiled = qidao.compile(_two_kernels(), profile=True)
    assert isinstance(compiled, Compiled)
    report = compiled.profile(*_inputs(), runs=20)
    names = [k.kernel for k in report.kernels]
    assert len(names) == compiled.stats["kernels"] == 3
    assert [k.ops.split("+")[0] for k in report.kernels] == [
        "tg.exp",
        "tg.matmul",
        "tg.softmax",
    ]
    assert all(k.calls == 1 for k in report.kernels)
    assert all(k.median_us > 0 for k in report.kernels)
    # the kernels run inside the call: their medians cannot add up to much more
    # than the median call (medians of parts may exceed the part of a median a bit)
    assert sum(k.median_us for k in report.kernels) < 1.5 * report.total_us
    text = str(report)
    assert "main_k1_matmul" in text and "(host)" in text and "median of 20" in text


def test_a_bigger_kernel_takes_longer() -> None:
    # the same chain at 2^12 and 2^20 floats: the timer must see the difference
    small = qidao.compile(chain_graph(1 << 12), profile=True, threads=1)
    big = qidao.compile(chain_graph(1 << 20), profile=True, threads=1)
    assert isinstance(small, Compiled) and isinstance(big, Compiled)
    x_small = np.ones(1 << 12, np.float32)
    x_big = np.ones(1 << 20, np.float32)
    t_small = small.profile(x_small, runs=20).kernels[0].median_us
    t_big = big.profile(x_big, runs=10).kernels[0].median_us
    assert t_big > 20 * t_small


def test_profile_needs_profile_true() -> None:
    compiled = qidao.compile(_two_kernels())
    assert isinstance(compiled, Compiled)
    with pytest.raises(ValueError, match="compiled without profile=True"):
        compiled.profile(*_inputs())


def test_profile_checks_its_arguments_first() -> None:
    compiled = qidao.compile(_two_kernels(), profile=True)
    assert isinstance(compiled, Compiled)
    x, w = _inputs()
    with pytest.raises(Exception, match="input 'w'"):
        compiled.profile(x, w[:10])
    with pytest.raises(ValueError, match="runs must be at least 1"):
        compiled.profile(x, w, runs=0)


def test_the_timers_show_in_the_ir_from_the_scf_stage_on() -> None:
    compiled = qidao.compile(_two_kernels(), profile=True)
    assert "qidao_profile_start" not in compiled.ir("schedule")
    assert "func.call @qidao_profile_start" in compiled.ir("scf")
    assert '@"qidao_profile_start"()' in compiled.ir("llvm")


def test_instrumenting_twice_is_refused() -> None:
    compiled = qidao.compile(_two_kernels(), profile=True)
    assert isinstance(compiled, Compiled)
    module = compiled.module("scf")
    with pytest.raises(InstrumentError, match="instrumented already"):
        InstrumentKernelsPass().apply(Context(), module)


def test_cli_profile_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "softmax", "--threads", "1", "--runs", "5"]) == 0
    out = capsys.readouterr().out
    assert "qidao profile: softmax" in out
    assert "main_k0_softmax" in out and "total" in out
