"""The compile cache's entries on disk: stored signed, loaded only when the signature,
every checksum and every size agree.

An entry is a folder ``<root>/v1/<key>/`` (``<key>``: 64 hex digits) with four
files, written to a temporary folder and renamed into place (a reader never sees
half an entry):

``meta.json``    the format, the key, the target's signature and stats, where each
                 weight lies, and the size and SHA-256 of ``code.o`` and
                 ``weights.bin``
``meta.hmac``    the HMAC-SHA256 of ``meta.json``'s bytes under the user's key
                 (``qidao.compiler.cache.secret``)
``code.o``       the machine code MCJIT made
``weights.bin``  the model's large constants, each at a 64-byte aligned offset

A load verifies before it interprets: ``meta.hmac`` first (nothing unsigned is
parsed), then the format and key, then each file's size before reading it and its
SHA-256 after. The files are read into this process's memory, so a later write to
them cannot change a loaded model. Any failure is a :class:`CacheError` (the
entry is then removed and rebuilt by :func:`lookup`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qidao.compiler.cache.files import (
    UntrustedError,
    file_size,
    folder_problem,
    make_private_folder,
    open_folder,
    read_file,
    read_file_into,
    remove_known,
    supported,
    unlink_plain,
)
from qidao.compiler.cache.key import FORMAT
from qidao.compiler.cache.secret import sign, signed, user_key
from qidao.errors import RecordsError

LAYOUT = "v1"
"""The folder of entries under the cache's root."""

ALIGNMENT = 64
"""Every weight starts at a multiple of this in ``weights.bin`` (and in memory)."""

FILES = frozenset({"meta.json", "meta.hmac", "code.o", "weights.bin"})
"""What an entry folder holds; ``qidao cache clear`` removes nothing else."""

META_CAP = 64 << 20
"""The most bytes a ``meta.json`` may have (the stats of a large model are far
below; a bigger file is not read)."""

KEY_NAME = re.compile(r"^[0-9a-f]{64}$")
TEMPORARY = re.compile(r"^\.tmp-[A-Za-z0-9_]+$")

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by qidao.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
"""Marks the cache's root for backup tools (the Cache Directory Tagging spec)."""

CACHE_DIR_ENV = "QIDAO_CACHE_DIR"
CACHE_SWITCH_ENV = "QIDAO_CACHE"
"""``off`` (or ``0``, ``no``, ``false``) turns the cache off."""


class CacheError(RecordsError, RuntimeError):
    """An entry that cannot be trusted (the message says why)."""


