"""Tuning records: one JSON line per measured trial, and the lookup that
``qidao.compile(model, records=PATH)`` does.

A record is keyed by the workload (``task``: kernel kind, tg ops, argument shapes,
dtype), the target, the machine and the thread count. The machine of a CPU record
is the CPU (``cpu``: ``model name`` of ``/proc/cpuinfo``); that of a ``cuda``
record is the GPU (``gpu``: its model and compute capability, ``"NVIDIA H200
(sm_90)"``, or ``"emulator"`` for the CPU emulation: ``gpu_device.py``), and its
thread count is 1 (the host's threads do not run the kernels). It carries the point (``config``), its schedule as a Python trace (``trace``,
for the kernel named in ``kernel``), the status (ok, wrong, error, timeout, crash)
and, when ok, the timed calls, their median and GFLOP/s. At compile time each
kernel of the model whose key has an ok record gets the trace of its fastest one,
renamed to that kernel; a kernel without one (another CPU or GPU, shape or thread
count) falls through to the schedule it would get otherwise (the compiler's
default), and ``stats["records"]`` says so, naming the machines that do have
records of that workload::

    {"main_k0_matmul": "no record for matmul|tg.matmul|32x16,16x64,32x64|f32 on
     NVIDIA H200 (sm_90); records of it on: emulator"}

Files written before the ``gpu`` field read the same: a line without it is a CPU
record.
"""

from __future__ import annotations

import functools
import json
import platform
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from qidao.compiler.schedule import Schedule, ScheduleSpec, TraceEntry, parse_trace
from qidao.compiler.trace import TraceError
from qidao.compiler.tune.task import Task
from qidao.compiler.tune.templates import kernel_tasks
from qidao.errors import RecordsError
from qidao.passes.schedule.loops.nest import kernel_functions, replace_kernel

VERSION = 1
TARGETS = ("cpu", "cuda")


@functools.cache
def cpu_model() -> str:
    """The ``model name`` of ``/proc/cpuinfo`` (else ``platform.processor()``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass
class Record:
    task: Task
    threads: int
    config: dict[str, Any]
    trace: str
    kernel: str
    status: str
    times: list[float] = field(default_factory=list)
    gflops: float | None = None
    error: str = ""
    search: str = ""
    seed: int = 0
    trial: int = 0
    compile_s: float = 0.0
    target: str = "cpu"
    cpu: str = field(default_factory=cpu_model)
    gpu: str = ""
    """The GPU of a ``cuda`` record (``gpu_device.gpu_key``); "" on the CPU."""
    version: int = VERSION

    @property
    def machine(self) -> str:
        """What measured it: the GPU of a ``cuda`` record, else the CPU."""
        return self.gpu if self.target == "cuda" else self.cpu

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.task.key, self.target, self.machine, self.threads)

    def to_json(self) -> str:
        data = asdict(self)
        data["task"] = self.task.to_json()
        data["workload"] = self.task.key
        if self.times:
            data["median_s"] = sorted(self.times)[len(self.times) // 2]
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> Record:
        data = json.loads(line)
        data.pop("workload", None)
        data.pop("median_s", None)
        data["task"] = Task.from_json(data["task"])
        fields = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in fields})


def append_records(path: Path, records: Iterable[Record]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        for record in records:
            f.write(record.to_json() + "\n")


STATUSES = ("ok", "wrong", "error", "timeout", "crash")

_FIELDS: dict[str, tuple[type, ...]] = {
    "threads": (int,),
    "config": (dict,),
    "trace": (str,),
    "kernel": (str,),
    "status": (str,),
    "times": (list,),
    "gflops": (int, float, type(None)),
    "error": (str,),
    "search": (str,),
    "seed": (int,),
    "trial": (int,),
    "compile_s": (int, float),
    "target": (str,),
    "cpu": (str,),
    "gpu": (str,),
}
"""Each field a record line may have and the JSON types it takes (``task`` and
``version`` are checked on their own)."""

_REQUIRED = ("task", "threads", "config", "trace", "kernel", "status")


def load_records(path: Path) -> list[Record]:
    """The records of a JSON-lines file (lines of another version are skipped).

    Every line of this version is checked before it is used: a JSON object with the
    fields a record needs, each of its type, a known status and a trace that
    parses. Anything else is a ``RecordsError`` naming the file, the line and the
    field: a records file is data, and a damaged one is not half-used."""
    records: list[Record] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise RecordsError(f"{path}: cannot read the records file: {err}") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as err:
            raise RecordsError(f"{where}: not a JSON record: {err}") from None
        if not isinstance(data, dict):
            raise RecordsError(
                f"{where}: a record is a JSON object, got {type(data).__name__}"
            )
        if data.get("version") == VERSION:
            records.append(_checked_record(data, where))
    return records


def _checked_record(data: dict[str, Any], where: str) -> Record:
    missing = [name for name in _REQUIRED if name not in data]
    if missing:
        raise RecordsError(f"{where}: the record has no {', '.join(missing)}")
    for name, types in _FIELDS.items():
        value = data.get(name)
        if name in data and (
            not isinstance(value, types)
            or (isinstance(value, bool) and bool not in types)
        ):
            expected = " or ".join(t.__name__ for t in types)
            raise RecordsError(
                f"{where}: '{name}' must be {expected}, got {json.dumps(value)[:60]}"
            )
    target = data.get("target", "cpu")
    if target not in TARGETS:
        raise RecordsError(f"{where}: unknown target {target!r}; one of {TARGETS}")
    if target == "cuda" and not data.get("gpu"):
        raise RecordsError(
            f"{where}: a cuda record names its GPU in 'gpu' (\"NVIDIA H200 "
            f'(sm_90)" or "emulator"), got {json.dumps(data.get("gpu"))}'
        )
    if data["status"] not in STATUSES:
        raise RecordsError(
            f"{where}: unknown status {data['status']!r}; one of {', '.join(STATUSES)}"
        )
    if not all(
        isinstance(t, int | float) and not isinstance(t, bool)
        for t in data.get("times", [])
    ):
        raise RecordsError(f"{where}: 'times' must be a list of seconds")
    try:
        task = Task.from_json(data["task"])
    except (KeyError, TypeError, ValueError) as err:
        raise RecordsError(
            f"{where}: 'task' must be an object with kind, ops, shapes (lists of "
            f"integers) and dtype: {type(err).__name__}: {err}"
        ) from None
    try:
        parse_trace(data["trace"])
    except TraceError as err:
        raise RecordsError(f"{where}: the trace does not parse: {err}") from None
    fields = set(Record.__dataclass_fields__) - {"task"}
    return Record(task, **{k: v for k, v in data.items() if k in fields})


def best_record(
    records: Sequence[Record],
    task: Task,
    threads: int,
    target: str = "cpu",
    machine: str | None = None,
) -> Record | None:
    """The fastest ok record of ``task`` for ``target`` on ``machine`` (default:
    this CPU; a ``cuda`` lookup names its GPU, ``gpu_device.gpu_key``) and thread
    count."""
    if machine is None:
        if target != "cpu":
            raise ValueError(f"a {target} record lookup names its machine")
        machine = cpu_model()
    key = (task.key, target, machine, threads)
    ok = [r for r in records if r.key == key and r.status == "ok" and r.gflops]
    return max(ok, key=lambda r: r.gflops or 0.0) if ok else None


def _elsewhere(records: Sequence[Record], task: Task, target: str) -> str:
    """``"; records of it on: A, B"``: the other machines (or thread counts) with
    ok records of ``task`` for ``target``, or ""."""
    others = sorted(
        {
            r.machine if r.target == "cuda" else f"{r.machine}, {r.threads} thread(s)"
            for r in records
            if r.task.key == task.key and r.target == target and r.status == "ok"
        }
    )
    return f"; records of it on: {'; '.join(others)}" if others else ""


def renamed(trace: str, kernel: str) -> list[TraceEntry]:
    """A record's trace, applied to ``kernel`` instead of the kernel it was tuned on."""
    return [TraceEntry(e.method, kernel, e.args) for e in parse_trace(trace)]


