"""Reading and removing files without trust (``qidao.compiler.cache.files``): no
symlink followed, no FIFO waited on, no size believed before it is checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from qidao.compiler.cache.files import (
    UntrustedError,
    append_file,
    folder_problem,
    make_private_folder,
    open_folder,
    read_file,
    read_file_into,
    remove_known,
    unlink_plain,
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "private"
    make_private_folder(path)
    return path


def test_a_private_folder(folder: Path, tmp_path: Path) -> None:
    assert folder.stat().st_mode & 0o777 == 0o700
    assert folder_problem(folder) is None
    folder.chmod(0o770)
    assert "may be written by other users (mode 770" in str(folder_problem(folder))
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert folder_problem(link) == f"'{link}' is a symlink, not a folder"
    with pytest.raises(UntrustedError, match="is a symlink"):
        make_private_folder(link)
    (tmp_path / "file").write_text("x")
    assert (
        folder_problem(tmp_path / "file")
        == f"'{tmp_path / 'file'}' is a file, not a folder"
    )


@pytest.mark.usefixtures("deadline")
def test_read_file(folder: Path) -> None:
    (folder / "ok").write_bytes(b"12345")
    os.mkfifo(folder / "fifo")
    (folder / "zero").symlink_to("/dev/zero")
    (folder / "dir").mkdir()
    with open_folder(folder) as fd:
        assert read_file(fd, "ok", 5) == b"12345"
        assert read_file(fd, "ok", 10, exact=5) == b"12345"
        with pytest.raises(UntrustedError, match="more than the 4 allowed"):
            read_file(fd, "ok", 4)
        with pytest.raises(UntrustedError, match="6 expected"):
            read_file(fd, "ok", 10, exact=6)
        with pytest.raises(UntrustedError, match="'fifo' is a FIFO, not a file"):
            read_file(fd, "fifo", 10)
        with pytest.raises(UntrustedError, match="symbolic links"):
            read_file(fd, "zero", 10)
        with pytest.raises(UntrustedError, match="'dir' is a folder, not a file"):
            read_file(fd, "dir", 10)
        with pytest.raises(UntrustedError, match="'none' is missing"):
            read_file(fd, "none", 10)
        target = bytearray(5)
        read_file_into(fd, "ok", memoryview(target))
        assert bytes(target) == b"12345"
        append_file(fd, "log", b"a\n")
        append_file(fd, "log", b"b\n")
        assert read_file(fd, "log", 10) == b"a\nb\n"
        with pytest.raises(UntrustedError, match="'fifo' cannot be opened"):
            append_file(fd, "fifo", b"x")  # no reader: never blocks
        with pytest.raises(UntrustedError, match="'zero' cannot be opened"):
            append_file(fd, "zero", b"x")


def test_another_users_file_is_not_read(folder: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to give a file to another user")
    (folder / "theirs").write_bytes(b"x")
    os.chown(folder / "theirs", 12345, 12345)
    with open_folder(folder) as fd, pytest.raises(UntrustedError, match="uid 12345"):
        read_file(fd, "theirs", 10)


@pytest.mark.usefixtures("deadline")
def test_remove_known(folder: Path, tmp_path: Path) -> None:
    known = {"a", "b"}
    (folder / "entry").mkdir()
    (folder / "entry" / "a").write_text("x")
    (folder / "entry" / "b").symlink_to("/etc/passwd")  # removed, never followed
    assert remove_known(folder, "entry", known)
    assert not (folder / "entry").exists()
    assert Path("/etc/passwd").exists()
    (folder / "other").mkdir()
    (folder / "other" / "a").write_text("x")
    (folder / "other" / "c").write_text("x")
    assert not remove_known(folder, "other", known)
    assert sorted(p.name for p in (folder / "other").iterdir()) == ["a", "c"]
    (folder / "nested").mkdir()
    (folder / "nested" / "a").mkdir()
    assert not remove_known(folder, "nested", known)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a").write_text("precious")
    (folder / "link").symlink_to(outside)
    assert not remove_known(folder, "link", known)
    assert (outside / "a").read_text() == "precious"
    os.mkfifo(folder / "fifo")
    assert not remove_known(folder, "fifo", known)
    assert remove_known(folder, "gone", known)


def test_unlink_plain(folder: Path) -> None:
    (folder / "file").write_text("x")
    (folder / "link").symlink_to(folder)
    (folder / "dir").mkdir()
    assert unlink_plain(folder / "file")
    assert unlink_plain(folder / "link")
    assert folder.is_dir()
    assert not unlink_plain(folder / "dir")
    assert unlink_plain(folder / "missing")
