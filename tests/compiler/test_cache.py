"""The compile cache (``qidao.compiler.cache``): a hit runs the same machine code as
the compile that stored it, and an entry that fails a check is rebuilt, never
loaded.

The suite turns the cache off (``tests/conftest.py``); these tests turn it on, in a
folder of their own, and compile with ``verify="stage"`` (``verify="each"``, the
suite's default, is not cached).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.cache import CompileCache, _meta_digest, module_digest
from qidao.frontend.builder import Graph

RNG = np.random.default_rng(7)
W = RNG.standard_normal((64, 32)).astype(np.float32)  # 8 KiB: a weight, not inline
B = RNG.standard_normal(32).astype(np.float32)
X = RNG.standard_normal((4, 64)).astype(np.float32)


def dense(w: np.ndarray[Any, Any] = W) -> Graph:
    g = Graph()
    x = g.input("x", (4, 64))
    g.output(g.relu(g.matmul(x, g.constant(w)) + g.constant(B)))
    return g


def reference(w: np.ndarray[Any, Any] = W) -> np.ndarray[Any, Any]:
    return np.maximum(X @ w + B, 0)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("QIDAO_CACHE", "on")
    monkeypatch.setenv("QIDAO_CACHE_DIR", str(tmp_path))
    return tmp_path


def compile_dense(**options: Any) -> Any:
    return qidao.compile(dense(), threads=1, verify="stage", **options)


def entry_folder(cache_dir: Path) -> Path:
    (folder,) = CompileCache(cache_dir).entries()
    return folder


def test_miss_then_hit_runs_the_same_code(cache_dir: Path) -> None:
    cold = compile_dense()
    assert cold.stats["cache"] == "miss, stored"
    warm = compile_dense()
    assert warm.stats["cache"] == "hit"
    assert set(warm.stats["compile_seconds"]) == {"cache"}
    assert warm.stats["kernels"] == cold.stats["kernels"]
    np.testing.assert_allclose(warm(X)[0], reference(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(warm(X)[0], cold(X)[0])
    files = sorted(p.name for p in entry_folder(cache_dir).iterdir())
    assert files == ["code.o", "meta.json", "weights.bin"]


def test_a_hit_makes_its_ir_when_asked(cache_dir: Path) -> None:
    cold = compile_dense()
    warm = compile_dense()
    assert warm.ir("affine") == cold.ir("affine")
    assert "external constant" in warm.ir("llvm")  # the weight is bound, not printed
    assert warm.module("tg") is not None


def test_the_weights_are_part_of_the_key(cache_dir: Path) -> None:
    compile_dense()
    other = qidao.compile(dense(2 * W), threads=1, verify="stage")
    assert other.stats["cache"] == "miss, stored"
    np.testing.assert_allclose(other(X)[0], reference(2 * W), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "options", [{"opt_level": 1}, {"fuse": False}, {"schedule": None}]
)
def test_each_setting_is_part_of_the_key(
    cache_dir: Path, options: dict[str, Any]
) -> None:
    compile_dense()
    assert compile_dense(**options).stats["cache"] == "miss, stored"
    assert compile_dense(**options).stats["cache"] == "hit"


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ({"schedule": lambda s: None}, "off: schedule is a function"),
        ({"profile": True}, "off: profile=True"),
        ({"verify": "each"}, "off: verify='each'"),
    ],
)
def test_what_is_not_cached_says_why(
    cache_dir: Path, options: dict[str, Any], why: str
) -> None:
    compiled = qidao.compile(dense(), threads=1, **{"verify": "stage", **options})
    assert compiled.stats["cache"] == why
    assert CompileCache(cache_dir).entries() == []


def test_switched_off(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QIDAO_CACHE", "off")
    assert compile_dense().stats["cache"] == "off: QIDAO_CACHE=off"
    assert CompileCache(cache_dir).entries() == []


def _flip_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _rewrite_meta(path: Path, **changes: Any) -> None:
    """Change fields of meta.json and give it a matching checksum: a well-formed
    entry that is still not this compile's."""
    meta = {**json.loads(path.read_text()), **changes}
    meta["meta_sha256"] = _meta_digest(meta)
    path.write_text(json.dumps(meta))


