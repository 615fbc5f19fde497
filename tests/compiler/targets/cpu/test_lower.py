"""The CPU stages below the schedule, spread over processes
(``qidao/compiler/targets/cpu/lower.py``): the same program as lowering in one
process, checked against NumPy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.targets.cpu import lower
from qidao.frontend.builder import Graph
from qidao.runtime.cpu import JitError, pack_objects, unpack_objects

RNG = np.random.default_rng(3)
X = RNG.standard_normal((16, 32)).astype(np.float32)
W = RNG.standard_normal((32, 32)).astype(np.float32)  # 4 KiB: a weight


def many_kernels() -> Graph:
    """Eleven kernels (fuse=False), no two alike, one reading a weight."""
    g = Graph()
    x = g.input("x", (16, 32))
    y = g.matmul(x, g.constant(W))
    y = g.tanh(y)
    y = g.neg(y)
    y = g.exp(y)
    y = g.sqrt(y)
    y = g.sigmoid(y)
    y = g.relu(y)
    y = g.abs(y)
    y = g.log(g.add(y, 1.0))
    g.output(g.erf(y))
    return g


def reference() -> np.ndarray[Any, Any]:
    from math import erf

    y = np.sqrt(np.exp(-np.tanh(X @ W)))
    y = np.abs(np.maximum(1 / (1 + np.exp(-y)), 0))
    return np.vectorize(erf)(np.log(y + 1.0)).astype(np.float32)


def compile_many(**options: Any) -> Any:
    return qidao.compile(many_kernels(), threads=1, fuse=False, **options)


def test_parts_in_processes_run_the_same_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QIDAO_COMPILE_JOBS", "2")
    spread = compile_many()
    assert spread.stats["compile_processes"] == 2
    np.testing.assert_allclose(spread(X)[0], reference(), rtol=1e-5, atol=1e-6)
    monkeypatch.setenv("QIDAO_COMPILE_JOBS", "1")
    serial = compile_many()
    assert serial.stats["compile_processes"] == 1
    np.testing.assert_array_equal(spread(X)[0], serial(X)[0])
    # the linked text defines every kernel once; the IR stages are made on demand
    llvm = spread.ir("llvm")
    assert llvm.count("define ") == serial.ir("llvm").count("define ")
    assert spread.ir("scf") == serial.ir("scf")
    # each worker compiled its part: the engine loaded two objects; the optimized
    # IR and the assembly are made from the linked text when asked for
    assert spread._jit.object_code.startswith(b"QIDAO-OBJECTS-1")
    assert len(unpack_objects(spread._jit.object_code)) == 2
    assert "main_k3_" in spread.ir("llvm-opt") and "vfmadd" in spread.ir("asm")


def _compile_and_run_in_worker(_: int) -> tuple[int, np.ndarray[Any, Any]]:
    compiled = compile_many()
    return compiled.stats["compile_processes"], compiled(X)[0]


def test_a_pool_worker_lowers_in_its_own_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``multiprocessing.Pool`` worker is a daemon, which may not start processes
    (``qidao fuzz`` found "daemonic processes are not allowed to have children"
    from a model of eight kernels): it lowers the parts itself."""
    import multiprocessing

    monkeypatch.delenv("QIDAO_COMPILE_JOBS", raising=False)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        processes, result = pool.map(_compile_and_run_in_worker, [0])[0]
    assert processes == 1
    np.testing.assert_allclose(result, reference(), rtol=1e-5, atol=1e-6)


def test_objects_pack_and_a_damaged_pack_is_refused() -> None:
    codes = [b"\x7fELF one", b"\x7fELF two", b"three"]
    blob = pack_objects(codes)
    assert unpack_objects(blob) == codes
    assert pack_objects(codes[:1]) == codes[0] == unpack_objects(codes[0])[0]
    huge_count = blob[:16] + (2**32 - 1).to_bytes(4, "little") + blob[20:]
    for damaged in (blob[:-1], blob + b"x", blob[:20], huge_count):
        with pytest.raises(JitError, match="packed object code is damaged"):
            unpack_objects(damaged)


def test_a_cache_hit_loads_the_parts_objects(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("QIDAO_COMPILE_JOBS", "2")
    monkeypatch.setenv("QIDAO_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("QIDAO_CACHE", "on")
    first = compile_many(verify="stage")  # "each" is never cached
    assert first.stats["cache"] == "miss, stored"
    again = compile_many(verify="stage")
    assert again.stats["cache"] == "hit"
    np.testing.assert_array_equal(again(X)[0], first(X)[0])


def test_a_failing_part_lowers_again_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QIDAO_COMPILE_JOBS", "2")
    monkeypatch.setattr(lower, "_lower_part", lambda index: None)
    compiled = compile_many()
    assert compiled.stats["compile_processes"] == 1
    np.testing.assert_allclose(compiled(X)[0], reference(), rtol=1e-5, atol=1e-6)


def test_a_small_model_lowers_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QIDAO_COMPILE_JOBS", "2")
    g = Graph()
    x = g.input("x", (4,))
    g.output(g.relu(x))
    assert qidao.compile(g).stats["compile_processes"] == 1


def test_partition_gives_every_kernel_one_part() -> None:
    module = qidao.compile(many_kernels(), fuse=False).module("schedule")
    parts = lower.partition(module, 3)
    names = [name for part in parts for name in part]
    assert len(names) == len(set(names)) == 11
    assert all(parts)


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_job_count_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("QIDAO_COMPILE_JOBS", value)
    with pytest.raises(ValueError, match="QIDAO_COMPILE_JOBS must be a positive"):
        compile_many()
