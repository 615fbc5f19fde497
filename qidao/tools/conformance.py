"""ONNX's own node test cases through ``qidao.compile``: the library behind ``qidao
conformance onnx`` (``conformance_command.py`` has the command and its options).

The cases come from ``onnx.backend.test.case.node.collect_testcases()``: generated
locally by the installed ``onnx`` package, no download. Each one is compiled on the
CPU and checked against its expected outputs; ``conformance_cases`` says how a case
counts as pass, fail or unsupported. A case is isolated from the others: any
exception is recorded as its result. With ``--isolate`` each operator's cases run in
a child process too, so even a crash in native code is recorded (as a fail of the
cases that had not reported yet) instead of ending the run.

The baseline (``tests/data/onnx_conformance_baseline.json``) holds the pass count per
operator and the name of every passing case. ``--check-baseline`` exits with status 1
when a case it lists does not pass (any subset of the cases can be checked: the
test suite checks the first case of each operator, ``--per-op 1``; the whole run is
the check to make before changing the ONNX frontend).
"""

from __future__ import annotations

import argparse
import csv
import functools
import itertools
import json
import subprocess
import sys
import time
import warnings
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from qidao.tools.conformance_cases import (
    DEVIATES,
    EXPANDED,
    FAIL,
    PASS,
    UNSUPPORTED,
    CaseResult,
    case_ops,
    run_case,
)

BASELINE = Path(__file__).parents[2] / "tests/data/onnx_conformance_baseline.json"
"""The checked-in baseline: the passing cases and the pass counts per operator (in
the source tree)."""


def node_cases(
    ops: Collection[str] | None = None, per_op: int | None = None
) -> list[tuple[str, Any]]:
    """ONNX's node test cases as ``(operator, case)``, sorted by operator then name;
    only the operators in ``ops`` (and their ``(expanded)`` cases) when given, and
    only the first ``per_op`` cases of each operator when given."""
    if per_op is not None and per_op < 1:
        raise ValueError(f"per_op must be at least 1, got {per_op}")
    cases = _all_cases()
    op_of = case_ops(cases)
    chosen = sorted(
        (
            (op_of[c.name], c)
            for c in cases
            if not ops or op_of[c.name].removesuffix(EXPANDED) in ops
        ),
        key=lambda pair: (pair[0], pair[1].name),
    )
    if per_op is None:
        return chosen
    by_op = itertools.groupby(chosen, key=lambda pair: pair[0])
    return [pair for _, pairs in by_op for pair in itertools.islice(pairs, per_op)]


@functools.cache
def _all_cases() -> list[Any]:
    """``collect_testcases()``, once per process (it takes seconds)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():  # the generators overflow casts on purpose
        warnings.simplefilter("ignore")
        return list(collect_testcases(None))


def run_conformance(
    ops: Collection[str] | None = None,
    isolate: bool = False,
    jobs: int = 1,
    per_op: int | None = None,
) -> list[CaseResult]:
    """Run the cases (of ``ops``, or all; the first ``per_op`` of each operator when
    given); one result per case, in case order.

    ``isolate`` runs them in ``jobs`` child processes, each taking a share of the
    operators."""
    cases = node_cases(ops, per_op)
    if not isolate:
        return [run_case(case, op) for op, case in cases]
    shares: list[list[tuple[str, str]]] = [[] for _ in range(max(1, jobs))]
    for op, case in cases:  # all of an operator's cases go to the same child
        shares[sum(map(ord, op)) % len(shares)].append((op, case.name))
    with ThreadPoolExecutor(len(shares)) as pool:
        done = {r.case: r for part in pool.map(_run_children, shares) for r in part}
    return [done[case.name] for _, case in cases]


def _run_children(cases: list[tuple[str, str]]) -> list[CaseResult]:
    """Run ``(op, case name)`` pairs in a child process that prints one JSON line
    per case as it finishes. If the child dies, the first case it did not report
    is recorded as a crash (a fail) and a new child takes the rest."""
    results: list[CaseResult] = []
    while cases:
        command = [sys.executable, "-m", "qidao.tools.conformance", "--child"]
        done = subprocess.run(
            command,
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            check=False,
        )
        reported = [CaseResult(**json.loads(line)) for line in done.stdout.splitlines()]
        results += reported
        cases = cases[len(reported) :]
        if done.returncode == 0 or not cases:
            break
        why = (
            f"signal {-done.returncode}"
            if done.returncode < 0
            else (f"exit status {done.returncode}")
        )
        tail = (done.stderr.strip().splitlines() or [""])[-1][:120]
        op, name = cases[0]
        results.append(CaseResult(op, name, FAIL, f"crashed ({why}) {tail}".strip()))
        cases = cases[1:]
    return results


@dataclass
class OpSummary:
    """The outcome counts of one operator's cases, and the first non-pass reasons."""

    op: str
    counts: Counter[str] = field(default_factory=Counter)
    first_reason: dict[str, str] = field(default_factory=dict)

    @property
    def cases(self) -> int:
        return sum(self.counts.values())


