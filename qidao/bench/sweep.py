"""``qidao bench sweep``: every ``transformers`` architecture it can build, through qidao.

    qidao bench sweep                          # every architecture (hours)
    qidao bench sweep --only bert gpt2 vit     # three architectures
    qidao bench sweep --limit 20 --no-time     # the first 20: does it run, is it right
    qidao bench sweep --csv docs/benchmarks/sweep.csv
    qidao bench sweep --dtype bfloat16 --only bert gpt2 vit --no-time

The architectures are ``transformers``' auto mappings'
(``qidao/bench/sweep_configs.py``): per ``model_type``, its image-classification,
causal-LM (decoders) or base model class, built from its default config made small
(random weights, no download). Each goes through four jobs
(``qidao/bench/sweep_jobs.py``), each in a worker process of its own kind with its
threads pinned to 1 (the runtime's worker harness): ``export`` (build, PyTorch
eager, ``torch.onnx.export``), ``ort`` (ONNX Runtime), ``qidao`` (``qidao.compile``
on the ONNX file) and ``torch`` (``torch.compile(backend="qidao")``). A job that
crashes its worker or runs past ``--timeout`` seconds is recorded as such and a
fresh worker takes the next one: nothing stops the sweep. ``--jobs N`` runs N
architectures at once (their times then share the cores).

One CSV row per architecture, written as each finishes (``CSV_FIELDS``):
``export`` is ``ok``, ``build failed`` or ``export failed``; ``ort`` ``ok``,
``failed`` or ``differs`` (from eager by more than 1e-3 of its largest magnitude: a
model that draws random numbers at each call, such as ViT-MAE's masking, which the
summary leaves out); ``qidao`` ``ok``, ``refused`` (a ``QidaoError``: ``qidao_error`` is
its first line), ``wrong`` (largest error over ONNX Runtime's largest magnitude
above 1e-3: ``qidao_vs_ort``), ``internal`` (another exception: qidao's bug),
``crashed`` or ``timeout``; ``torch`` ``ok``, ``fell back`` (``torch_parts``
compiled by qidao, ``torch_fallback`` ran in PyTorch), ``wrong``, ``failed``,
``crashed`` or ``timeout``. With timing (not ``--no-time``), ``ort_us`` and
``qidao_us`` are the medians at one thread (3 warm-up calls, then at least 5 calls
and half a second) and ``qidao_over_ort`` their ratio (below 1: qidao is faster).

The summary: of the architectures ONNX Runtime runs, how many qidao runs right;
the geometric mean of ``qidao_over_ort``; the most common refusal reasons (each
unsupported op type counts once per architecture), the same for torch.compile's
fallback operators and failures, and for the build and export failures.

``--dtype bfloat16`` (``dtype`` column; float32 is the default, and a CSV written
before the column reads as float32) sweeps each model ``.to(torch.bfloat16)``, its
floating inputs with it (token ids stay int64). ``export`` is then ``ok``, ``build
failed``, ``eager failed`` (PyTorch cannot run the bfloat16 model) or ``export
failed``; ``eager_max`` is eager's largest magnitude and ``eager_vs_fp32`` its
error against the float32 model's output. ``ort`` is ``skipped`` (``ORT_BF16``:
its CPU provider has no bfloat16 ``Gemm``/``MatMul``), so ``qidao_vs_ort`` is
against eager in bfloat16; ``torch`` runs wherever eager ran, the export
notwithstanding. ``ok`` and ``wrong`` are within ``BF16_ULPS`` bfloat16 ulps of
eager's largest magnitude (``qidao/bench/sweep_jobs.py``); ``qidao_vs_fp32`` and
``torch_vs_fp32`` are each path's error against the float32 model
(informational). The summary (:func:`summarize_narrow`) counts, of the
architectures eager runs in bfloat16, how many each path runs right, the errors'
spread in ulps, and the reasons. ``torch_vs_eager`` (any dtype) is the
torch.compile path's error against eager.
"""

from __future__ import annotations