def cache_dir() -> Path:
    """Where entries live: ``$QIDAO_CACHE_DIR``, ``$XDG_CACHE_HOME/qidao`` or
    ``~/.cache/qidao``."""
    given = os.environ.get(CACHE_DIR_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "qidao"


def cache_enabled() -> bool:
    return os.environ.get(CACHE_SWITCH_ENV, "on").lower() not in (
        "off",
        "0",
        "no",
        "false",
    )


@dataclass
class Entry:
    """One compiled model: its machine code, its weights, and what describes it."""

    code: bytes
    weights: dict[str, np.ndarray[Any, Any]]
    meta: dict[str, Any]
    """JSON-able: signature, stats, flags (whatever the target needs to load it)."""


@dataclass
class Cleared:
    """What :meth:`CompileCache.clear` did."""

    removed: int = 0
    left: list[str] = field(default_factory=list)
    """Names in the entries' folder that qidao did not make, or could not remove."""
    refused: str | None = None
    """Why nothing was looked at (the folder is not a private folder of this user)."""


class CompileCache:
    """The entries under one folder (:func:`cache_dir` by default)."""

    def __init__(self, root: Path | None = None) -> None:
        self.base = root or cache_dir()
        self.root = self.base / LAYOUT

    def _folder(self, key: str) -> Path:
        if not KEY_NAME.match(key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.root / key

    def unusable(self) -> str | None:
        """Why the cache cannot be used now (the folders are not private to this
        user, the key cannot be made), or None; makes the folders and the key."""
        if not supported():
            return "this system lacks O_NOFOLLOW or file owners"
        try:
            make_private_folder(self.base)
            make_private_folder(self.root)
            user_key()
        except UntrustedError as e:
            return str(e)
        tag = self.base / "CACHEDIR.TAG"
        if not os.path.lexists(tag):
            with contextlib.suppress(OSError):
                tag.write_text(CACHEDIR_TAG)
        return None

    def load(self, key: str) -> Entry | None:
        """The entry of ``key``; None if there is none. An entry that fails a check
        raises :class:`CacheError`."""
        folder = self._folder(key)
        try:
            with open_folder(folder) as fd:
                return _read(fd, key, user_key())
        except FileNotFoundError:
            return None
        except UntrustedError as e:
            raise CacheError(str(e)) from None
        except OSError as e:  # removed meanwhile (qidao cache clear), unreadable
            raise CacheError(f"it cannot be read ({e.strerror or e})") from None

    def remove(self, key: str) -> None:
        """Remove the entry of ``key`` (whatever is at its name: a file, a symlink,
        or an entry folder); a folder holding other files is renamed aside so that
        the key is free, and left for the user."""
        folder = self._folder(key)
        if unlink_plain(folder) or remove_known(self.root, key, FILES):
            return
        with contextlib.suppress(OSError):
            aside = self.root / f".broken-{key[:16]}-{secrets.token_hex(4)}"
            os.rename(folder, aside)

    def store(self, key: str, entry: Entry) -> str:
        """Write ``entry`` under ``key`` atomically (a temporary folder renamed) and
        return what happened: ``"stored"``, or ``"another process stored it"``.
        Raises ``OSError`` (disk full, read-only), ``UntrustedError``, or
        ``TypeError``/``ValueError`` for a meta that is not JSON."""
        make_private_folder(self.root)
        secret = user_key()
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.root))
        try:
            offsets: dict[str, list[int]] = {}
            weights = hashlib.sha256()
            with (tmp / "weights.bin").open("wb") as f:
                position = 0
                for name, array in entry.weights.items():
                    pad = bytes(-position % ALIGNMENT)
                    f.write(pad)
                    weights.update(pad)
                    position += len(pad)
                    data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
                    f.write(data.tobytes())
                    weights.update(data.tobytes())
                    offsets[name] = [position, int(data.size)]
                    position += int(data.size)
            (tmp / "code.o").write_bytes(entry.code)
            meta = {
                **entry.meta,
                "format": FORMAT,
                "key": key,
                "code_bytes": len(entry.code),
                "code_sha256": hashlib.sha256(entry.code).hexdigest(),
                "weights_bytes": position,
                "weights_sha256": weights.hexdigest(),
                "weights": offsets,
            }
            text = json.dumps(meta).encode()
            if len(text) > META_CAP:
                raise ValueError(f"its meta.json would have {len(text)} bytes")
            (tmp / "meta.json").write_bytes(text)
            (tmp / "meta.hmac").write_text(sign(secret, text))
            try:
                tmp.rename(self._folder(key))
            except OSError as e:
                if e.errno in (errno.ENOTEMPTY, errno.EEXIST) and os.path.isdir(
                    self._folder(key)
                ):
                    return "another process stored it"
                raise
            return "stored"
        finally:
            remove_known(self.root, tmp.name, FILES)

    def _names(self) -> list[str]:
        try:
            with open_folder(self.root) as fd:
                return sorted(os.listdir(fd))
        except (OSError, UntrustedError):
            return []

    def entries(self) -> list[Path]:
        """The entry folders: named by a key, private, holding only an entry's
        files (a symlink is not followed)."""
        return [
            self.root / name
            for name in self._names()
            if KEY_NAME.match(name) and _is_entry(self.root / name)
        ]

    def info(self) -> dict[str, Any]:
        """The folder, the number of entries and their bytes, and the names that
        are not entries (``other``); ``problem`` if the folder is not private."""
        problem = None
        for folder in (self.base, self.root):
            if problem is None and os.path.lexists(folder):
                problem = folder_problem(folder)
        entries = [] if problem else self.entries()
        size = sum(file_size(e / name) for e in entries for name in FILES)
        names = {e.name for e in entries}
        other = [n for n in self._names() if n not in names] if not problem else []
        return {
            "path": str(self.root),
            "entries": len(entries),
            "bytes": size,
            "other": other,
            "problem": problem,
        }

    def clear(self) -> Cleared:
        """Remove every entry qidao made (and temporary folders it left); leave
        and name everything else. A folder that is a symlink, another user's or
        writable by others is not looked into at all."""
        if not os.path.lexists(self.base):
            return Cleared()
        problem = folder_problem(self.base)
        if problem is None and os.path.lexists(self.root):
            problem = folder_problem(self.root)
        if problem is not None:
            return Cleared(refused=problem)
        if not os.path.lexists(self.root):
            return Cleared()
        report = Cleared()
        for name in self._names():
            ours = bool(KEY_NAME.match(name) or TEMPORARY.match(name))
            ours = ours or name.startswith(".broken-")
            if ours and remove_known(self.root, name, FILES):
                report.removed += 1 if KEY_NAME.match(name) else 0
            else:
                report.left.append(name)
        return report


