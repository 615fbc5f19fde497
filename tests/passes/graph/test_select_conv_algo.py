"""``select-conv-algo``: every convolution algorithm against PyTorch, and the choice
(rule, forced, measured and recorded) as ``stats["conv_algo"]`` reports it.

Each case is a builder graph (NCHW, as a user writes it: ``layout`` makes it NHWC,
then the pass picks the algorithm); the reference is ``torch.nn.functional.conv2d``
in float64. Winograd rounds differently from the direct sum (its transforms scale
by up to 8 and 1/24), so all algorithms are held to a float32 accumulation
tolerance, not bitwise equality.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import f32
from xdsl.ir import Block

import qidao
from qidao.compiler import conv_algo
from qidao.dialects import tg
from qidao.dialects.tg.numpy_eval import evaluate
from qidao.dialects.tg.types import tensor_type
from qidao.dialects.tg.winograd import transform_filter
from qidao.frontend.builder import Graph
from qidao.passes.graph import select_conv_algo

torch = pytest.importorskip("torch")

Array = np.ndarray[Any, Any]

# (N, C, H, W, F, kernel, stride, padding, dilation, bias, relu)
CASES = [
    (1, 16, 8, 8, 16, 3, 1, 1, 1, True, False),  # whole 4x4 tiles
    (2, 8, 7, 9, 24, 3, 1, 1, 1, True, True),  # partial tiles, batch 2, epilogue
    (1, 5, 6, 6, 3, 3, 1, 0, 1, False, False),  # unpadded, odd channels
    (1, 16, 10, 10, 32, 3, 1, (0, 1, 2, 1), 1, False, True),  # uneven padding
    (1, 16, 9, 9, 16, 3, 2, 1, 1, True, False),  # stride 2: no winograd
    (1, 8, 9, 9, 16, 3, 1, 2, 2, False, False),  # dilation 2: no winograd
    (1, 32, 7, 7, 48, 1, 1, 0, 1, True, True),  # 1x1: matmul applies
    (2, 6, 5, 5, 8, 5, 1, 2, 1, True, False),  # 5x5
    (1, 32, 6, 6, 64, 2, 2, 0, 1, True, True),  # patchify to 3x3: auto is im2col
    (1, 32, 3, 3, 48, 1, 1, 0, 1, False, False),  # 1x1 on 3x3: auto is matmul
]
ALGOS = ["direct", "matmul", "im2col", "winograd", "auto"]


def case_graph(case: tuple[Any, ...]) -> tuple[Graph, list[Array], Array]:
    """The graph, its input and the float64 PyTorch reference."""
    n, c, h, w, f, k, stride, padding, dilation, bias, relu = case
    rng = np.random.default_rng(hash(case) % 2**32)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    weight = (rng.standard_normal((f, c, k, k)) / np.sqrt(c * k * k)).astype(np.float32)
    b = rng.standard_normal(f).astype(np.float32) if bias else None
    g = Graph("main")
    xv = g.input("x", x.shape)
    y = g.conv2d(
        xv,
        g.constant(weight),
        None if b is None else g.constant(b),
        strides=stride,
        padding=padding,
        dilation=dilation,
    )
    g.output(g.relu(y) if relu else y)
    pads = padding if isinstance(padding, tuple) else (padding,) * 4
    top, left, bottom, right = pads
    xt = torch.nn.functional.pad(
        torch.from_numpy(x).double(), (left, right, top, bottom)
    )
    want = torch.nn.functional.conv2d(
        xt,
        torch.from_numpy(weight).double(),
        None if b is None else torch.from_numpy(b).double(),
        stride=stride,
        dilation=dilation,
    )
    if relu:
        want = torch.relu(want)
    return g, [x], want.numpy()


@functools.cache
def compiled_case(index: int, algo: str) -> Any:
    """``CASES[index]`` compiled with ``algo`` on one thread, once per process: the
    tests below that read the same compile (its outputs, its ``stats``) share it.
    Only for compiles made with the pass as it is (none monkeypatched)."""
    g, _, _ = case_graph(CASES[index])
    return qidao.compile(g, threads=1, algo=algo)


def assert_close(outputs: list[Array], want: Array) -> None:
    (got,) = outputs
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    err = float(np.abs(got - want).max())
    assert err <= 1e-4 * scale, f"max error {err} (scale {scale})"


APPLIES = {
    "direct": range(len(CASES)),
    "auto": range(len(CASES)),
    "im2col": range(len(CASES)),
    "winograd": range(4),  # 3x3, stride 1, undilated
    "matmul": [6, 9],  # 1x1, stride 1, unpadded
}
"""Where each algorithm applies (elsewhere a forced one is direct, which
``test_forced_algorithms_apply_where_they_should`` checks)."""
PAIRS = [(i, algo) for algo in ALGOS for i in APPLIES[algo]]


@pytest.mark.parametrize(("index", "algo"), PAIRS, ids=[f"{i}-{a}" for i, a in PAIRS])
def test_every_algorithm_matches_torch(index: int, algo: str) -> None:
    _, inputs, want = case_graph(CASES[index])
    compiled = compiled_case(index, algo)
    assert_close(compiled(*inputs), want)
    (why,) = compiled.stats["conv_algo"].values()
    used = why.split(":")[0]
    if algo not in ("auto", "direct"):
        # forced: used where it applies, else direct with the reason
        assert used in (algo, "direct")
        if used == "direct":
            assert f"algo={algo} asked, but" in why


def test_forced_algorithms_apply_where_they_should() -> None:
    expected = {
        ("winograd", 0): "winograd",
        ("winograd", 4): "direct",  # stride 2
        ("winograd", 5): "direct",  # dilated
        ("matmul", 6): "matmul",
        ("matmul", 0): "direct",  # 3x3
        ("im2col", 4): "im2col",
        ("auto", 8): "im2col",  # 9 output pixels: one matmul tile
        ("auto", 9): "matmul",
        ("auto", 6): "direct",  # 49 pixels
    }
    for (algo, index), used in expected.items():
        (why,) = compiled_case(index, algo).stats["conv_algo"].values()
        assert why.startswith(f"{used}:"), (algo, index, why)


@pytest.mark.parametrize("index", [0, 1, 3])  # 2: odd channels stay NCHW, direct
def test_small_winograd_tiles_match_torch(
    index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F(2x2, 3x3) wherever Winograd applies (its filter threshold at 0 bytes: the
    cases are small), each against PyTorch."""
    monkeypatch.setattr(select_conv_algo, "WINOGRAD_F2_MIN_FILTER_BYTES", 0)
    g, inputs, want = case_graph(CASES[index])
    compiled = qidao.compile(g, threads=1, algo="winograd")
    (why,) = compiled.stats["conv_algo"].values()
    assert why.startswith("winograd:") and "F(2x2, 3x3)" in why, why
    assert "size = 2" in compiled.ir("tg")
    assert_close(compiled(*inputs), want)


