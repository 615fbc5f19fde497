"""``qidao bench-cuda``: qidao's CUDA C against PyTorch eager on one GPU.

    qidao bench-cuda                         # the bench workloads, CSV in bench-results/
    qidao bench-cuda tiled2048 chain24 --csv gpu_bench.csv
    qidao bench-cuda --suite targets --csv targets.csv   # + targets.png beside it
    qidao bench-cuda --list                  # the workloads and the suites

The workloads are ``qidao/bench/cuda/workloads.py``'s: a graph (or a whole model's
ONNX file, ``cuda_models.py``), its GPU schedule, inputs and references (the small
ones ``tests/compiler/targets/cuda/test_emit.py`` checks, then matmul 1024 and
2048, the five-op chain over 2^20..2^24 floats, softmax 4096 x 1024). The
``*_default`` workloads compile the same graphs with ``schedule="default"``
(``qidao/compiler/targets/cuda/defaults.py``) beside the hand-written schedules;
with no workload named they run first (``matmul1024_default``,
``matmul2048_default``, ``softmax4096_default``, ``chain24_default``), then the
other big sizes, then the small ones.

``--suite targets`` runs the workloads of the GPU speed targets, in order
(``qidao/bench/cuda/suites.py``): ``chain26`` and ``copy26`` (2^26 floats; the
copy's rows measure the device's copy bandwidth), ``softmax8192``,
``layernorm8192``, ``matmul4096`` in FP32, TF32 and FP16, ``resnet50`` (batch 32)
and ``bert`` (BERT-base, batch 8), all with the default GPU schedules; the table
and the CSV add each qidao row's target and whether it is met, and a PNG
(``--plot``, by default the CSV's path with ``.png``) draws them
(``bench_cuda_plot.py``). ``--suite targets-small`` is the same at emulator sizes
(``issue13`` and ``issue13-small``, the old names, still work, with a note).

``--suite ladder`` is the GPU ladder (``qidao/bench/cuda/ladder.py``): matmul
4096 FP32 under one schedule per rung (naive at 128^3, bind, shared, register,
tensor_cores in TF32, tuned), each beside cuBLAS in its precision, each row's
exact schedule trace in the CSV's ``schedule`` column, and a PNG of TFLOP/s per
rung (``plot_ladder``). ``--records FILE`` gives the ``tuned`` rung the records
of a ``qidao tune matmul4096 --target cuda`` run; without it that row says
``not run: no records (...)`` (not a failure). ``ladder-small`` is it at 64^3.

Each workload gets its rows (``qidao/bench/cuda/measure.py``):

- ``qidao``: compiled with ``target="cuda"`` (nvcc for the device's ``sm_XY``,
  pycuda), timed on inputs already on the device: one call is the program's
  launches in order on the default stream (no upload, no download);
- ``torch``: PyTorch eager on the same inputs as CUDA tensors, TF32 off (so both
  compute in float32) except for a ``tf32`` workload;
- ``memcpy`` (the copy workloads only): the driver's ``cuMemcpyDtoD``.

A row's output is first checked against PyTorch on the device (float64 copies of
the inputs; a whole model: eager in float32) or, on the emulator, NumPy (NaN
never passes; qidao's device buffers start as NaNs, so an unwritten element
shows); a row that differs records the error and no time. Times are CUDA events
around each call (pycuda's for qidao and memcpy, torch's for torch): 3 warm-up
calls, one to size the run, then ``--min-time`` seconds' worth of calls (10 to
``--max-runs``); the median. GFLOP/s (matmul: 2mnk per call) or GB/s (the bytes a
call must move at least: inputs read once, outputs written once) come from the
median; ``vs_torch`` is torch's median over the row's (above 1: qidao is faster)
and ``of_copy`` the row's GB/s over the copy bandwidth of as many bytes measured
in the same run (``cuda_results.py``).

The rows run in a worker process (``qidao/bench/cuda/bench.py``),
one after the other. A row that fails on the device ends its worker (a CUDA error
can leave the context unusable), and so do a crash and a row running past its
time: the larger of ``--timeout`` and its workload's own budget (``timeout_s``:
the whole models get minutes); a fresh worker then takes the rows left. A row
that fails before touching the device (a compile error, ``not built``) lets the
worker go on. ``--budget`` caps the whole run: when it is spent, the row in
progress is stopped and the rows left are recorded as skipped. One progress line
per row goes to stderr as it comes, and the CSV is rewritten after every row, so
an interrupted run keeps what it measured.

With no usable GPU it prints ``qidao bench-cuda: no CUDA device: <reason>`` and
exits 3 (1: a row failed or was skipped; 0: every row measured, ``not built``
rows aside; a target that is not met does not change the status). ``--device
emulate`` runs the qidao rows on the CPU emulator
(``qidao.runtime.cuda.EmulatedDevice``) with wall-clock times: for testing this
command on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from qidao.bench.cuda.bench import DEFAULT_CSV, DEVICES, NO_DEVICE_EXIT, run_bench_cuda
from qidao.bench.cuda.measure import BACKENDS
from qidao.bench.cuda.results import failures, format_table


def add_bench_cuda_parser(sub: Any) -> None:
    """``qidao bench-cuda`` (called by ``qidao.tools.cli.build_parser``)."""
    p = sub.add_parser(
        "bench-cuda",
        help="time the GPU workloads' CUDA C against PyTorch eager on a CUDA GPU",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "workloads", nargs="*", help="GPU workloads (default: all, the big ones first)"
    )
    p.add_argument(
        "--suite",
        help="run a suite's workloads in its order (targets, targets-small, ladder, "
        "ladder-small; --list)",
    )
    p.add_argument(
        "--records",
        help="a `qidao tune ... --target cuda` records file for the workloads that "
        "take one (the ladder's tuned rung)",
    )
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument(
        "--backends",
        nargs="*",
        choices=BACKENDS,
        help="qidao, memcpy (copies only), torch (default: all)",
    )
    p.add_argument(
        "--device",
        default="cuda",
        choices=DEVICES,
        help="cuda (default) or emulate: the qidao rows on the CPU emulator",
    )
    p.add_argument("--min-time", type=float, default=0.3, help="seconds timed per row")
    p.add_argument("--max-runs", type=int, default=200, help="most calls timed per row")
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds a row may take before its worker is killed, at least (a "
        "workload may have a longer budget of its own; default 60)",
    )
    p.add_argument(
        "--budget",
        type=float,
        help="seconds for the whole run: then the rows left are skipped",
    )
    p.add_argument(
        "--csv", default=DEFAULT_CSV, help=f"CSV path (default {DEFAULT_CSV})"
    )
    p.add_argument(
        "--plot",
        help="PNG of the ratios and targets (default with --suite: the CSV's path "
        "with .png)",
    )
    p.set_defaults(run=cmd_bench_cuda)


def _list() -> None:
    from qidao.bench.cuda.suites import ALL_WORKLOADS, SUITES

    for name, w in ALL_WORKLOADS.items():
        print(f"{name:<22} {w.summary}")
    for suite, names in SUITES.items():
        print(f"\nsuite {suite}: {' '.join(names)}")


def _workloads(args: argparse.Namespace) -> list[str]:
    """The workloads to run, in order, or a ValueError naming the bad ones."""
    from qidao.bench.cuda.suites import ALL_WORKLOADS, SUITE_ALIASES, SUITES
    from qidao.bench.cuda.workloads import BENCH_WORKLOADS, LARGE_WORKLOADS

    if args.suite in SUITE_ALIASES:
        new = SUITE_ALIASES[args.suite]
        print(
            f"qidao bench-cuda: --suite {args.suite} is deprecated: it is now "
            f"--suite {new}",
            file=sys.stderr,
        )
        args.suite = new
    if args.suite is not None:
        if args.workloads:
            raise ValueError("name workloads or a --suite, not both")
        if args.suite not in SUITES:
            raise ValueError(
                f"unknown suite '{args.suite}'; choose from {', '.join(SUITES)}"
            )
        return list(SUITES[args.suite])
    # the default schedules at the big sizes first, then the hand-written ones:
    # the numbers that matter are in before a timeout
    default = [
        *LARGE_WORKLOADS,
        *(w for w in BENCH_WORKLOADS if w not in LARGE_WORKLOADS),
    ]
    workloads = list(args.workloads) or default
    unknown = [w for w in workloads if w not in ALL_WORKLOADS]
    if unknown:
        raise ValueError(
            f"unknown GPU workload(s) {', '.join(unknown)}; choose from "
            f"{', '.join(ALL_WORKLOADS)}"
        )
    return workloads


def cmd_bench_cuda(args: argparse.Namespace) -> int:
    if args.list:
        _list()
        return 0
    workloads = _workloads(args)
    backends = args.backends or (BACKENDS if args.device == "cuda" else ("qidao",))
    if args.device != "cuda" and set(backends) - {"qidao"}:
        raise ValueError("the torch and memcpy rows need --device cuda")
    if args.device == "cuda":
        from qidao.runtime.cuda import cuda_unavailable_reason

        reason = cuda_unavailable_reason()
        if reason is not None:
            print(f"qidao bench-cuda: no CUDA device: {reason}", file=sys.stderr)
            return NO_DEVICE_EXIT
    if args.records is not None and not Path(args.records).is_file():
        raise ValueError(f"--records {args.records}: no such file")
    csv_path = Path(args.csv)
    results = run_bench_cuda(
        workloads,
        backends,
        args.device,
        args.min_time,
        args.max_runs,
        args.timeout,
        csv_path,
        budget=args.budget,
        records=args.records,
    )
    print(format_table(results))
    print(f"\nCSV: {csv_path}")
    status = 1 if failures(results) else 0
    plot = args.plot or (csv_path.with_suffix(".png") if args.suite else None)
    if plot is not None:
        from qidao.bench.cuda.plot import plot_for

        try:
            plot_for(args.suite)(results, Path(plot))
            print(f"plot: {plot}")
        except (RuntimeError, OSError, ValueError) as err:
            print(f"qidao bench-cuda: plot not written: {err}", file=sys.stderr)
            status = 1
    return status