def summarize(results: Iterable[CaseResult]) -> dict[str, OpSummary]:
    """Operator -> its summary, sorted by operator."""
    summaries: dict[str, OpSummary] = {}
    for r in results:
        s = summaries.setdefault(r.op, OpSummary(r.op))
        s.counts[r.status] += 1
        if r.reason:
            s.first_reason.setdefault(r.status, r.reason)
    return dict(sorted(summaries.items()))


def totals(results: Iterable[CaseResult]) -> Counter[str]:
    return Counter(r.status for r in results)


def format_table(results: Sequence[CaseResult], width: int = 120) -> str:
    """One row per operator: cases, pass, fail, unsupported, deviates, and the first
    fail reason (else the first unsupported one); then the totals."""
    rows = [("operator", "cases", PASS, FAIL, "unsup", "dev", "first reason")]
    for s in summarize(results).values():
        reason = s.first_reason.get(FAIL) or s.first_reason.get(UNSUPPORTED, "")
        if s.counts[FAIL]:
            reason = "FAIL " + reason
        rows.append(
            (
                s.op,
                str(s.cases),
                str(s.counts[PASS]),
                str(s.counts[FAIL]),
                str(s.counts[UNSUPPORTED]),
                str(s.counts[DEVIATES]),
                reason,
            )
        )
    n = totals(results)
    ops = summarize(results).values()
    rows.append(
        (
            "total",
            str(len(results)),
            str(n[PASS]),
            str(n[FAIL]),
            str(n[UNSUPPORTED]),
            str(n[DEVIATES]),
            f"{sum(1 for s in ops if s.counts[PASS] == s.cases)} of {len(ops)} "
            "operators pass every case",
        )
    )
    widths = [max(len(row[k]) for row in rows) for k in range(6)]
    lines = []
    for k, row in enumerate(rows):
        if k in (1, len(rows) - 1):
            lines.append("-" * min(width, sum(widths) + 14 + 12))
        cells = [row[0].ljust(widths[0])]
        cells += [c.rjust(w) for c, w in zip(row[1:6], widths[1:], strict=True)]
        line = "  ".join(cells) + "  " + row[6]
        lines.append(line if len(line) <= width else line[: width - 3] + "...")
    return "\n".join(lines)