def _is_entry(folder: Path) -> bool:
    try:
        with open_folder(folder) as fd:
            return set(os.listdir(fd)) <= FILES
    except (OSError, UntrustedError):
        return False


def _read(fd: int, key: str, secret: bytes) -> Entry:
    """The entry in the open folder ``fd`` (module docstring)."""
    signature = read_file(fd, "meta.hmac", 128)
    text = read_file(fd, "meta.json", META_CAP)
    if not signed(secret, text, signature):
        raise CacheError(
            "its meta.json is not signed with this user's cache key (the entry was "
            "changed after qidao wrote it, or written by another user or qidao)"
        )
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise CacheError(f"its meta.json does not read ({type(e).__name__})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CacheError("it is of another format")
    if meta.get("key") != key:
        raise CacheError("it belongs to another key")
    code_bytes, weights_bytes = meta.get("code_bytes"), meta.get("weights_bytes")
    if not isinstance(code_bytes, int) or not isinstance(weights_bytes, int):
        raise CacheError("its file sizes do not read")
    if not _is_size(code_bytes) or not _is_size(weights_bytes):
        raise CacheError("its file sizes do not read")
    code = read_file(fd, "code.o", code_bytes, exact=code_bytes)
    if hashlib.sha256(code).hexdigest() != meta.get("code_sha256"):
        raise CacheError("its machine code does not match its checksum")
    blob = _aligned(weights_bytes)
    view = memoryview(blob.data)
    read_file_into(fd, "weights.bin", view)
    if hashlib.sha256(view).hexdigest() != meta.get("weights_sha256"):
        raise CacheError("weights.bin does not match its checksum")
    blob.setflags(write=False)
    return Entry(code, _weights(meta.get("weights"), blob), meta)


def _is_size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _aligned(size: int) -> np.ndarray[Any, Any]:
    """``size`` bytes of this process's memory starting at a multiple of
    :data:`ALIGNMENT`."""
    raw = np.empty(size + ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start : start + size]


def _weights(
    offsets: object, blob: np.ndarray[Any, Any]
) -> dict[str, np.ndarray[Any, Any]]:
    if not isinstance(offsets, dict):
        raise CacheError("its weight table is missing")
    weights: dict[str, np.ndarray[Any, Any]] = {}
    for name, place in offsets.items():
        if (
            not isinstance(place, list)
            or len(place) != 2
            or not all(_is_size(v) for v in place)
            or place[0] % ALIGNMENT
            or place[0] + place[1] > blob.size
        ):
            raise CacheError(f"weight '{name}' lies outside weights.bin")
        weights[name] = blob[place[0] : place[0] + place[1]]
    return weights


def lookup(
    key: str, cache: CompileCache, build: Callable[[Entry], Any]
) -> tuple[Any, str]:
    """``build(entry)`` for the entry of ``key`` and ``"hit"``; or None and why
    not: ``"miss"``, or ``"rebuilt: <why>"`` for an entry that failed a check in
    :meth:`CompileCache.load` or could not be loaded by ``build``; such an entry
    is removed, so it never fails a later compile."""
    try:
        entry = cache.load(key)
        if entry is None:
            return None, "miss"
        return build(entry), "hit"
    except CacheError as e:
        cache.remove(key)
        return None, f"rebuilt: the entry failed a check: {e}"
    except Exception as e:  # loading our own signed code failed: a damaged disk?
        cache.remove(key)
        return None, (
            f"rebuilt: the entry did not load: {type(e).__name__}: {str(e)[:200]}"
        )
