"""The user's cache key: 32 random bytes that sign every compile cache entry.

An entry is loaded only if its ``meta.hmac`` is the HMAC-SHA256 of its
``meta.json`` under this key (``qidao.compiler.cache.store``), and ``meta.json``
holds the SHA-256 of the entry's other files. Whoever can write the cache folder
but cannot read this file cannot make an entry that loads: the key lives outside
the cache folder, in ``$XDG_CONFIG_HOME/qidao/cache.key`` (else
``~/.config/qidao/cache.key``), readable by this user only. ``qidao cache clear``
never touches it; deleting it by hand invalidates every entry (they are rebuilt).

The first compile that needs the key makes it (``os.urandom``), atomically: two
processes that start at once agree on one key. A key file that is a symlink,
another user's, readable or writable by others, or not 32 bytes is not used: the
cache is then off, and ``stats["cache"]`` says why.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from qidao.compiler.cache.files import (
    UntrustedError,
    make_private_folder,
    open_folder,
    read_file,
)

KEY_BYTES = 32
KEY_NAME = "cache.key"


def key_path() -> Path:
    """``$XDG_CONFIG_HOME/qidao/cache.key``, else ``~/.config/qidao/cache.key``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "qidao" / KEY_NAME


def user_key() -> bytes:
    """The key, made on first use; :class:`UntrustedError` says why it cannot be
    used (module docstring)."""
    path = key_path()
    folder = path.parent
    make_private_folder(folder)
    with open_folder(folder) as fd:
        try:
            return _read_key(fd)
        except UntrustedError as e:
            if "is missing" not in str(e):
                raise
        _make_key(fd)
        return _read_key(fd)


def _read_key(folder_fd: int) -> bytes:
    key = read_file(folder_fd, KEY_NAME, KEY_BYTES, exact=KEY_BYTES)
    mode = os.stat(KEY_NAME, dir_fd=folder_fd, follow_symlinks=False).st_mode
    if mode & 0o077:
        raise UntrustedError(
            f"the cache key '{key_path()}' may be read or written by other users "
            f"(mode {mode & 0o777:o}); delete it, and qidao makes a private one"
        )
    return key


def _make_key(folder_fd: int) -> None:
    """Write a new key under a temporary name and link it into place: the link
    fails if another process made the key first, and then its key is used."""
    temporary = f".{KEY_NAME}.{secrets.token_hex(8)}"
    fd = os.open(
        temporary,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
        0o600,
        dir_fd=folder_fd,
    )
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(temporary, KEY_NAME, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    finally:
        os.unlink(temporary, dir_fd=folder_fd)


def sign(key: bytes, data: bytes) -> str:
    """The HMAC-SHA256 of ``data`` under ``key``, as hex."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def signed(key: bytes, data: bytes, signature: bytes) -> bool:
    """Whether ``signature`` (the bytes of a signature file, any bytes at all) is
    :func:`sign` of ``data``, compared in constant time."""
    return hmac.compare_digest(sign(key, data).encode(), signature.strip())