import csv
import math
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from qidao.bench.sweep_jobs import BF16_ULPS, DTYPES, JOBS, ORT_BF16
from qidao.bench.zoo import geomean
from qidao.runtime.worker import Answer, Worker

WORKER = "qidao.bench.sweep_jobs"
"""The module whose workers run the sweep's jobs."""

DEFAULT_TIMEOUT = 300.0
"""Seconds one job may run before its worker is killed."""

RECYCLE = 20
"""Requests a worker answers before a fresh one replaces it (memory that
hundreds of models leave behind)."""

TOP = 10
"""Reasons listed per kind in the summary."""


@dataclass
class SweepRow:
    """One architecture: what each of its jobs said."""

    arch: str
    model_class: str = ""
    dtype: str = "float32"
    inputs: str = ""
    output: str = ""
    params: int | None = None
    export: str = ""
    export_error: str = ""
    eager_max: float = math.nan
    eager_vs_fp32: float = math.nan
    ort: str = ""
    ort_error: str = ""
    ort_vs_eager: float = math.nan
    qidao: str = ""
    qidao_error: str = ""
    qidao_vs_ort: float = math.nan
    qidao_vs_fp32: float = math.nan
    qidao_kernels: int | None = None
    qidao_compile_s: float = math.nan
    torch: str = ""
    torch_error: str = ""
    torch_graphs: int | None = None
    torch_parts: int | None = None
    torch_fallback: str = ""
    torch_vs_eager: float = math.nan
    torch_vs_fp32: float = math.nan
    ort_us: float = math.nan
    qidao_us: float = math.nan
    seconds: float = math.nan
    qidao_reasons: list[str] = field(default_factory=list)
    torch_reasons: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """qidao's median over ONNX Runtime's: below 1, qidao is faster."""
        return self.qidao_us / self.ort_us


CSV_FIELDS = [f.name for f in fields(SweepRow)] + ["qidao_over_ort"]
"""The CSV's columns: every field of a row (reasons ``;``-separated), then the
ratio."""


def csv_record(row: SweepRow) -> dict[str, str]:
    """A row as CSV text: a missing number is empty, reasons ``;``-separated."""
    record: dict[str, str] = {}
    for key, value in [*asdict(row).items(), ("qidao_over_ort", row.ratio)]:
        if isinstance(value, list):
            record[key] = ";".join(value)
        elif isinstance(value, float):
            record[key] = f"{value:.4g}" if math.isfinite(value) else ""
        else:
            record[key] = "" if value is None else str(value)
    return record


class CsvStream:
    """The CSV, its header at once and a line per row as it comes (flushed)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = path.open("w", newline="")
        self.writer = csv.DictWriter(self.file, fieldnames=CSV_FIELDS)
        self.writer.writeheader()
        self.file.flush()
        self.lock = threading.Lock()

    def write(self, row: SweepRow) -> None:
        with self.lock:
            self.writer.writerow(csv_record(row))
            self.file.flush()

    def close(self) -> None:
        self.file.close()


def read_csv(path: Path) -> list[SweepRow]:
    """The rows of a CSV that :class:`CsvStream` wrote; a column an older CSV lacks
    (``dtype``, the bfloat16 errors) takes the field's default (``float32``)."""
    kinds = {f.name: str(f.type) for f in fields(SweepRow)}
    rows = []
    with path.open(newline="") as f:
        for record in csv.DictReader(f):
            values: dict[str, Any] = {}
            for key, kind in kinds.items():
                if key not in record:
                    continue
                text = record[key]
                if "list" in kind:
                    values[key] = text.split(";") if text else []
                elif kind.startswith("float"):
                    values[key] = float(text) if text else math.nan
                elif kind.startswith("int"):
                    values[key] = int(text) if text else None
                else:
                    values[key] = text
            rows.append(SweepRow(**values))
    return rows