CORRUPTIONS = {
    "machine code": (lambda f: _flip_byte(f / "code.o"), "checksum"),
    "weights": (lambda f: _flip_byte(f / "weights.bin"), "checksum"),
    "truncated weights": (
        lambda f: (f / "weights.bin").write_bytes(b"\0" * 10),
        "wrong size",
    ),
    "missing file": (lambda f: (f / "code.o").unlink(), "missing"),
    "meta not JSON": (lambda f: (f / "meta.json").write_text("{not json"), "read"),
    "meta edited": (
        lambda f: (f / "meta.json").write_text(
            (f / "meta.json").read_text().replace('"threads": 1', '"threads": 2')
        ),
        "meta.json does not match",
    ),
    "foreign format": (lambda f: _rewrite_meta(f / "meta.json", format=99), "format"),
    "another key": (lambda f: _rewrite_meta(f / "meta.json", key="0" * 64), "key"),
    "weight outside the file": (
        lambda f: _rewrite_meta(f / "meta.json", weights={"main_cst0": [64, 10**9]}),
        "outside",
    ),
    "checks that do not read": (
        lambda f: _rewrite_meta(f / "meta.json", checks=[{"kind": "bounds"}]),
        "a check does not read",
    ),
    "another target": (
        lambda f: _rewrite_meta(f / "meta.json", target="cuda"),
        "target",
    ),
}


@pytest.mark.parametrize("damage", list(CORRUPTIONS), ids=list(CORRUPTIONS))
def test_a_damaged_entry_is_rebuilt_not_loaded(cache_dir: Path, damage: str) -> None:
    compile_dense()
    corrupt, reason = CORRUPTIONS[damage]
    corrupt(entry_folder(cache_dir))
    rebuilt = compile_dense()
    assert rebuilt.stats["cache"].startswith("rebuilt: the entry failed a check")
    assert reason in rebuilt.stats["cache"]
    assert rebuilt.stats["cache"].endswith(", stored")
    np.testing.assert_allclose(rebuilt(X)[0], reference(), rtol=1e-5, atol=1e-5)
    again = compile_dense()  # the rebuilt entry is whole again
    assert again.stats["cache"] == "hit"
    np.testing.assert_allclose(again(X)[0], reference(), rtol=1e-5, atol=1e-5)


def test_an_onnx_file_is_keyed_by_its_bytes(cache_dir: Path, tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    def model(scale: float) -> Path:
        w = numpy_helper.from_array(W * scale, "w")
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])],
            [w],
        )
        path = tmp_path / "m.onnx"
        onnx.save(helper.make_model(graph), path)
        return path

    path = model(1.0)
    assert qidao.compile(path, verify="stage").stats["cache"] == "miss, stored"
    assert qidao.compile(path, verify="stage").stats["cache"] == "hit"
    path = model(3.0)  # the same path, other weights
    changed = qidao.compile(path, verify="stage")
    assert changed.stats["cache"] == "miss, stored"
    np.testing.assert_allclose(changed(X)[0], X @ (3 * W), rtol=1e-5, atol=1e-4)


def test_module_digest_is_the_same_in_another_process() -> None:
    here = module_digest(dense().module())
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from tests.compiler.test_cache import dense;"
        "from qidao.compiler.cache import module_digest;"
        "print(module_digest(dense().module()))"
    )
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run(
        [sys.executable, "-c", code, root], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == here
    assert module_digest(dense(2 * W).module()) != here


def test_info_and_clear(cache_dir: Path) -> None:
    cache = CompileCache(cache_dir)
    assert cache.info()["entries"] == 0
    compile_dense()
    compile_dense(opt_level=2)
    info = cache.info()
    assert info["entries"] == 2
    assert info["bytes"] > W.nbytes
    assert cache.clear() == 2
    assert cache.entries() == []
    assert compile_dense().stats["cache"] == "miss, stored"


def test_the_cache_command(cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from qidao.tools.cli import main

    compile_dense()
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"path:    {cache_dir / 'v1'}" in out
    assert "entries: 1" in out
    assert "cache:   on" in out
    assert "algo:" not in out  # no convolution measured yet
    records = cache_dir / "conv-algo.jsonl"  # what algo="benchmark" appends to
    records.write_text('{"choice": "direct"}\n{"choice": "winograd"}\n')
    assert main(["cache", "info"]) == 0
    assert f"algo:    2 measured convolution(s) in {records}" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert f"removed 1 entry from {cache_dir / 'v1'}" in out
    assert f"removed the measured convolution algorithms ({records})" in out
    assert not records.exists()
    assert CompileCache(cache_dir).entries() == []
    with pytest.raises(SystemExit):
        main(["cache", "purge"])
    assert "invalid choice: 'purge'" in capsys.readouterr().err
