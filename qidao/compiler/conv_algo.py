"""Measured convolution algorithms: ``qidao.compile(model, algo="benchmark")``.

Like ``torch.backends.cudnn.benchmark``: the first compile that meets a convolution
(by its shapes, strides, padding and bias) compiles every algorithm that can compute
it (``qidao/passes/graph/select_conv_algo.py``) as a one-convolution program, times
each on this CPU with the compile's thread count (median of repeated calls after a
warm-up), and keeps the fastest. The choice and the times go into a records file,
one JSON line per convolution:

    {"version": 1, "signature": "conv2d-nhwc x1x56x56x64 w3x3x64x64 s1,1 p1,1,1,1 d1,1 nobias",
     "cpu": "AMD EPYC ...", "threads": 1, "compiler": "<digest>",
     "times_us": {"direct": 2210.4, "im2col": 3150.2, "winograd": 905.7},
     "choice": "winograd"}

in the compile cache's folder (``qidao.compiler.cache``: ``$QIDAO_CACHE_DIR``, else
``~/.cache/qidao``), ``conv-algo.jsonl``. A later compile on the same CPU, thread
count and qidao sources reads the choice instead of measuring again. A line that is
not such a record (corrupt, truncated, another version), or whose choice is not one
of its timed algorithms, is skipped and the convolution measured again; one for
another CPU, thread count or compiler version does not apply. With the cache off
(``QIDAO_CACHE=off``) nothing is read or written: every compile measures.

``stats["conv_algo"]`` names, for each convolution, the choice and the times it was
made from (``"winograd: benchmark: direct 2210 us, im2col 3150 us, winograd 906
us"``), or ``"(recorded)"`` when it came from the file.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import Float64Type, TensorType
from xdsl.ir import Block, Operation, Region

from qidao.compiler.cache import cache_dir, cache_enabled, compiler_digest
from qidao.compiler.cache.files import (
    UntrustedError,
    append_file,
    make_private_folder,
    open_folder,
    read_file,
)
from qidao.compiler.tune.records import cpu_model
from qidao.dialects import tg
from qidao.dialects.tg.base import ints
from qidao.dialects.tg.linalg import NHWC
from qidao.dialects.tg.types import shape_of
from qidao.passes.graph.select_conv_algo import ALGORITHMS, signature
from qidao.runtime.timing import median, time_calls

VERSION = 1
RECORDS_NAME = "conv-algo.jsonl"
RECORDS_CAP = 16 << 20
"""The most bytes of records read (a larger file is not read: every convolution
is measured again)."""
MIN_TIME = 0.1
"""Seconds of timed calls per algorithm (after the warm-up)."""
MAX_RUNS = 200
_lock = threading.Lock()


def records_path() -> Path:
    return cache_dir() / RECORDS_NAME


CompileFn = Callable[..., Any]
"""``qidao.compile``'s signature: ``f(module, threads=, algo=) -> Compiled``."""


def measured_choice(
    compile_fn: CompileFn, op: tg.Conv2dOp, can: dict[str, str], threads: int
) -> tuple[str, str]:
    """The fastest applicable algorithm for ``op`` and why (module docstring), each
    candidate compiled with ``compile_fn``."""
    candidates = [a for a in ALGORITHMS if not can[a]]
    if len(candidates) == 1:
        return candidates[0], "benchmark: the only algorithm that applies"
    key = _key(op, threads)
    recorded = _recorded(key, candidates) if cache_enabled() else None
    if recorded is not None:
        choice, times = recorded
        return choice, f"benchmark (recorded): {_fmt(times)}"
    times = {algo: _time(compile_fn, op, algo, threads) for algo in candidates}
    choice = min(times, key=times.__getitem__)
    if cache_enabled():
        _append({**key, "times_us": times, "choice": choice})
    return choice, f"benchmark: {_fmt(times)}"


def _fmt(times: dict[str, float]) -> str:
    return ", ".join(f"{algo} {us:.0f} us" for algo, us in times.items())


def _key(op: tg.Conv2dOp, threads: int) -> dict[str, Any]:
    return {
        "version": VERSION,
        "signature": signature(op),
        "cpu": cpu_model(),
        "threads": threads,
        "compiler": compiler_digest(),
    }