class Workers:
    """One worker per job kind (``python -m qidao.bench.sweep_jobs KIND``, threads
    pinned to 1): those of ``kinds`` started at once (their imports overlap),
    the others when first asked; each replaced after a crash, a timeout or
    ``RECYCLE`` answers."""

    def __init__(self, kinds: Iterable[str] = ()) -> None:
        self.workers: dict[str, Worker] = {}
        self.answered: dict[str, int] = {}
        for kind in kinds:
            self._start(kind)

    def _start(self, job: str) -> Worker:
        self.workers[job] = Worker(WORKER, threads=1, args=[job])
        self.answered[job] = 0
        return self.workers[job]

    def ask(self, job: str, request: dict[str, Any], timeout: float) -> Answer:
        worker = self.workers.get(job)
        if worker is None or not worker.alive() or self.answered[job] >= RECYCLE:
            if worker is not None:
                worker.close()
            worker = self._start(job)
        answer = worker.ask({**request, "job": job}, timeout)
        self.answered[job] += 1
        if answer.status in ("crash", "timeout"):
            worker.close()
            del self.workers[job]
        return answer

    def close(self) -> None:
        for worker in self.workers.values():
            worker.close()
        self.workers.clear()


Asker = Callable[[str, dict[str, Any], float], Answer]
"""How one job is run: ``Workers.ask`` (or a stand-in in tests)."""


def _status(answer: Answer) -> str:
    """The job's status: its own, ``crashed``/``timeout`` from the harness, and
    ``internal`` for an exception the job did not catch."""
    if answer.status == "crash":
        return "crashed"
    if answer.status == "error":
        return "internal"
    return answer.status


def _error(answer: Answer) -> str:
    return str(answer.data.get("error", "")) or answer.error


def sweep_one(
    arch: str,
    model_class: str,
    ask: Asker,
    folder: Path,
    timeout: float,
    torch: bool = True,
    timed: bool = True,
    dtype: str = "float32",
) -> SweepRow:
    """One architecture's jobs, in order; an export that fails ends it, except in
    bfloat16, where the torch job runs wherever eager ran (it needs no ONNX file),
    and the ort job is ``skipped`` (``ORT_BF16``)."""
    start = time.perf_counter()
    row = SweepRow(arch, model_class, dtype)
    request = {
        "arch": arch,
        "model_class": model_class,
        "folder": str(folder),
        "dtype": dtype,
    }
    export = ask("export", request, timeout)
    row.export, row.export_error = _status(export), _error(export)
    row.inputs = str(export.data.get("inputs", ""))
    row.output = str(export.data.get("output", ""))
    row.params = export.data.get("params")
    row.eager_max = float(export.data.get("scale", math.nan))
    row.eager_vs_fp32 = float(export.data.get("error_vs_fp32", math.nan))
    if row.export == "ok":
        if dtype == "float32":
            ort = ask("ort", {**request, "time": timed}, timeout)
            row.ort, row.ort_error = _status(ort), _error(ort)
            row.ort_vs_eager = float(ort.data.get("error_vs", math.nan))
            row.ort_us = float(ort.data.get("median_us", math.nan))
        else:
            row.ort, row.ort_error = "skipped", ORT_BF16
        qidao = ask("qidao", {**request, "time": timed}, timeout)
        row.qidao, row.qidao_error = _status(qidao), _error(qidao)
        row.qidao_vs_ort = float(qidao.data.get("error_vs", math.nan))
        row.qidao_vs_fp32 = float(qidao.data.get("error_vs_fp32", math.nan))
        row.qidao_kernels = qidao.data.get("kernels")
        row.qidao_compile_s = float(qidao.data.get("compile_s", math.nan))
        row.qidao_us = float(qidao.data.get("median_us", math.nan))
        row.qidao_reasons = _reasons(qidao, row.qidao)
    if eager_ran(row) and torch:
        done = ask("torch", request, timeout)
        row.torch, row.torch_error = _status(done), _error(done)
        row.torch_graphs = done.data.get("graphs")
        row.torch_parts = done.data.get("parts")
        row.torch_fallback = str(done.data.get("fallback", ""))
        row.torch_vs_eager = float(done.data.get("error_vs", math.nan))
        row.torch_vs_fp32 = float(done.data.get("error_vs_fp32", math.nan))
        if not math.isfinite(row.eager_max):
            row.eager_max = float(done.data.get("scale", math.nan))
        row.torch_reasons = _reasons(done, row.torch)
    row.seconds = time.perf_counter() - start
    return row