@pytest.mark.parametrize("size", [4, 2])
def test_numpy_evaluator_of_each_tile_size(size: int) -> None:
    """The reference evaluator of the transforms (``fold-constants``' engine and
    other tests' oracle): input transform, the batched matmul with the filter
    transformed, output transform, against PyTorch's convolution (unpadded,
    10 x 10 -> 8 x 8: whole tiles of either size)."""
    rng = np.random.default_rng(size)
    x = rng.standard_normal((1, 10, 10, 5)).astype(np.float32)
    w = rng.standard_normal((3, 3, 5, 7)).astype(np.float32)
    b = rng.standard_normal(7).astype(np.float32)
    tiles = 8 // size
    block = Block(arg_types=[tensor_type(a.shape, f32) for a in (x, w, b)])
    xv, _, bv = block.args
    v_op = tg.WinogradInputOp(xv, (tiles, tiles), size)
    (v,) = evaluate(v_op, [x])
    u = transform_filter(w, size)
    m = np.matmul(v.transpose(1, 0, 2), u)
    m_arg = Block(arg_types=[tensor_type(m.shape, f32)]).args[0]
    (y,) = evaluate(tg.WinogradOutputOp(m_arg, bv, (1, tiles, tiles), size), [m, b])
    want = torch.nn.functional.conv2d(
        torch.from_numpy(x).double().permute(0, 3, 1, 2),
        torch.from_numpy(w).double().permute(3, 2, 0, 1),
        torch.from_numpy(b).double(),
    ).permute(0, 2, 3, 1)
    assert_close([y], want.numpy())


def test_two_threads_match() -> None:
    g, inputs, want = case_graph(CASES[1])
    for algo in ("winograd", "im2col"):
        assert_close(qidao.compile(g, threads=2, algo=algo)(*inputs), want)


def test_winograd_needs_a_constant_weight() -> None:
    rng = np.random.default_rng(3)
    g = Graph("main")
    x = g.input("x", (1, 16, 8, 8))
    w = g.input("w", (16, 16, 3, 3))
    g.output(g.conv2d(x, w, padding=1))
    compiled = qidao.compile(g, threads=1, algo="winograd")
    (why,) = compiled.stats["conv_algo"].values()
    assert why.startswith("direct:") and "not a constant" in why
    xs = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    ws = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    want = torch.nn.functional.conv2d(
        torch.from_numpy(xs).double(), torch.from_numpy(ws).double(), padding=1
    )
    assert_close(compiled(xs, ws), want.numpy())


def test_an_unknown_algorithm_is_refused_before_any_work() -> None:
    g, _, _ = case_graph(CASES[0])
    with pytest.raises(ValueError, match="algo must be one of"):
        qidao.compile(g, algo="fft")


def test_eager_mode_keeps_direct_loops() -> None:
    g, inputs, want = case_graph(CASES[0])
    compiled = qidao.compile(g, threads=1, mode="eager", algo="winograd")
    assert "conv_algo" not in compiled.stats
    assert_close(compiled(*inputs), want)