def write_csv(results: Sequence[CaseResult], path: Path) -> None:
    """One row per case: op, case, status, reason, seconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(
            f, fieldnames=list(asdict(results[0]) if results else [])
        )
        writer.writeheader()
        for r in results:
            writer.writerow({**asdict(r), "seconds": f"{r.seconds:.4f}"})


def baseline_of(results: Sequence[CaseResult]) -> dict[str, Any]:
    """The baseline document: pass counts per operator (operators with a pass), the
    names of the passing cases, the totals, and the ONNX version the cases came
    from."""
    import onnx

    n = totals(results)
    passes = {op: s.counts[PASS] for op, s in summarize(results).items()}
    return {
        "onnx": onnx.__version__,
        "totals": {status: n[status] for status in (PASS, FAIL, UNSUPPORTED, DEVIATES)},
        "pass": {op: count for op, count in passes.items() if count},
        "passing": sorted(r.case for r in results if r.status == PASS),
    }


def write_baseline(results: Sequence[CaseResult], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(baseline_of(results), indent=1, sort_keys=True) + "\n")


def read_baseline(path: Path) -> dict[str, Any]:
    """The baseline at ``path``, checked: a JSON object whose ``passing`` is a list
    of case names and whose ``pass`` maps operators to counts."""
    try:
        doc: Any = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        message = f"cannot read the conformance baseline {path}: {error}"
        raise ValueError(message) from error
    passing = doc.get("passing") if isinstance(doc, dict) else None
    counts = doc.get("pass") if isinstance(doc, dict) else None
    if not (
        isinstance(passing, list)
        and all(isinstance(name, str) for name in passing)
        and isinstance(counts, dict)
        and all(isinstance(n, int) for n in counts.values())
    ):
        raise ValueError(
            f"{path} is not a conformance baseline (expected a JSON object with "
            "'passing', a list of case names, and 'pass', counts per operator); "
            "write one with `qidao conformance onnx --write-baseline PATH`"
        )
    return dict(doc)


def compare_baseline(
    results: Sequence[CaseResult], baseline: dict[str, Any]
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(regressions, improvements) among the cases that ran: operator -> the names
    of its cases the baseline lists as passing that do not pass now, and of those
    that pass now but are not listed."""
    listed = set(baseline["passing"])
    worse: dict[str, list[str]] = {}
    better: dict[str, list[str]] = {}
    for r in results:
        if r.case in listed and r.status != PASS:
            worse.setdefault(r.op, []).append(f"{r.case} ({r.status}: {r.reason})")
        elif r.case not in listed and r.status == PASS:
            better.setdefault(r.op, []).append(r.case)
    return dict(sorted(worse.items())), dict(sorted(better.items()))


def format_changes(changes: dict[str, list[str]]) -> str:
    """One line per case, under its operator."""
    return "\n".join(
        f"  {op}: {case}" for op, cases in changes.items() for case in cases
    )


def cmd_conformance(args: argparse.Namespace) -> int:
    """Print the table; exit status 1 if a case failed."""
    known = {op.removesuffix(EXPANDED) for op, _ in node_cases()} if args.op else set()
    unknown = sorted(set(args.op or ()) - known)
    if unknown:
        raise ValueError(
            f"no ONNX node test cases for operator(s) {', '.join(unknown)}; the "
            f"operators are: {', '.join(sorted(known))}"
        )
    if args.write_baseline and args.per_op is not None:
        raise ValueError(
            "--write-baseline records every case of the operators run; leave out "
            f"--per-op {args.per_op}"
        )
    baseline = read_baseline(Path(args.check_baseline)) if args.check_baseline else None
    start = time.perf_counter()
    results = run_conformance(
        args.op, isolate=args.isolate, jobs=args.jobs, per_op=args.per_op
    )
    seconds = time.perf_counter() - start
    print(format_table(results))
    print(f"\n{len(results)} cases in {seconds:.1f} s")
    if args.failures:
        for r in results:
            if r.status == FAIL:
                print(f"FAIL {r.op} {r.case}: {r.reason}")
    if args.csv:
        write_csv(results, Path(args.csv))
        print(f"CSV: {args.csv}")
    if args.write_baseline:
        write_baseline(results, Path(args.write_baseline))
        print(f"baseline: {args.write_baseline}")
    regressed = False
    if baseline is not None:
        worse, better = compare_baseline(results, baseline)
        if better:
            print(
                "\npassing now, not in the baseline (record them with "
                f"--write-baseline {args.check_baseline}):\n" + format_changes(better)
            )
        if worse:
            print(
                f"\nlisted as passing in {args.check_baseline}, not passing now:\n"
                + format_changes(worse)
            )
        regressed = bool(worse)
        listed = set(baseline["passing"])
        checked = sum(r.case in listed for r in results)
        lost = sum(map(len, worse.values()))
        print(f"baseline: {checked} passing cases checked, {lost} no longer pass")
    return 1 if regressed or any(r.status == FAIL for r in results) else 0


def _child() -> None:
    """Run the ``(op, case name)`` pairs read as JSON from stdin, printing each
    result as a JSON line as soon as it is in."""
    wanted: list[tuple[str, str]] = json.load(sys.stdin)
    by_name = {case.name: case for _, case in node_cases({op for op, _ in wanted})}
    for op, name in wanted:
        print(json.dumps(asdict(run_case(by_name[name], op))), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["--child"]:
        sys.exit("usage: python -m qidao.tools.conformance --child < cases.json")
    _child()
