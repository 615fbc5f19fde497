"""The autotuner on the GPU (qidao/compiler/tune/gpu_*.py): the spaces, trials on
the emulator, records keyed by device, ``qidao.compile(target="cuda", records=)``.

No GPU here: the trials run on the CPU emulator (``device="emulate"``, records
keyed ``"emulator"``); the test that tunes on a real GPU skips with its reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cuda.defaults import VECTOR_LANES
from qidao.compiler.tune.gpu_device import EMULATOR, gpu_key
from qidao.compiler.tune.gpu_templates import GPU_TEMPLATES, named_gpu_task
from qidao.compiler.tune.records import (
    Record,
    append_records,
    best_record,
    cpu_model,
    load_records,
)
from qidao.compiler.tune.reference import task_data
from qidao.compiler.tune.space import Config, Space
from qidao.compiler.tune.task import Task
from qidao.compiler.tune.tuner import Measurement, TuneResult, tune_task
from qidao.runtime.cuda import CudaUnavailableError, cuda_unavailable_reason
from qidao.tools.cli import main

NO_GPU = cuda_unavailable_reason()
H200 = "NVIDIA H200 (sm_90)"
EMULATE = Measurement(
    target="cuda", device="emulate", calls=1, min_time=0.0, budget_s=0.2
)


def _task(name: str) -> Task:
    task = named_gpu_task(name)
    assert task is not None, name
    return task


def _space(name: str) -> Space:
    task = _task(name)
    return Space(GPU_TEMPLATES[task.kind], task)


def _reference(task: Task, inputs: list[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    want = GPU_TEMPLATES[task.kind].reference(inputs)
    return np.asarray(want).reshape(task.shapes[-1])


# --- the spaces -------------------------------------------------------------------------


def test_matmul_space_respects_the_knobs() -> None:
    space = _space("matmul64x32x128")
    m, k, n = 64, 32, 128
    points = [space.config(p) for p in space.points()]
    tiles = [c for c in points if c["schedule"] == "register_tile"]
    assert sum(c["schedule"] == "thread_per_element" for c in points) == 1
    assert tiles
    for c in tiles:
        ty, tx, tm, tn, bk = (int(c[name]) for name in ("ty", "tx", "tm", "tn", "bk"))
        assert ty in (8, 16) and tx in (8, 16)
        assert tm in (2, 4, 8) and tn in (2, 4, 8) and bk in (8, 16, 32)
        assert m % (ty * tm) == 0 and n % (tx * tn) == 0 and k % bk == 0
        assert ty * tx <= 1024 and (ty * tm + tx * tn) * bk * 4 <= 48 * 1024
    # every tile the knobs allow that divides M, N and K is a point
    assert len(tiles) == sum(
        m % (ty * tm) == 0 and n % (tx * tn) == 0
        for ty in (8, 16)
        for tx in (8, 16)
        for tm in (2, 4, 8)
        for tn in (2, 4, 8)
    ) * sum(k % bk == 0 for bk in (8, 16, 32))
    config: Config = {"schedule": "register_tile", "ty": 16, "tx": 8, "tm": 8}
    config |= {"tn": 2, "bk": 8}
    assert "does not divide C (64x128)" in space.violation(space.point(config))


def test_rows_and_elementwise_spaces_respect_the_knobs() -> None:
    rows = _space("softmax12x64")  # 12 rows: Y = 8 does not divide them
    configs = [rows.config(p) for p in rows.points()]
    assert sum(c["schedule"] == "thread_rows" for c in configs) == 1
    blocks = [c for c in configs if c["schedule"] == "block_rows"]
    assert {(c["threads"], c["rows_a_block"]) for c in blocks} == {
        (t, y)
        for t in (32, 64, 128, 256, 512, 1024)
        for y in (1, 2, 4)
        if t * y <= 1024
    }
    wide = _space("add8x60")
    assert {(c["threads"], c["vector"]) for c in map(wide.config, wide.points())} == {
        (t, v) for t in (64, 128, 256, 512, 1024) for v in (1, VECTOR_LANES)
    }
    odd = _space("relu8x30")  # 30 is not a multiple of 4: no float4 point
    assert {odd.config(p)["vector"] for p in odd.points()} == {1}


@pytest.mark.parametrize(
    "name", ["matmul16x16x32", "softmax8x64", "layernorm4x32", "reduce_max4x8x16"]
)
def test_every_point_of_a_space_is_a_gpu_schedule(name: str) -> None:
    space = _space(name)
    module, kernel = space.affine()
    for point in space.points():
        trace = space.trace(point)  # raises when a building block refuses it
        assert f's.bind("{kernel}"' in trace, space.describe(point)
        assert Schedule.replay(module.clone(), trace).python() == trace


@pytest.mark.parametrize(
    ("name", "config"),
    [
        (
            "matmul16x16x32",
            {"schedule": "register_tile", "ty": 8, "tx": 8, "tm": 2, "tn": 4, "bk": 8},
        ),
        ("layernorm4x32", {"schedule": "block_rows", "threads": 32, "rows_a_block": 2}),
        ("add8x64", {"threads": 64, "vector": VECTOR_LANES}),
    ],
)
def test_points_match_numpy_on_the_emulator(name: str, config: Config) -> None:
    space = _space(name)
    trace = space.trace(space.point(config))
    task = space.task
    compiled = qidao.compile(
        space.template.graph(task), target="cuda", device="emulate", schedule=trace
    )
    assert compiled.stats["schedule"] == trace
    inputs, _ = task_data(task, "cuda")
    np.testing.assert_allclose(
        compiled(*inputs)[0], _reference(task, inputs), rtol=1e-4, atol=1e-4
    )


# --- tuning on the emulator, and the records ----------------------------------------------

TUNED = _task("reduce_sum8x64")  # the reference keeps the last axis: the check reshapes


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> tuple[TuneResult, Path]:
    """Two emulator trials of a reduction, the second made wrong on purpose."""
    path = tmp_path_factory.mktemp("gpu-tune") / "tune.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("QIDAO_TUNE_FAULT", "wrong:1")
        result = tune_task(
            TUNED, trials=2, records=path, how=EMULATE, references=False, progress=False
        )
    return result, path


def test_a_tuning_run_on_the_emulator_writes_emulator_records(
    tuned: tuple[TuneResult, Path],
) -> None:
    result, path = tuned
    assert [r.status for r in result.records] == ["ok", "wrong"]
    assert "differs from NumPy" in result.records[1].error
    loaded = load_records(path)
    assert [r.to_json() for r in loaded] == [r.to_json() for r in result.records]
    for record in loaded:
        assert (record.target, record.gpu, record.threads) == ("cuda", EMULATOR, 1)
        assert record.key == (TUNED.key, "cuda", EMULATOR, 1)
        assert record.cpu == cpu_model()
    best = result.best
    assert best is not None and best.times and best.gflops
    assert best_record(loaded, TUNED, 1, "cuda", EMULATOR) == best
    assert best_record(loaded, TUNED, 1, "cuda", H200) is None  # never on a GPU
    assert best_record(loaded, TUNED, 1) is None  # nor on the CPU


def test_compile_applies_the_records_of_its_device(
    tuned: tuple[TuneResult, Path],
) -> None:
    result, path = tuned
    best = result.best
    assert best is not None
    graph = GPU_TEMPLATES[TUNED.kind].graph(TUNED)
    compiled = qidao.compile(graph, target="cuda", device="emulate", records=path)
    assert compiled.stats["schedule"].strip() == best.trace.strip()
    (note,) = compiled.stats["records"].values()
    assert note.endswith("GFLOP/s when tuned on emulator"), note
    inputs, _ = task_data(TUNED, "cuda")
    np.testing.assert_allclose(
        compiled(*inputs)[0], _reference(TUNED, inputs), rtol=1e-4, atol=1e-4
    )


def test_records_of_another_device_are_not_applied(
    tuned: tuple[TuneResult, Path], tmp_path: Path
) -> None:
    """A GPU's records on the emulator: the default schedule, and stats say why."""
    result, _ = tuned
    path = tmp_path / "h200.jsonl"
    fast = result.records[0]
    append_records(path, [Record(**{**fast.__dict__, "gpu": H200, "gflops": 1e6})])
    graph = GPU_TEMPLATES[TUNED.kind].graph(TUNED)
    compiled = qidao.compile(graph, target="cuda", device="emulate", records=path)
    default = qidao.compile(graph, target="cuda", device="emulate")
    assert compiled.stats["schedule"] == default.stats["schedule"]
    assert compiled.stats["default_schedule"] == default.stats["default_schedule"]
    (note,) = compiled.stats["records"].values()
    assert note == f"no record for {TUNED.key} on emulator; records of it on: {H200}"


