"""The compile cache's entries (``qidao.compiler.cache.store``): a hit runs the same
machine code as the compile that stored it; an entry that is not exactly what this
user's qidao wrote (edited, forged with recomputed checksums, special files,
removed while read) is rebuilt, never loaded; a loaded model does not change when
its files do; ``qidao cache clear`` removes only the entries it made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.compiler.cache import CompileCache
from qidao.compiler.cache.secret import key_path, sign
from qidao.compiler.cache.store import FILES
from tests.compiler.cache.helpers import (
    X,
    compile_dense,
    dense,
    entry_folder,
    forge,
    reference,
)


def check(compiled: Any) -> None:
    np.testing.assert_allclose(compiled(X)[0], reference(), rtol=1e-5, atol=1e-5)


def test_miss_then_hit_runs_the_same_code(cache_dir: Path) -> None:
    cold = compile_dense()
    assert cold.stats["cache"] == "miss, stored"
    warm = compile_dense()
    assert warm.stats["cache"] == "hit"
    assert set(warm.stats["compile_seconds"]) == {"cache"}
    assert warm.stats["kernels"] == cold.stats["kernels"]
    check(warm)
    np.testing.assert_array_equal(warm(X)[0], cold(X)[0])
    assert sorted(p.name for p in entry_folder(cache_dir).iterdir()) == sorted(FILES)


def test_the_folders_and_the_key_are_private(cache_dir: Path) -> None:
    compile_dense()
    for folder in (cache_dir, cache_dir / "v1", entry_folder(cache_dir)):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    assert key_path().stat().st_mode & 0o777 == 0o600
    assert key_path().stat().st_size == 32
    assert not key_path().is_relative_to(cache_dir)  # clear never removes it
    assert (cache_dir / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f59")


def test_a_hit_makes_its_ir_when_asked(cache_dir: Path) -> None:
    cold = compile_dense()
    warm = compile_dense()
    assert warm.ir("affine") == cold.ir("affine")
    assert "external constant" in warm.ir("llvm")  # the weight is bound, not printed
    assert warm.module("tg") is not None


def _flip_byte(path: Path, at: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2 if at is None else at] ^= 0xFF
    path.write_bytes(bytes(data))


def _special(name: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    def replace(folder: Path) -> None:
        (folder / name).unlink()
        make(folder / name)

    return replace


def _edit_meta(folder: Path) -> None:
    text = (folder / "meta.json").read_text()
    (folder / "meta.json").write_text(text.replace('"threads": 1', '"threads": 2'))


def _swap_in_another_entry(folder: Path) -> None:
    """Another model's entry, of this user, moved under this key."""
    other = qidao.compile(dense(2 * dense_weight()), threads=1, verify="stage")
    assert other.stats["cache"] == "miss, stored"
    (other_folder,) = [e for e in CompileCache().entries() if e != folder]
    for name in FILES:
        os.replace(other_folder / name, folder / name)