@pytest.fixture(scope="module")
def benchmarked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """One real ``algo="benchmark"`` compile of ``CASES[0]`` (each algorithm timed
    for a millisecond) and the cache folder holding the record it wrote: made once,
    read by the tests below (each damage starts from its record)."""
    folder = tmp_path_factory.mktemp("benchmarked")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QIDAO_VERIFY", "each")  # as in the tests (tests/passes/conftest.py)
        mp.setenv("QIDAO_CACHE_DIR", str(folder))
        mp.setenv("QIDAO_CACHE", "on")
        mp.setattr(conv_algo, "MIN_TIME", 0.001)
        g, _, _ = case_graph(CASES[0])
        compiled = qidao.compile(g, threads=1, algo="benchmark")
    return compiled, folder


def test_benchmark_measures_then_reads_the_record(
    benchmarked: tuple[Any, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, folder = benchmarked
    monkeypatch.setenv("QIDAO_CACHE_DIR", str(folder))
    monkeypatch.setenv("QIDAO_CACHE", "on")
    g, inputs, want = case_graph(CASES[0])
    assert_close(first(*inputs), want)
    (why,) = first.stats["conv_algo"].values()
    assert "benchmark:" in why
    for algo in ("direct", "im2col", "winograd"):
        assert f"{algo} " in why  # every applicable algorithm was timed
    lines = conv_algo.records_path().read_text().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["choice"] == why.split(":")[0]
    assert set(record["times_us"]) == {"direct", "im2col", "winograd"}

    # the second compile of the model (cache off, so it compiles again) reads it
    monkeypatch.setattr(conv_algo, "_time", _no_timing)
    second = qidao.compile(g, threads=1, algo="benchmark", fuse=False)
    (again,) = second.stats["conv_algo"].values()
    assert "benchmark (recorded)" in again
    assert again.split(":")[0] == record["choice"]


def _no_timing(*args: Any) -> float:
    raise AssertionError("a recorded choice was measured again")


@pytest.fixture(scope="module")
def good_record(benchmarked: tuple[Any, Path]) -> dict[str, Any]:
    """The record one real ``algo="benchmark"`` compile writes."""
    _, folder = benchmarked
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QIDAO_CACHE_DIR", str(folder))
        record: dict[str, Any] = json.loads(conv_algo.records_path().read_text())
    return record


FAKE_TIMES_US = {"direct": 3.0, "im2col": 2.0, "winograd": 1.0}
"""What the second compile "measures": the choice must come from these, not from
the damaged line."""


@pytest.mark.slow  # each case measures the algorithms again
@pytest.mark.parametrize(
    "damage",
    [
        "not json at all",
        "[1, 2]",
        '{"choice": "fft"}',
        "TRUNCATE",
        "WRONG_CHOICE",
        "NEGATIVE_TIME",
    ],
)
def test_a_damaged_record_is_measured_again(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
    good_record: dict[str, Any],
) -> None:
    monkeypatch.setenv("QIDAO_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("QIDAO_CACHE", "on")
    g, inputs, want = case_graph(CASES[0])
    if damage == "TRUNCATE":
        text = json.dumps(good_record)[:40]
    elif damage == "WRONG_CHOICE":
        text = json.dumps({**good_record, "choice": "matmul"})
    elif damage == "NEGATIVE_TIME":
        times = {"direct": -1.0, "winograd": 2.0}
        text = json.dumps({**good_record, "times_us": times})
    else:
        text = damage
    path = conv_algo.records_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    measured: list[str] = []

    def fake(compile_fn: Any, op: Any, algo: str, threads: int) -> float:
        measured.append(algo)
        return FAKE_TIMES_US[algo]

    monkeypatch.setattr(conv_algo, "_time", fake)
    compiled = qidao.compile(g, threads=1, algo="benchmark", fuse=False)
    (why,) = compiled.stats["conv_algo"].values()
    assert why.startswith("winograd: benchmark:") and "recorded" not in why
    assert sorted(measured) == ["direct", "im2col", "winograd"]
    assert_close(compiled(*inputs), want)
    # the damaged line was replaced by a good one, which the next compile reads (the
    # compile cache does not answer it: tests/passes/ verify after every pass, and
    # such a compile is never cached)
    monkeypatch.setattr(conv_algo, "_time", _no_timing)
    again = qidao.compile(g, threads=1, algo="benchmark", fuse=False)
    assert "benchmark (recorded)" in next(iter(again.stats["conv_algo"].values()))


def test_stats_table_names_each_convolution_algorithm() -> None:
    from qidao.tools.explain import stats_table

    g, _, _ = case_graph(CASES[0])
    graph = compiled_case(0, "winograd")
    eager = qidao.compile(g, threads=1, mode="eager")
    text = stats_table(graph, eager)
    assert "convolution algorithms (1, algo= chooses):" in text
    assert "winograd: algo=winograd" in text
