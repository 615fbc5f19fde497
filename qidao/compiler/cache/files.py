"""Files in a folder that others might have touched: read and removed without trust.

The compile cache's folder, its entries and the key file are data from disk. Every
function here looks at a path with ``lstat`` or opens it with ``O_NOFOLLOW``: a
symlink is never followed, a FIFO or device is never opened for reading (a FIFO
would block, ``/dev/zero`` never ends), a file owned by another user is not
trusted, and a size is checked before anything is read. A folder is *private*
when it is a real folder (not a symlink) owned by this user that no other user
may write (no group or other write bit): only then can nobody else put files in
it or rename its entries.

    folder_problem(path)            # None, or why the folder cannot be trusted
    make_private_folder(path)       # create it (0o700) or check it; UntrustedError
    read_file(folder_fd, name, cap) # the bytes of a regular file owned by us
    remove_known(parent, name, {"meta.json", ...})  # only a folder we made
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Set
from pathlib import Path

from qidao.errors import RecordsError


class UntrustedError(RecordsError, RuntimeError):
    """A folder or file that another user could have written (or that is not a
    plain file or folder): the message names it and what is wrong."""


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def supported() -> bool:
    """Whether this system has what the checks need (POSIX owners and
    ``O_NOFOLLOW``)."""
    return hasattr(os, "getuid") and _NOFOLLOW != 0 and _DIRECTORY != 0


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a file"


def folder_problem(path: Path) -> str | None:
    """Why ``path`` is not a private folder (module docstring), or None."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"'{path}' cannot be read ({e.strerror})"
    return _folder_stat_problem(path, st)


def _folder_stat_problem(path: Path, st: os.stat_result) -> str | None:
    if not stat.S_ISDIR(st.st_mode):
        return f"'{path}' is {_kind(st.st_mode)}, not a folder"
    if st.st_uid != os.getuid():
        return f"'{path}' belongs to another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"'{path}' may be written by other users (mode {stat.S_IMODE(st.st_mode):o}"
            f"; `chmod go-w {path}` makes it private)"
        )
    return None


def make_private_folder(path: Path) -> None:
    """Create ``path`` (and its missing parents) with mode 0o700, or check the
    folder that is there; :class:`UntrustedError` if it is not private."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:
        pass  # a file or a symlink is there: said below
    except OSError as e:
        raise UntrustedError(f"cannot create '{path}' ({e.strerror})") from None
    problem = folder_problem(path)
    if problem is not None:
        raise UntrustedError(problem)


@contextlib.contextmanager
def open_folder(path: Path) -> Iterator[int]:
    """A file descriptor of the private folder ``path`` (not followed if it is a
    symlink); :class:`UntrustedError` if it is not one, ``FileNotFoundError`` if
    there is nothing there."""
    try:
        fd = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as e:  # ELOOP: a symlink; ENOTDIR: a file
        raise UntrustedError(f"'{path}' is not a folder ({e.strerror})") from None
    try:
        problem = _folder_stat_problem(path, os.fstat(fd))
        if problem is not None:
            raise UntrustedError(problem)
        yield fd
    finally:
        os.close(fd)


def read_file(folder_fd: int, name: str, cap: int, exact: int | None = None) -> bytes:
    """The bytes of file ``name`` in the folder ``folder_fd``: a regular file owned
    by this user, at most ``cap`` bytes (``exact``: exactly that many), opened
    without following a symlink or blocking on a FIFO."""
    fd, size = _open_checked(folder_fd, name, cap, exact)
    with os.fdopen(fd, "rb", buffering=0) as f:
        data = f.read(size + 1)
    if len(data) != size:
        raise UntrustedError(f"'{name}' changed size while it was read")
    return data


def read_file_into(folder_fd: int, name: str, target: memoryview) -> None:
    """Fill ``target`` with the bytes of file ``name`` (see :func:`read_file`): the
    file must hold exactly ``len(target)`` bytes."""
    size = len(target)
    fd, _ = _open_checked(folder_fd, name, size, size)
    with os.fdopen(fd, "rb", buffering=0) as f:
        done = 0
        while done < size:
            got = f.readinto(target[done:])
            if not got:
                raise UntrustedError(f"'{name}' ended early (it is being changed)")
            done += got


def _open_checked(
    folder_fd: int, name: str, cap: int, exact: int | None
) -> tuple[int, int]:
    """An open descriptor of the regular file ``name`` and its size, checked as
    :func:`read_file` says; the caller closes it."""
    try:
        fd = os.open(
            name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=folder_fd
        )
    except FileNotFoundError:
        raise UntrustedError(f"'{name}' is missing") from None
    except OSError as e:  # ELOOP: a symlink
        raise UntrustedError(f"'{name}' cannot be opened ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UntrustedError(f"'{name}' is {_kind(st.st_mode)}, not a file")
        if st.st_uid != os.getuid():
            raise UntrustedError(f"'{name}' belongs to another user (uid {st.st_uid})")
        if exact is not None and st.st_size != exact:
            raise UntrustedError(
                f"'{name}' has {st.st_size} bytes, {exact} expected (the wrong size)"
            )
        if st.st_size > cap:
            raise UntrustedError(
                f"'{name}' has {st.st_size} bytes, more than the {cap} allowed"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def append_file(folder_fd: int, name: str, data: bytes) -> None:
    """Append ``data`` to the regular file ``name`` of this user in the folder
    ``folder_fd`` (made if missing, mode 0o600), in one write."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _NONBLOCK | _CLOEXEC
    try:
        fd = os.open(name, flags, 0o600, dir_fd=folder_fd)
    except OSError as e:  # ELOOP: a symlink; ENXIO: a FIFO nobody reads
        raise UntrustedError(f"'{name}' cannot be opened ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            raise UntrustedError(f"'{name}' is not a file of this user")
        os.write(fd, data)
    finally:
        os.close(fd)


def file_size(path: Path) -> int:
    """The size of a regular file at ``path`` (0 for anything else), not followed."""
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def remove_known(parent: Path, name: str, known: Set[str]) -> bool:
    """Remove the folder ``parent/name`` if it is this user's and holds only
    regular files or symlinks named in ``known`` (what qidao writes there); True
    if it is gone. Anything else is left as it is: a folder holding other names
    or other folders, another user's folder, a symlink to a folder (never
    followed), a file, a FIFO or a device."""
    path = parent / name
    try:
        with open_folder(path) as fd:
            names = os.listdir(fd)
            if not set(names) <= known:
                return False
            for inner in names:
                mode = os.stat(inner, dir_fd=fd, follow_symlinks=False).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                    return False
            for inner in names:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(inner, dir_fd=fd)
        os.rmdir(path)
    except FileNotFoundError:
        return True  # removed by another process meanwhile
    except (OSError, UntrustedError):
        return False
    return True


def unlink_plain(path: Path) -> bool:
    """Remove ``path`` if it is a file or a symlink (not followed); True if there is
    nothing at ``path`` now."""
    try:
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            return False
        os.unlink(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True