def dense_weight() -> np.ndarray[Any, Any]:
    from tests.compiler.cache.helpers import W

    return W


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    # accidents: the signature or a checksum no longer matches
    "machine code": (lambda f: _flip_byte(f / "code.o"), "checksum"),
    "weights": (lambda f: _flip_byte(f / "weights.bin"), "checksum"),
    "truncated weights": (
        lambda f: (f / "weights.bin").write_bytes(b"\0" * 10),
        "wrong size",
    ),
    "missing code": (lambda f: (f / "code.o").unlink(), "'code.o' is missing"),
    "missing signature": (lambda f: (f / "meta.hmac").unlink(), "missing"),
    "meta not JSON": (lambda f: (f / "meta.json").write_text("{not json"), "signed"),
    "meta edited": (_edit_meta, "not signed"),
    "JSON bomb": (
        lambda f: (f / "meta.json").write_text("[" * 100_000 + "]" * 100_000),
        "not signed",
    ),
    # forgeries: checksums recomputed by someone without the key
    "forged code": (
        lambda f: (_flip_byte(f / "code.o", at=40), forge(f)),
        "not signed",
    ),
    "forged weights": (
        lambda f: ((f / "weights.bin").write_bytes(b"\1" * 8192), forge(f)),
        "not signed",
    ),
    "forged output shape": (
        lambda f: forge(f, outputs=[{"name": "y", "shape": [64], "dtype": "float32"}]),
        "not signed",
    ),
    "forged weight symbol": (
        lambda f: forge(f, weights={"no_such_symbol": [0, 8192]}),
        "not signed",
    ),
    "another model's entry": (_swap_in_another_entry, "another key"),
    # special files: never followed, read or waited on
    "code.o a symlink to /dev/zero": (
        _special("code.o", lambda p: p.symlink_to("/dev/zero")),
        "symbolic links",
    ),
    "code.o a FIFO": (_special("code.o", os.mkfifo), "is a FIFO"),
    "meta.json a FIFO": (_special("meta.json", os.mkfifo), "is a FIFO"),
    "weights.bin a folder": (_special("weights.bin", os.mkdir), "is a folder"),
    "entry a symlink": (
        lambda f: (
            os.rename(f, f.with_name("elsewhere")),
            f.symlink_to(f.with_name("elsewhere")),
        ),
        "not a folder",
    ),
    "entry a file": (
        lambda f: (
            [(f / n).unlink() for n in FILES],
            f.rmdir(),
            f.write_text("junk"),
        ),
        "not a folder",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
@pytest.mark.usefixtures("deadline")
def test_a_damaged_or_forged_entry_is_rebuilt_not_loaded(
    cache_dir: Path, damage: str
) -> None:
    compile_dense()
    corrupt, reason = DAMAGE[damage]
    corrupt(entry_folder(cache_dir))
    rebuilt = compile_dense()
    status = rebuilt.stats["cache"]
    assert status.startswith("rebuilt: the entry failed a check"), status
    assert reason in status, status
    assert status.endswith(", stored"), status
    check(rebuilt)
    again = compile_dense()  # the rebuilt entry is whole again
    assert again.stats["cache"] == "hit"
    check(again)


def test_an_entry_signed_with_another_users_key_is_rebuilt(cache_dir: Path) -> None:
    compile_dense()
    key_path().unlink()  # as if the folder came from another user or machine
    status = compile_dense().stats["cache"]
    assert "not signed with this user's cache key" in status
    assert compile_dense().stats["cache"] == "hit"


def _resign(folder: Path) -> None:
    """Sign ``meta.json`` again with the user's key: an entry qidao itself wrote
    damaged (a bug, a bad disk) rather than one someone forged."""
    text = (folder / "meta.json").read_bytes()
    (folder / "meta.hmac").write_text(sign(key_path().read_bytes(), text))


def _object_without_main() -> bytes:
    import llvmlite.binding as llvm

    from qidao.runtime.cpu import JitModule

    ir = "define void @not_main() {\n  ret void\n}\n"
    jit = JitModule(ir, opt_level=0, keep_object=True)
    assert jit.object_code is not None
    assert llvm.get_process_triple()
    return jit.object_code


def test_a_signed_entry_that_does_not_load_is_rebuilt_once(cache_dir: Path) -> None:
    """Code that loads but has no ``main`` (signed: as if qidao had written it):
    the entry is removed and rebuilt, not an error of every later compile."""
    compile_dense()
    folder = entry_folder(cache_dir)
    (folder / "code.o").write_bytes(_object_without_main())
    forge(folder)
    _resign(folder)
    status = compile_dense().stats["cache"]
    assert status.startswith("rebuilt: the entry failed a check: no function"), status
    assert status.endswith(", stored"), status
    assert compile_dense().stats["cache"] == "hit"


def test_a_signed_json_bomb_is_an_error_of_the_entry(cache_dir: Path) -> None:
    compile_dense()
    folder = entry_folder(cache_dir)
    (folder / "meta.json").write_text("[" * 100_000 + "]" * 100_000)
    _resign(folder)
    status = compile_dense().stats["cache"]
    assert "its meta.json does not read (RecursionError)" in status
    assert compile_dense().stats["cache"] == "hit"


@pytest.mark.parametrize("change", ["rewrite", "truncate", "remove"])
def test_a_loaded_model_does_not_change_with_its_files(
    cache_dir: Path, change: str
) -> None:
    g = dense()
    compile_dense()
    warm = qidao.compile(g, threads=1, verify="stage")
    assert warm.stats["cache"] == "hit"
    weights = entry_folder(cache_dir) / "weights.bin"
    size = weights.stat().st_size
    if change == "rewrite":
        weights.write_bytes(np.full(size // 4, 7.0, np.float32).tobytes())
    elif change == "truncate":
        os.truncate(weights, 0)  # a mapped file would be SIGBUS here
    else:
        weights.unlink()
    check(warm)


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
    assert not cache_dir.exists()


@pytest.mark.parametrize("folder", ["root", "v1"])
def test_a_folder_others_may_write_is_not_used(cache_dir: Path, folder: str) -> None:
    compile_dense()
    path = cache_dir if folder == "root" else cache_dir / "v1"
    path.chmod(0o777)
    compiled = compile_dense()
    status = compiled.stats["cache"]
    assert status.startswith("off: ") and "may be written by other users" in status
    assert str(path) in status
    check(compiled)
    path.chmod(0o700)
    assert compile_dense().stats["cache"] == "hit"  # nothing was rebuilt meanwhile


def test_a_folder_of_another_user_is_not_used(cache_dir: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to give a folder to another user")
    compile_dense()
    os.chown(cache_dir / "v1", 12345, 12345)
    status = compile_dense().stats["cache"]
    assert status == f"off: '{cache_dir / 'v1'}' belongs to another user (uid 12345)"


def test_a_symlinked_cache_folder_is_not_used(cache_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache_dir.mkdir(mode=0o700)
    (cache_dir / "v1").symlink_to(elsewhere)
    status = compile_dense().stats["cache"]
    assert status == f"off: '{cache_dir / 'v1'}' is a symlink, not a folder"
    assert list(elsewhere.iterdir()) == []


def test_an_entry_removed_while_compiles_read_it_is_never_an_error(
    cache_dir: Path,
) -> None:
    """``qidao cache clear`` in one thread while another compiles the same model:
    every compile is a hit, a miss or a rebuild, and right."""
    compile_dense()
    stop = threading.Event()

    def clear() -> None:
        while not stop.is_set():
            CompileCache().clear()

    clearer = threading.Thread(target=clear)
    clearer.start()
    try:
        statuses = set()
        for _ in range(30):
            compiled = compile_dense()
            statuses.add(compiled.stats["cache"].split(":")[0].split(",")[0])
            check(compiled)
    finally:
        stop.set()
        clearer.join()
    assert statuses <= {"hit", "miss", "rebuilt"}, statuses


def test_a_file_at_an_entrys_name_is_replaced_once(cache_dir: Path) -> None:
    compile_dense()
    folder = entry_folder(cache_dir)
    for name in FILES:
        (folder / name).unlink()
    folder.rmdir()
    folder.write_text("junk")
    assert "is not a folder" in compile_dense().stats["cache"]
    assert folder.is_dir()
    assert compile_dense().stats["cache"] == "hit"


def test_a_folder_with_other_files_at_an_entrys_name_is_set_aside(
    cache_dir: Path,
) -> None:
    compile_dense()
    folder = entry_folder(cache_dir)
    (folder / "notes.txt").write_text("mine")
    _flip_byte(folder / "code.o")
    assert compile_dense().stats["cache"].startswith("rebuilt")
    (aside,) = (cache_dir / "v1").glob(".broken-*")
    assert (aside / "notes.txt").read_text() == "mine"  # moved, not deleted
    assert compile_dense().stats["cache"] == "hit"


def test_info_and_clear(cache_dir: Path) -> None:
    cache = CompileCache(cache_dir)
    assert cache.info()["entries"] == 0
    compile_dense()
    compile_dense(opt_level=2)
    info = cache.info()
    assert info["entries"] == 2
    assert info["bytes"] > dense_weight().nbytes
    cleared = cache.clear()
    assert (cleared.removed, cleared.left, cleared.refused) == (2, [], None)
    assert cache.entries() == []
    assert compile_dense().stats["cache"] == "miss, stored"


def test_clear_does_not_follow_a_symlinked_folder(
    cache_dir: Path, tmp_path: Path
) -> None:
    project = tmp_path / "my_project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.py").write_text("print('precious')\n")
    (project / ("0" * 64)).mkdir()  # even a folder named like an entry
    cache_dir.mkdir(mode=0o700)
    (cache_dir / "v1").symlink_to(project)
    cleared = CompileCache(cache_dir).clear()
    assert cleared.removed == 0
    assert cleared.refused == f"'{cache_dir / 'v1'}' is a symlink, not a folder"
    assert sorted(p.name for p in project.iterdir()) == ["0" * 64, "src"]


@pytest.mark.usefixtures("deadline")
def test_clear_removes_only_what_qidao_made(cache_dir: Path, tmp_path: Path) -> None:
    compile_dense()
    v1 = cache_dir / "v1"
    (v1 / "resnet").mkdir()  # a folder that is not an entry
    (v1 / "resnet" / "weights.safetensors").write_text("w")
    (v1 / "junk").write_text("x")
    os.mkfifo(v1 / "a_fifo")  # never opened: rmtree would block on it
    (v1 / ("a" * 64)).mkdir()  # named like an entry, holding something else
    (v1 / ("a" * 64) / "mine.txt").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "meta.json").write_text("{}")
    (v1 / ("b" * 64)).symlink_to(outside)  # named like an entry, a symlink
    (v1 / "broken").symlink_to(tmp_path / "nowhere")
    info = CompileCache(cache_dir).info()
    assert info["entries"] == 1
    cleared = CompileCache(cache_dir).clear()
    assert cleared.removed == 1
    left = sorted(["a" * 64, "a_fifo", "b" * 64, "broken", "junk", "resnet"])
    assert cleared.left == left
    assert sorted(p.name for p in v1.iterdir()) == left
    assert (outside / "meta.json").exists()


def test_clear_and_info_on_a_folder_that_is_not_a_cache(tmp_path: Path) -> None:
    models = tmp_path / "models"
    (models / "v1" / "resnet").mkdir(parents=True)
    cleared = CompileCache(models).clear()
    assert (cleared.removed, cleared.left) == (0, ["resnet"])
    assert (models / "v1" / "resnet").is_dir()
    assert CompileCache(models).info()["other"] == ["resnet"]


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
    (cache_dir / "v1" / "junk").write_text("x")
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"algo:    2 measured convolution(s) in {records}" in out
    assert "other:   1 item(s) qidao did not make: junk" in out
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert f"removed 1 entry from {cache_dir / 'v1'}" in out
    assert "left 1 item(s) qidao did not make: junk" in out
    assert f"removed the measured convolution algorithms ({records})" in out
    assert not records.exists()
    assert CompileCache(cache_dir).entries() == []
    with pytest.raises(SystemExit):
        main(["cache", "purge"])
    assert "invalid choice: 'purge'" in capsys.readouterr().err


def test_the_cache_command_refuses_a_symlinked_folder(
    cache_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from qidao.tools.cli import main

    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    cache_dir.mkdir(mode=0o700)
    (cache_dir / "v1").symlink_to(project)
    assert main(["cache", "clear"]) == 1
    assert "not cleared: " in capsys.readouterr().err
    assert main(["cache", "info"]) == 0
    assert "cache:   off: " in capsys.readouterr().out
    assert (project / "src").is_dir()


def test_hits_in_other_processes(cache_dir: Path) -> None:
    """An entry one process stored is a hit in another (same user, same key)."""
    compile_dense()
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from tests.compiler.cache.helpers import compile_dense;"
        "print(compile_dense().stats['cache'])"
    )
    root = str(Path(__file__).resolve().parents[3])
    out = subprocess.run(
        [sys.executable, "-c", code, root],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ.copy(),
    )
    assert out.stdout.strip() == "hit"
    meta = json.loads((entry_folder(cache_dir) / "meta.json").read_text())
    assert meta["format"] == 2