def _valid(record: object, candidates: list[str]) -> bool:
    """A record of this format whose choice is one of its timed algorithms, all of
    them applicable now."""
    if not isinstance(record, dict):
        return False
    times = record.get("times_us")
    return (
        isinstance(times, dict)
        and all(
            isinstance(a, str)
            and a in candidates
            and isinstance(t, int | float)
            and not isinstance(t, bool)
            and np.isfinite(t)
            and t > 0
            for a, t in times.items()
        )
        and record.get("choice") in times
    )


def _recorded(
    key: dict[str, Any], candidates: list[str]
) -> tuple[str, dict[str, float]] | None:
    """The last valid record for ``key`` in the records file, if any."""
    found = None
    for line in _records_text().splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a damaged line: measured again
        if (
            isinstance(record, dict)
            and all(record.get(k) == v for k, v in key.items())
            and _valid(record, candidates)
        ):
            found = str(record["choice"]), dict(record["times_us"])
    return found


def _records_text() -> str:
    """The records file's text; empty if there is none or it cannot be trusted
    (read as the compile cache reads its entries: ``qidao.compiler.cache.files``)."""
    try:
        with open_folder(cache_dir()) as fd:
            data = read_file(fd, RECORDS_NAME, RECORDS_CAP)
    except (OSError, UntrustedError):
        return ""
    return data.decode("utf-8", errors="replace")


def recorded_count() -> int:
    """How many records the records file holds (lines)."""
    return len(_records_text().splitlines())


def _append(record: dict[str, Any]) -> None:
    """One line, appended whole (a failed write leaves the choice unrecorded)."""
    line = (json.dumps(record, sort_keys=True) + "\n").encode()
    try:
        make_private_folder(cache_dir())
        with _lock, open_folder(cache_dir()) as fd:
            append_file(fd, RECORDS_NAME, line)
    except (OSError, UntrustedError):
        pass


def single_conv_module(op: tg.Conv2dOp) -> builtin.ModuleOp:
    """A program computing only ``op``: its input as the argument (row-major NHWC),
    its weight and bias as constants (their values when they are constants, else
    random ones of the same shapes)."""
    rng = np.random.default_rng(0)
    x_type = TensorType(tensor_element(op), shape_of(op.input.type))
    dtype = _dtype(op)
    block = Block(arg_types=[x_type])
    ops: list[Operation] = []

    def constant(value: Any) -> tg.ConstantOp:
        owner = value.owner
        if isinstance(owner, tg.ConstantOp):
            array = owner.to_numpy()
        else:
            shape = shape_of(value.type)
            array = (rng.standard_normal(shape) * 0.1).astype(dtype)
        c = tg.ConstantOp.from_numpy(array)
        ops.append(c)
        return c

    w = constant(op.weight)
    b = None if op.bias is None else constant(op.bias)
    conv = tg.Conv2dOp(
        block.args[0],
        w.result,
        None if b is None else b.result,
        strides=ints(op.strides),
        padding=ints(op.padding),
        dilation=ints(op.dilation),
        groups=op.groups.value.data,
        layout=NHWC,
    )
    ops += [conv, func.ReturnOp(conv.result)]
    block.add_ops(ops)
    main = func.FuncOp("main", ([x_type], [conv.result.type]), Region(block))
    return builtin.ModuleOp([main])


def tensor_element(op: tg.Conv2dOp) -> Any:
    t = op.input.type
    assert isinstance(t, TensorType)
    return t.get_element_type()


def _dtype(op: tg.Conv2dOp) -> type[np.floating[Any]]:
    return np.float64 if isinstance(tensor_element(op), Float64Type) else np.float32


def _time(compile_fn: CompileFn, op: tg.Conv2dOp, algo: str, threads: int) -> float:
    """Median microseconds of one call of ``op`` computed by ``algo``."""
    compiled = compile_fn(single_conv_module(op), threads=threads, algo=algo)
    x = np.random.default_rng(1).standard_normal(shape_of(op.input.type))
    x = x.astype(_dtype(op))
    times = time_calls(
        lambda: compiled(x), warmup=3, min_time=MIN_TIME, max_calls=MAX_RUNS
    )
    return median(times) * 1e6