def records_schedule(
    path: str | Path,
    threads: int,
    fallback: ScheduleSpec | None = None,
    report: dict[str, Any] | None = None,
    target: str = "cpu",
    machine: str | None = None,
) -> Callable[[Schedule], None]:
    """A schedule (for ``qidao.compile(schedule=...)``) giving every kernel with a
    matching record (``target``'s templates and records, on ``machine``: see
    ``best_record``) the trace of its best record, and every other kernel what
    ``fallback`` (the schedule it would get otherwise) does. ``report["records"]``
    gets kernel -> the record applied, or why none was. A record whose trace no
    longer applies is reported there and skipped."""
    records = load_records(Path(path))
    if machine is None and target != "cpu":
        raise ValueError(f"records for target {target!r} name the machine")
    where = f" ({threads} thread(s))" if target == "cpu" else f" on {machine}"

    def schedule(s: Schedule) -> None:
        chosen: dict[str, tuple[Record, list[TraceEntry]]] = {}
        notes: dict[str, str] = {}
        for kernel, task in kernel_tasks(s.module, target).items():
            best = best_record(records, task, threads, target, machine)
            if best is None:
                notes[kernel] = f"no record for {task.key}{where}" + _elsewhere(
                    records, task, target
                )
                continue
            entries = renamed(best.trace, kernel)
            try:  # dry run: a stale record must not leave half a schedule
                Schedule.replay(s.module.clone(), entries)
            except Exception as err:
                notes[kernel] = f"the record of {task.key} does not apply: {err}"
                continue
            chosen[kernel] = (best, entries)
            notes[kernel] = f"{task.key}: {best.gflops:.1f} GFLOP/s when tuned" + (
                f" on {machine}" if target != "cpu" else ""
            )
        pristine = {k: kernel_functions(s.module)[k].clone() for k in chosen}
        if fallback is not None:
            _apply_fallback(s, fallback)
        for kernel, (_, entries) in chosen.items():
            replace_kernel(kernel_functions(s.module)[kernel], pristine[kernel])
            s.trace[:] = [e for e in s.trace if e.kernel != kernel]
            for entry in entries:
                getattr(s, entry.method)(entry.kernel, *entry.args)
        if report is not None:
            report["records"] = notes

    return schedule


def _apply_fallback(s: Schedule, fallback: ScheduleSpec) -> None:
    if callable(fallback):
        fallback(s)
        return
    for entry in parse_trace(fallback):
        getattr(s, entry.method)(entry.kernel, *entry.args)
