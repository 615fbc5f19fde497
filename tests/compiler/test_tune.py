"""The autotuner (qidao/compiler/tune): space, search, cost model, workers, records."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import ScheduleError
from qidao.compiler.tune.cost_model import BoostedTrees
from qidao.compiler.tune.records import (
    Record,
    append_records,
    best_record,
    cpu_model,
    load_records,
)
from qidao.compiler.tune.runner import WorkerPool
from qidao.compiler.tune.search import (
    Trial,
    evolutionary_search,
    exhaustive_search,
    random_search,
    trials_to_within,
)
from qidao.compiler.tune.space import Point, Space
from qidao.compiler.tune.task import Task, named_task
from qidao.compiler.tune.templates import TEMPLATES
from qidao.compiler.tune.tuner import tune_task
from qidao.tools.cli import main
from qidao.tools.tune_report import compare_searches, format_comparison

MATMUL = TEMPLATES["matmul"]


def _task(name: str) -> Task:
    task = named_task(name)
    assert task is not None
    return task


ODD = _task("matmul30x40x64")  # 30 rows, K = 40: tiles that do not divide
SMALL = _task("matmul16x16x32")


def _inputs(task: Task) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in task.shapes[:-1]]


def _synthetic(space: Space, point: Point) -> float:
    """A deterministic GFLOP/s landscape with one best point."""
    c = space.config(point)
    score = 10.0 + 5 * math.log2(int(c["tile_i"])) + 3 * math.log2(int(c["tile_j"]))
    score += 20 * bool(c["cache_write"]) * bool(c["unroll_tile"]) + int(c["width"])
    return score - 4 * (c["order"] != "ijk") - 2 * int(c["unroll_k"])


# --- the space ----------------------------------------------------------------------


def test_named_task_and_key() -> None:
    task = _task("matmul1024")
    assert task.key == "matmul|tg.matmul|1024x1024,1024x1024,1024x1024|f32"
    assert named_task("matmul4x8x16") == Task(
        "matmul", "tg.matmul", ((4, 8), (8, 16), (4, 16)), "f32"
    )
    assert named_task("chain") is None


def test_space_points_are_schedules_that_match_numpy() -> None:
    space = Space(MATMUL, ODD)
    rng = np.random.default_rng(3)
    points = [space.point(MATMUL.recipe)]
    points.append(space.point({"tile_i": 6, "tile_k": 32, "order": "jki"}))  # tails
    while len(points) < 6:
        point = space.random_point(rng)
        if not space.violation(point) and point not in points:
            points.append(point)
    x, w = _inputs(ODD)
    compiled_any = 0
    for point in points:
        try:
            trace = space.trace(point)
        except ScheduleError:
            continue  # refused by a primitive: the search skips it the same way
        compiled = qidao.compile(MATMUL.graph(ODD), schedule=trace, threads=1)
        np.testing.assert_allclose(
            compiled(x, w)[0], x @ w, rtol=1e-4, atol=1e-4, err_msg=trace
        )
        compiled_any += 1
    assert compiled_any >= 4


def test_space_canonical_and_violations() -> None:
    space = Space(MATMUL, ODD)
    # without a k split, "ijk", "ikj" and "kij" are the same schedule
    a = space.canonical(space.point({"tile_k": 0, "order": "ikj"}))
    b = space.canonical(space.point({"tile_k": 0, "order": "kij"}))
    assert a == b and space.config(a)["order"] == "ijk"
    assert "does not divide" in space.violation(space.point({"tile_j": 128}))
    # the parallel knob needs threads; packing needs the cache-read pass
    assert [k.values for k in space.knobs if k.name == "parallel"] == [("none",)]
    threaded = Space(MATMUL, ODD, threads=2)
    assert len(next(k for k in threaded.knobs if k.name == "parallel").values) == 3


def test_small_space_size() -> None:
    task = _task("matmul256")
    assert 50 <= len(Space(MATMUL, task, small=True).points()) <= 100


# --- the search ---------------------------------------------------------------------


def test_seed_gives_the_same_candidates() -> None:
    space = Space(MATMUL, ODD)

    def measure(points: list[Point]) -> list[float | None]:
        return [_synthetic(space, p) for p in points]

    first = evolutionary_search(space, measure, trials=24, seed=7)
    again = evolutionary_search(space, measure, trials=24, seed=7)
    other = evolutionary_search(space, measure, trials=24, seed=8)
    assert [t.point for t in first] == [t.point for t in again]
    assert [t.point for t in first] != [t.point for t in other]
    assert len({t.point for t in first}) == 24  # no point measured twice
    randomly = random_search(space, measure, trials=8, seed=7)
    assert [t.point for t in randomly] == [
        t.point for t in random_search(space, measure, trials=8, seed=7)
    ]


@pytest.mark.parametrize("threads", [1, 2])
def test_evolution_measures_the_default_schedule_first(threads: int) -> None:
    """The recipe is the default schedule's point: the first trial, and it
    compiles to the same trace (parallel j_o when there are threads)."""
    task = _task("matmul256")
    space = Space(MATMUL, task, threads=threads)

    def measure(points: list[Point]) -> list[float | None]:
        return [_synthetic(space, p) for p in points]

    history = evolutionary_search(space, measure, trials=8, seed=3)
    recipe = space.config(history[0].point)
    assert recipe["pack"] == "w" and recipe["init"] and recipe["order"] == "jik"
    assert recipe["parallel"] == ("j_o" if threads > 1 else "none")
    graph = MATMUL.graph(task)
    trace = space.trace(history[0].point)
    default = qidao.compile(graph, threads=threads).stats["schedule"]
    assert sorted(trace.splitlines()) == sorted(default.splitlines())
    x, w = _inputs(task)
    got = qidao.compile(graph, schedule=trace, threads=threads)(x, w)[0]
    np.testing.assert_allclose(got, x @ w, rtol=1e-4, atol=1e-3)


def test_search_comparison_on_a_table() -> None:
    space = Space(MATMUL, SMALL, small=True)

    def measure(points: list[Point]) -> list[float | None]:
        return [_synthetic(space, p) for p in points]

    history = exhaustive_search(space, measure)
    assert len(history) == len(space.points())
    comparison = compare_searches(space, history, seeds=range(3))
    assert set(comparison.needed) == {"random", "evolutionary"}
    assert all(n is not None for n in comparison.needed["evolutionary"])
    text = format_comparison(comparison)
    assert "evolutionary" in text and "exhaustive" in text
    assert trials_to_within([Trial((), None), Trial((), 96.0)], 100.0) == 2


def test_cost_model_beats_the_mean() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(240, 5))
    y = np.sin(3 * x[:, 0]) + x[:, 1] * x[:, 2] + 0.5 * (x[:, 3] > 0)
    model = BoostedTrees().fit(x[:160], y[:160])
    error = np.mean((model.predict(x[160:]) - y[160:]) ** 2)
    baseline = np.mean((y[160:] - y[:160].mean()) ** 2)
    assert error < 0.5 * baseline
    assert np.allclose(BoostedTrees().predict(x[:3]), 0.0)  # unfitted: 0


# --- trials in workers --------------------------------------------------------------


def test_failed_trials_are_recorded_and_the_pool_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QIDAO_TUNE_FAULT", "hang:0,crash:1,wrong:2")
    space = Space(MATMUL, SMALL)
    trace = space.trace(space.point(MATMUL.recipe))
    requests = [
        {
            "id": trial,
            "task": SMALL.to_json(),
            "trace": trace,
            "threads": 1,
            "calls": 2,
            "min_time": 0.0,
            "budget_s": 1.0,
        }
        for trial in range(4)
    ]
    requests.append({**requests[3], "id": 4, "trace": "s.split(1)"})  # bad trace
    # the timeout ends the hanging trial; it must also leave a restarted worker
    # time to import qidao and compile on a loaded machine (2 s failed under CI)
    with WorkerPool(workers=1, threads=1, timeout=6.0) as pool:
        outcomes = pool.run(requests)
    assert [o.status for o in outcomes] == ["timeout", "crash", "wrong", "ok", "error"]
    assert "differs from NumPy" in outcomes[2].error
    assert len(outcomes[3].times) >= 2


def test_tune_records_failures_and_compile_applies_the_best(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QIDAO_TUNE_FAULT", "crash:1")
    path = tmp_path / "tune.jsonl"
    result = tune_task(
        SMALL, trials=4, seed=0, records=path, references=False, progress=False
    )
    statuses = [r.status for r in result.records]
    assert len(statuses) == 4 and statuses[1] == "crash"
    assert statuses.count("ok") == 3
    loaded = load_records(path)
    assert [r.to_json() for r in loaded] == [r.to_json() for r in result.records]
    best = result.best
    assert best is not None and best_record(loaded, SMALL, threads=1) == best

    compiled = qidao.compile(MATMUL.graph(SMALL), threads=1, records=path)
    assert compiled.stats["schedule"].strip() == best.trace.strip()
    x, w = _inputs(SMALL)
    np.testing.assert_allclose(compiled(x, w)[0], x @ w, rtol=1e-4, atol=1e-4)


def _record(task: Task, trace: str, gflops: float, **fields: object) -> Record:
    base: dict[str, object] = {"status": "ok", "times": [1e-3], "gflops": gflops}
    return Record(
        task=task,
        threads=1,
        config={},
        trace=trace,
        kernel="main_k0_matmul",
        **{**base, **fields},  # type: ignore[arg-type]
    )


def test_records_round_trip_and_lookup(tmp_path: Path) -> None:
    fast = 's.split("main_k0_matmul", "i", 4)\n'
    slow = 's.split("main_k0_matmul", "j", 8)\n'
    records = [
        _record(SMALL, slow, 10.0),
        _record(SMALL, fast, 20.0),
        _record(SMALL, slow, 99.0, cpu="another CPU"),
        _record(SMALL, slow, 98.0, status="wrong"),
    ]
    assert Record.from_json(records[1].to_json()) == records[1]
    assert records[1].cpu == cpu_model()
    path = tmp_path / "r.jsonl"
    append_records(path, records)
    assert load_records(path) == records
    assert best_record(records, SMALL, threads=1) == records[1]
    assert best_record(records, SMALL, threads=2) is None
    assert best_record(records, ODD, threads=1) is None

    # the kernel of another model with the same workload gets the same trace
    compiled = qidao.compile(MATMUL.graph(SMALL), threads=1, records=path)
    assert compiled.stats["schedule"] == fast
    # another shape: no record, falls through to the compiler's schedule
    other = qidao.compile(MATMUL.graph(ODD), threads=1, records=path)
    assert "no record" in str(other.stats["records"])
    x, w = _inputs(ODD)
    np.testing.assert_allclose(other(x, w)[0], x @ w, rtol=1e-4, atol=1e-4)


def _line(**change: object) -> str:
    data = json.loads(
        _record(SMALL, 's.split("main_k0_matmul", "i", 4)', 5.0).to_json()
    )
    data.update(change)
    return json.dumps({k: v for k, v in data.items() if v is not _DROP})


_DROP = object()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", r"r.jsonl:2: a record is a JSON object, got list"),
        ("{not json", r"r.jsonl:2: not a JSON record"),
        (_line(task=_DROP), r"r.jsonl:2: the record has no task"),
        (_line(gflops="x"), r"r.jsonl:2: 'gflops' must be int or float or NoneType"),
        (_line(threads=True), r"r.jsonl:2: 'threads' must be int, got true"),
        (_line(status="great"), r"r.jsonl:2: unknown status 'great'"),
        (_line(times=["a"]), r"r.jsonl:2: 'times' must be a list of seconds"),
        (_line(task={"kind": "matmul"}), r"r.jsonl:2: 'task' must be an object"),
        (_line(trace="not a schedule"), r"r.jsonl:2: the trace does not parse"),
        (_line(trace='s.split("k", 5, 4)'), r"r.jsonl:2: the trace does not parse"),
    ],
)
def test_a_damaged_records_line_is_an_error_naming_file_and_line(
    tmp_path: Path, line: str, message: str
) -> None:
    """Issue 12, R6: every damaged line is a RecordsError naming file, line and
    field, from ``load_records`` and from ``qidao.compile(records=)`` alike."""
    path = tmp_path / "r.jsonl"
    path.write_text(_line() + "\n" + line + "\n")
    with pytest.raises(qidao.RecordsError, match=message):
        load_records(path)
    with pytest.raises(qidao.QidaoError, match=message):
        qidao.compile(MATMUL.graph(SMALL), threads=1, records=path)


def test_cli_tune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    rc = main(["tune", "matmul16x16x32", "--trials", "3", "--records", str(path)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "best:" in out and "s.split(" in out and "tuned" in out
    assert len(load_records(path)) == 3
