"""The ladder machinery at a small size: rungs replay and are correct, CSV rows."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import qidao
from qidao.bench import ladder
from qidao.compiler.schedule import Schedule
from qidao.tools.cli import main

N = 256  # the smallest size the rungs' 8 x 256 tiles fit without tails


@pytest.mark.parametrize(
    "rung", [r for r in ladder.rungs() if r.schedule not in (None, "tuned")]
)
def test_rung_replays_and_is_correct(rung: ladder.Rung) -> None:
    assert rung.schedule is not None
    compiled = qidao.compile(ladder.matmul_graph(N), schedule=rung.schedule, threads=1)
    trace = compiled.stats["schedule"]
    assert trace.startswith("s.")
    a, b = ladder.inputs(N)
    out = compiled(a, b)
    ladder.check(rung.name, out[0] if isinstance(out, list | tuple) else out, a, b)
    # the recorded trace, as Python and as a pipeline, gives the same result
    fresh = Schedule.for_model(ladder.matmul_graph(N)).module
    pipeline = Schedule.replay(fresh, trace).pipeline()
    for text in (trace, pipeline):
        again = qidao.compile(ladder.matmul_graph(N), schedule=text, threads=1)
        assert again.stats["schedule"] == trace
        got = again(a, b)
        np.testing.assert_array_equal(
            got[0] if isinstance(got, list | tuple) else got,
            out[0] if isinstance(out, list | tuple) else out,
        )


def test_naive_is_ijk() -> None:
    s = Schedule.for_model(ladder.matmul_graph(N))
    ladder.naive(s)
    assert s.loops(ladder.KERNEL)[-3:] == ["i", "j", "k"]


def test_missing_rungs_are_not_faked() -> None:
    names = [r.name for r in ladder.rungs()]
    assert names[:5] == ["naive", "split", "reorder", "vectorize", "parallel"]
    assert names[5:] == ["cache_write", "cache_read", "default", "tuned"]
    for r in ladder.rungs():
        assert (r.schedule is None) == bool(r.missing)
    assert ladder.RUNGS["default"].schedule == "default"
    assert ladder.RUNGS["tuned"].schedule == "tuned"


def test_cache_read_rung_packs_b() -> None:
    s = Schedule.for_model(ladder.matmul_graph(N))
    ladder.cache_read(s)
    text = str(s.module)
    assert f"%w_pack = memref.alloca() : memref<{N}x{ladder.REG_J}xf32>" in text
    assert "qd.parallel" in text
    # every load of B in the tile reads the pack; only the copy reads %w
    assert text.count("vector.load %w[") == ladder.REG_J // ladder.WIDTH


def test_size_must_fit_the_tiles() -> None:
    with pytest.raises(ValueError, match="multiple of 256"):
        ladder.run_ladder(n=100, progress=False)


def test_check_rejects_wrong_result() -> None:
    a, b = ladder.inputs(8)
    ladder.check("ok", (a @ b).astype(np.float32), a, b)
    with pytest.raises(AssertionError, match="differs"):
        ladder.check("bad", (a @ b + 1).astype(np.float32), a, b)


CSV_ROWS = ["naive", "parallel", "default", "tuned", "pytorch", "numpy", "peak"]
"""The rows the CSV test runs, each in its own process as every row runs: the
rungs whose rows it reads apart (the ratios' base, the note, the default
schedule, the tuning run) and the three baselines; every rung's schedule replays
and is correct in ``test_rung_replays_and_is_correct`` (the other five rungs' rows
are the same code)."""


def test_ladder_csv(tmp_path: Path) -> None:
    path = tmp_path / "ladder.csv"
    rows = ladder.run_ladder(
        n=N,
        threads=1,
        min_time=0.0,
        min_calls=1,
        max_calls=1,
        csv_path=path,
        progress=False,
        tune_trials=2,
        only=CSV_ROWS,
    )
    assert not [r.error for r in rows if r.error]
    assert (tmp_path / "ladder-tune.jsonl").read_text().count("\n") >= 2
    with path.open() as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == ladder.CSV_FIELDS
    by_name = {row["rung"]: row for row in table}
    assert list(by_name) == CSV_ROWS  # in the ladder's order
    for r in ladder.rungs():
        if r.name not in CSV_ROWS:
            continue
        row = by_name[r.name]
        if r.schedule is None:
            assert row["kind"] == "missing"
            assert row["gflops"] == ""
            assert "not implemented yet" in row["note"]
            continue
        assert row["kind"] == "qidao"
        assert int(row["n"]) == N and int(row["runs"]) == 1
        assert float(row["gflops"]) > 0
        assert row["schedule"].startswith("s.")
        assert row["pipeline"]
        # the trace in the CSV replays to a correct kernel
        replayed = qidao.compile(ladder.matmul_graph(N), schedule=row["schedule"])
        a, b = ladder.inputs(N)
        got = replayed(a, b)
        ladder.check(r.name, got[0] if isinstance(got, list | tuple) else got, a, b)
    assert float(by_name["naive"]["x_naive"]) == pytest.approx(1.0)
    for name in ("pytorch", "numpy", "peak"):
        assert float(by_name[name]["gflops"]) > 0
    assert float(by_name["pytorch"]["x_pytorch"]) == pytest.approx(1.0)
    assert "parallel" in by_name and by_name["parallel"]["note"]
    assert "s.split" in by_name["default"]["schedule"]
    text = ladder.format_table(rows)
    assert "best library" in text


def test_tuned_rung_without_a_record_fails_clearly(tmp_path: Path) -> None:
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    rows = ladder.run_ladder(
        n=N,
        threads=1,
        min_time=0.0,
        min_calls=1,
        max_calls=1,
        progress=False,
        peak=False,
        records=empty,
        only=["tuned"],
    )
    (tuned,) = rows
    assert tuned.rung == "tuned" and "no record for" in tuned.error


def test_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rows = [
        ladder.Row("naive", "qidao", N, 1, 1.0, 1, 1.0),
        ladder.Row("pytorch", "baseline", N, 1, 0.1, 1, 10.0),
        ladder.Row("peak", "peak", N, 1, 0.1, 1, 100.0),
        ladder.Row("tuned", "missing", N, 1, note="not implemented yet"),
    ]
    ladder.add_ratios(rows)
    path = tmp_path / "ladder.png"
    ladder.plot_ladder(rows, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_only_the_named_rows_run_and_an_unknown_name_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = ladder.run_ladder(
        n=N,
        min_time=0.0,
        min_calls=1,
        max_calls=1,
        progress=False,
        only=["naive", "numpy"],
    )
    assert [r.rung for r in rows] == ["naive", "numpy"]
    assert not [r.error for r in rows if r.error]
    assert rows[0].ratios["numpy"] == pytest.approx(rows[0].gflops / rows[1].gflops)
    with pytest.raises(ValueError, match="no ladder row named blocked; the rows are: "):
        ladder.run_ladder(n=N, progress=False, only=["blocked", "naive"])
    assert main(["bench", "chain", "--rung", "naive"]) == 2
    assert "--rung picks rows of the ladder" in capsys.readouterr().err