def eager_ran(row: SweepRow) -> bool:
    """Whether the export job ran the model in PyTorch eager in the row's dtype:
    it exported it, or (bfloat16) only the export failed."""
    return row.export == "ok" or (
        row.dtype != "float32" and row.export == "export failed"
    )


def _reasons(answer: Answer, status: str) -> list[str]:
    """What a job's result counts as in the summary: the reasons it gave, else
    ``crashed``/``timeout``/``wrong`` and its first line."""
    given = [str(r) for r in answer.data.get("reasons", [])]
    if given or status in ("ok", ""):
        return given
    return [f"{status}: {_error(answer)}"]


def run_sweep(
    archs: dict[str, str],
    csv_path: Path | None = None,
    jobs: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    torch: bool = True,
    timed: bool = True,
    progress: bool = True,
    ask: Asker | None = None,
    dtype: str = "float32",
) -> list[SweepRow]:
    """Sweep ``archs`` (``model_type`` -> class) in ``dtype``, ``jobs`` at a time,
    each row streamed to ``csv_path``; the rows in ``archs``' order."""
    from tqdm import tqdm

    if dtype not in DTYPES:
        raise ValueError(f"--dtype must be one of {', '.join(DTYPES)}, got '{dtype}'")
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    if timeout <= 0:
        raise ValueError(f"--timeout must be positive, got {timeout:g}")
    stream = CsvStream(csv_path) if csv_path is not None else None
    scratch = Path(tempfile.mkdtemp(prefix="qidao-sweep-"))
    local = threading.local()  # each thread's workers
    pools: list[Workers] = []
    counts: Counter[str] = Counter()
    bar = tqdm(
        total=len(archs),
        desc="sweep",
        unit="arch",
        disable=not progress,
        file=sys.stderr,
    )
    lock = threading.Lock()

    def one(arch: str) -> SweepRow:
        if ask is None and not hasattr(local, "workers"):
            local.workers = Workers(
                k
                for k in JOBS
                if (torch or k != "torch") and (dtype == "float32" or k != "ort")
            )
            with lock:
                pools.append(local.workers)
        folder = scratch / arch
        folder.mkdir()
        asker = ask if ask is not None else local.workers.ask
        try:
            row = sweep_one(
                arch, archs[arch], asker, folder, timeout, torch, timed, dtype
            )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if stream is not None:
            stream.write(row)
        with lock:
            counts[row.qidao or row.export] += 1
            bar.set_postfix_str(
                ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))
            )
            bar.update()
        return row

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            rows = list(pool.map(one, archs))
    finally:
        bar.close()
        for workers in pools:
            workers.close()
        if stream is not None:
            stream.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return rows


def select(
    available: dict[str, str], only: Sequence[str] = (), limit: int | None = None
) -> dict[str, str]:
    """The architectures to sweep: ``only`` those named (each must exist), the
    first ``limit`` of them."""
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be at least 1, got {limit}")
    unknown = [name for name in only if name not in available]
    if unknown:
        raise ValueError(
            f"unknown architecture(s) {', '.join(unknown)}; the architectures are "
            "transformers' model types, such as bert, gpt2, vit, whisper"
        )
    chosen = {name: available[name] for name in only} if only else dict(available)
    return dict(list(chosen.items())[:limit])


def _counted(reasons: Iterable[str], top: int = TOP) -> list[str]:
    counts = Counter(reasons).most_common(top)
    return [f"  {n:>4}  {reason[:140]}" for reason, n in counts]


def _most_common(title: str, reasons: Sequence[str]) -> list[str]:
    """``title`` over the most common of ``reasons`` (:func:`_counted`), or no
    lines where there are none."""
    return [title, *_counted(reasons)] if reasons else []