def _gpu_line(**change: object) -> str:
    task = _task("softmax8x64")
    record = Record(
        task=task,
        threads=1,
        config={"schedule": "thread_rows"},
        trace='s.bind("main_k0_softmax", "i0", "blockIdx.x")\n',
        kernel="main_k0_softmax",
        status="ok",
        times=[1e-3],
        gflops=1.0,
        target="cuda",
        gpu=EMULATOR,
    )
    data = json.loads(record.to_json())
    data.update(change)
    return json.dumps({k: v for k, v in data.items() if v is not _DROP})


_DROP = object()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (_gpu_line(gpu=_DROP), r"r.jsonl:2: a cuda record names its GPU in 'gpu'"),
        (_gpu_line(gpu=""), r"r.jsonl:2: a cuda record names its GPU in 'gpu'"),
        (_gpu_line(gpu=90), r"r.jsonl:2: 'gpu' must be str, got 90"),
        (_gpu_line(target="tpu"), r"r.jsonl:2: unknown target 'tpu'"),
        (_gpu_line(target=["cuda"]), r"r.jsonl:2: 'target' must be str"),
    ],
)
def test_a_damaged_gpu_record_is_an_error_naming_file_and_line(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(_gpu_line() + "\n" + line + "\n")
    with pytest.raises(qidao.RecordsError, match=message):
        load_records(path)
    graph = GPU_TEMPLATES["softmax"].graph(_task("softmax8x64"))
    with pytest.raises(qidao.RecordsError, match=message):
        qidao.compile(graph, target="cuda", device="emulate", records=path)


def test_a_cpu_record_without_the_gpu_field_still_reads(tmp_path: Path) -> None:
    """Files written before GPU records: no ``gpu`` field, a CPU record."""
    line = json.loads(_gpu_line(target="cpu"))
    del line["gpu"]
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (record,) = load_records(path)
    assert (record.target, record.gpu, record.machine) == ("cpu", "", record.cpu)


def test_cli_reports_gpu_records(
    tuned: tuple[TuneResult, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, path = tuned
    assert main(["tune", "--report", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["workload", "target", "machine"]
    assert lines[1].split()[:6] == [TUNED.key, "cuda", EMULATOR, "1", "2", "1"]


# --- no GPU, and a real one -------------------------------------------------------------


@pytest.mark.skipif(NO_GPU is None, reason="a CUDA GPU is here: nothing to refuse")
def test_no_gpu_is_an_error_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert NO_GPU is not None
    reason = NO_GPU.split(":")[0]
    with pytest.raises(CudaUnavailableError, match="tuning for target 'cuda'") as err:
        tune_task(TUNED, trials=1, how=Measurement(target="cuda"), progress=False)
    assert reason in str(err.value) and "device 'emulate'" in str(err.value)
    path = tmp_path / "r.jsonl"
    path.write_text(_gpu_line() + "\n")
    graph = GPU_TEMPLATES["softmax"].graph(_task("softmax8x64"))
    with pytest.raises(CudaUnavailableError, match="records= for target 'cuda'"):
        qidao.compile(graph, target="cuda", records=path)
    assert main(["tune", "softmax8x64", "--target", "cuda"]) != 0
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.skipif(NO_GPU is not None, reason=f"no CUDA GPU: {NO_GPU}")
def test_tune_on_the_gpu_keys_records_by_model_and_capability(tmp_path: Path) -> None:
    path = tmp_path / "gpu.jsonl"
    how = Measurement(target="cuda", device="cuda", min_time=0.01)
    result = tune_task(TUNED, trials=2, records=path, how=how, progress=False)
    key = gpu_key("cuda")
    assert "(sm_" in key
    assert [r.status for r in result.records] == ["ok", "ok"]
    assert all(r.gpu == key and len(r.times) >= 10 for r in result.records)
    graph = GPU_TEMPLATES[TUNED.kind].graph(TUNED)
    compiled = qidao.compile(graph, target="cuda", records=path)
    best = result.best
    assert best is not None
    assert compiled.stats["schedule"].strip() == best.trace.strip()
    inputs, _ = task_data(TUNED, "cuda")
    np.testing.assert_allclose(
        compiled(*inputs)[0], _reference(TUNED, inputs), rtol=1e-4, atol=1e-4
    )
    # the emulator's records never apply here
    emulated = qidao.compile(graph, target="cuda", device="emulate", records=path)
    assert "no record" in next(iter(emulated.stats["records"].values()))
