"""Parallel kernels after ``fork`` (``qidao/runtime/cpu.py``, the fork guard).

libgomp's thread pool does not survive ``fork``: before the guard, a child of a
process that had run a parallel kernel hung in its first parallel call. Each child
here must finish within a timeout and compute what NumPy computes; the parent keeps
its threads.
"""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph
from qidao.runtime.cpu import running_serially_after_fork

N = 256
TIMEOUT = 120


def _matmul() -> qidao.Compiled:
    g = Graph("main")
    x, w = g.input("x", (N, N)), g.input("w", (N, N))
    g.output(x @ w)
    compiled = qidao.compile(g, threads=2)
    assert "on 2 threads" in compiled.stats["default_schedule"]["main_k0_matmul"]
    return compiled


def _inputs(seed: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((N, N)).astype(np.float32) for _ in range(2))  # type: ignore[return-value]


def _error(compiled: qidao.Compiled, seed: int) -> float:
    x, w = _inputs(seed)
    (got,) = compiled(x, w)
    return float(np.abs(got - x @ w).max())


def _child(compiled: qidao.Compiled, queue: Any) -> None:
    queue.put((running_serially_after_fork(), _error(compiled, 1)))


def test_a_forked_child_runs_parallel_kernels_serially() -> None:
    compiled = _matmul()
    assert _error(compiled, 0) < 1e-3  # the parent ran it on its threads first
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(compiled, queue))
    child.start()
    child.join(TIMEOUT)
    if child.is_alive():
        child.kill()
        pytest.fail(f"the forked child did not finish in {TIMEOUT} s (libgomp hang)")
    assert child.exitcode == 0
    serial, error = queue.get(timeout=5)
    assert serial and error < 1e-3
    assert not running_serially_after_fork()
    assert _error(compiled, 2) < 1e-3  # and the parent still works after the fork


def test_dataloader_workers_call_a_parallel_kernel() -> None:
    torch = pytest.importorskip("torch")
    compiled = _matmul()
    _error(compiled, 0)

    class Products(torch.utils.data.Dataset):  # type: ignore[misc, name-defined]
        def __len__(self) -> int:
            return 4

        def __getitem__(self, i: int) -> float:
            return _error(compiled, 10 + i)

    loader = torch.utils.data.DataLoader(
        Products(),
        batch_size=None,
        num_workers=2,
        multiprocessing_context="fork",
        timeout=TIMEOUT,
    )
    errors = [float(e) for e in loader]
    assert len(errors) == 4 and max(errors) < 1e-3