def summarize(rows: Sequence[SweepRow]) -> str:
    """The summary (see the module docstring): the float32 rows', then the
    bfloat16 rows' (:func:`summarize_narrow`), where there are some."""
    narrow = [r for r in rows if r.dtype not in ("float32", "")]
    if not narrow:
        return _summarize_float32(rows)
    wide = [r for r in rows if r.dtype in ("float32", "")]
    parts = [_summarize_float32(wide)] if wide else []
    dtypes = sorted({r.dtype for r in narrow})
    parts += [summarize_narrow([r for r in narrow if r.dtype == d]) for d in dtypes]
    return "\n\n".join(parts)


def _summarize_float32(rows: Sequence[SweepRow]) -> str:
    """The summary of float32 rows (see the module docstring)."""
    exported = [r for r in rows if r.export == "ok"]
    ran = [r for r in exported if r.ort == "ok"]
    lines = [
        f"{len(rows)} architecture(s): {len(exported)} built and exported, ONNX "
        f"Runtime ran {len(ran)}",
    ]
    differ = [r.arch for r in exported if r.ort == "differs"]
    if differ:
        lines.append(
            f"ONNX Runtime differs from eager on {len(differ)}, left out (random "
            f"at each call?): {', '.join(differ)}"
        )
    if ran:
        ok = sum(r.qidao == "ok" for r in ran)
        lines.append(
            f"qidao ONNX: {ok} of the {len(ran)} that ONNX Runtime runs "
            f"({100 * ok / len(ran):.0f}%); "
            + ", ".join(f"{k} {n}" for k, n in _tally(r.qidao for r in ran))
        )
    ratios = [r.ratio for r in ran if r.qidao == "ok"]
    good = [x for x in ratios if math.isfinite(x)]
    if good:
        lines.append(
            f"qidao/ORT at 1 thread, geomean over {len(good)}: {geomean(good):.2f}x "
            "(below 1: qidao is faster)"
        )
    refusals = [x for r in exported if r.qidao != "ok" for x in r.qidao_reasons]
    lines += _most_common("most common qidao ONNX refusals (architectures):", refusals)
    tried = [r for r in exported if r.torch]
    if tried:
        lines.append(
            f"torch.compile: {sum(r.torch == 'ok' for r in tried)} of {len(tried)} "
            "whole in qidao; "
            + ", ".join(f"{k} {n}" for k, n in _tally(r.torch for r in tried))
        )
        fallback = [x for r in tried if r.torch != "ok" for x in r.torch_reasons]
        lines += _most_common(
            "most common torch.compile fallbacks and failures:", fallback
        )
    broken = [f"{r.export}: {r.export_error}"[:140] for r in rows if r.export != "ok"]
    lines += _most_common("most common build and export failures:", broken)
    return "\n".join(lines)


