"""The user's cache key (``qidao.compiler.cache.secret``): made once, private,
outside the cache folder; a key file anyone else could read or replace is not
used (the cache is off and says why)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qidao.compiler.cache.files import UntrustedError
from qidao.compiler.cache.secret import KEY_BYTES, key_path, sign, signed, user_key
from tests.compiler.cache.helpers import compile_dense


def test_made_once_and_private(cache_dir: Path) -> None:
    key = user_key()
    assert len(key) == KEY_BYTES
    assert user_key() == key
    assert key_path().stat().st_mode & 0o777 == 0o600
    assert key_path().parent.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in key_path().parent.iterdir()] == ["cache.key"]


def test_processes_that_start_at_once_agree_on_one_key(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from qidao.compiler.cache.secret import user_key\n"
        "time.sleep(float(sys.argv[1]) - time.time())\n"  # start together
        "print(user_key().hex())\n"
    )
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}
    start = str(time.time() + 3)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, start], env=env, stdout=subprocess.PIPE
        )
        for _ in range(6)
    ]
    keys = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert len(keys) == 1 and len(next(iter(keys))) == 2 * KEY_BYTES
    assert [p.name for p in (tmp_path / "qidao").iterdir()] == ["cache.key"]


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda p: p.chmod(0o644), "may be read or written by other users"),
        (lambda p: p.write_bytes(b"short"), "the wrong size"),
        (
            lambda p: (p.unlink(), p.symlink_to("/dev/zero")),
            "cannot be opened (Too many levels of symbolic links)",
        ),
        (lambda p: (p.unlink(), os.mkfifo(p, 0o600)), "is a FIFO"),
        (lambda p: p.parent.chmod(0o777), "may be written by other users"),
    ],
    ids=["readable", "short", "symlink", "fifo", "folder writable"],
)
@pytest.mark.usefixtures("deadline")
def test_a_key_that_is_not_private_turns_the_cache_off(
    cache_dir: Path, damage: object, why: str
) -> None:
    user_key()
    damage(key_path())  # type: ignore[operator]
    with pytest.raises(UntrustedError) as err:
        user_key()
    assert why in str(err.value)
    compiled = compile_dense()
    assert compiled.stats["cache"].startswith("off: ")
    assert why in compiled.stats["cache"]


def test_signatures() -> None:
    key = os.urandom(KEY_BYTES)
    signature = sign(key, b"meta").encode()
    assert signed(key, b"meta", signature)
    assert signed(key, b"meta", signature + b"\n")
    assert not signed(key, b"meta!", signature)
    assert not signed(os.urandom(KEY_BYTES), b"meta", signature)
    assert not signed(key, b"meta", b"")
    assert not signed(key, b"meta", signature[:-1] + b"\xff")  # not ASCII: no error