def summarize_narrow(rows: Sequence[SweepRow]) -> str:
    """The summary of rows of one narrow dtype (bfloat16): of the architectures
    PyTorch eager runs in it, how many qidao runs right on each path, the errors
    in ulps against eager and against the float32 model, the refusal and
    failure reasons."""
    dtype = rows[0].dtype if rows else "bfloat16"
    built = [r for r in rows if r.export in ("ok", "eager failed", "export failed")]
    ran = [r for r in rows if eager_ran(r)]
    exported = [r for r in ran if r.export == "ok"]
    lines = [
        f"{len(rows)} architecture(s) in {dtype}: {len(built)} built, PyTorch eager "
        f"ran {len(ran)} in {dtype}, {len(exported)} of them exported to ONNX",
        f"ONNX Runtime not run ({ORT_BF16}); each path is checked against PyTorch "
        f"eager in {dtype}, within {BF16_ULPS} {dtype} ulps of its largest magnitude",
    ]
    if ran:
        ok = sum(r.qidao == "ok" for r in ran)
        lines.append(
            f"qidao ONNX: {ok} of the {len(ran)} that eager runs in {dtype} "
            f"({100 * ok / len(ran):.0f}%); "
            + ", ".join(
                f"{k} {n}" for k, n in _tally(r.qidao or "not exported" for r in ran)
            )
        )
    tried = [r for r in ran if r.torch]
    if tried:
        right = sum(r.torch in ("ok", "fell back") for r in tried)
        lines.append(
            f"torch.compile: {right} of the {len(tried)} that eager runs in {dtype} "
            f"right ({100 * right / len(tried):.0f}%), "
            f"{sum(r.torch == 'ok' for r in tried)} whole in qidao; "
            + ", ".join(f"{k} {n}" for k, n in _tally(r.torch for r in tried))
        )
    ulps = [
        (name, [_ulps(e, r.eager_max) for r, e in errors if math.isfinite(e)])
        for name, errors in (
            ("qidao ONNX", [(r, r.qidao_vs_ort) for r in ran]),
            ("torch.compile", [(r, r.torch_vs_eager) for r in ran]),
        )
    ]
    if any(values for _, values in ulps):
        lines.append(
            f"error against eager {dtype}, in {dtype} ulps at its largest magnitude "
            "(median / 90th percentile / max):"
        )
        lines += [f"  {name}: {_spread(v)}" for name, v in ulps if v]
    fp32 = [
        (name, [e for e in errors if math.isfinite(e)])
        for name, errors in (
            (f"eager {dtype}", [r.eager_vs_fp32 for r in ran]),
            ("qidao ONNX", [r.qidao_vs_fp32 for r in ran]),
            ("torch.compile", [r.torch_vs_fp32 for r in ran]),
        )
    ]
    if any(values for _, values in fp32):
        lines.append(
            "error against the float32 model, in fractions of its largest magnitude "
            "(median / 90th percentile / max; informational):"
        )
        lines += [f"  {name}: {_spread(v, '.2g')}" for name, v in fp32 if v]
    refusals = [x for r in exported if r.qidao != "ok" for x in r.qidao_reasons]
    lines += _most_common("most common qidao ONNX refusals (architectures):", refusals)
    fallback = [x for r in tried if r.torch != "ok" for x in r.torch_reasons]
    lines += _most_common("most common torch.compile fallbacks and failures:", fallback)
    broken = [f"{r.export}: {r.export_error}"[:140] for r in rows if r.export != "ok"]
    lines += _most_common("most common build, eager and export failures:", broken)
    return "\n".join(lines)


def _ulps(error: float, scale: float) -> float:
    """A :func:`~qidao.bench.sweep_jobs.relative_error` at a reference whose
    largest magnitude is ``scale``, in bfloat16 ulps at ``scale``."""
    from qidao.bench.bf16_models import bf16_ulp

    ulp = bf16_ulp(scale) if math.isfinite(scale) and scale > 0 else 0.0
    return error * scale / ulp if ulp else error / bf16_ulp(1.0)


def _spread(values: Sequence[float], spec: str = ".2f") -> str:
    """``median / 90th percentile / max over N`` of ``values``."""
    ordered = sorted(values)
    tenth = ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]
    return (
        f"{statistics.median(ordered):{spec}} / {tenth:{spec}} / {ordered[-1]:{spec}}"
        f" over {len(ordered)}"
    )


def _tally(statuses: Iterable[str]) -> list[tuple[str, int]]:
    return sorted(Counter(statuses).items(), key=lambda kv: (-kv[1], kv[0]))


def format_table(rows: Sequence[SweepRow]) -> str:
    """A line per architecture: class, what each job said, qidao/ORT."""
    w = max([12, *(len(r.arch) for r in rows)])
    c = max([10, *(len(r.model_class) for r in rows)])
    header = (
        f"{'arch':<{w}} {'class':<{c}} {'export':<13} {'ort':<8} {'qidao':<9} "
        f"{'torch':<9} {'parts':>5} {'qidao/ORT':>9}  first error"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        ratio = f"{r.ratio:.2f}x" if math.isfinite(r.ratio) else ""
        ort_error = "" if r.ort == "skipped" else r.ort_error  # bfloat16: known
        first = r.export_error or ort_error or r.qidao_error or r.torch_error
        parts = "" if r.torch_parts is None else str(r.torch_parts)
        lines.append(
            f"{r.arch:<{w}} {r.model_class:<{c}} {r.export:<13} {r.ort:<8} "
            f"{r.qidao:<9} {r.torch:<9} {parts:>5} {ratio:>9}  {first[:100]}"
        )
    return "\n".join(lines)
