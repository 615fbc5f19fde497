"""``qidao fuzz --kinds cache``: the compile cache's files tampered with, each case in
a cache folder and a key folder of its own (``qidao.compiler.cache``: its threat
model says what must hold).

A case (:func:`cache_case`), all of it drawn from its seed:

1. In the case's folder: ``QIDAO_CACHE=on``, ``QIDAO_CACHE_DIR=<folder>/cache`` and
   ``XDG_CONFIG_HOME=<folder>/config`` (set in this process's environment for the
   case and restored after it), and ``<folder>/precious``: files outside the cache
   (a folder shaped like an entry among them) that tamperings aim symlinks at.
2. A small random model with a weight (so ``weights.bin`` is not empty) compiles:
   ``miss, stored``.
3. One to three tamperings (:data:`TAMPERINGS`, applied in stage order: an entry's
   files, then junk beside them, then folders and the key, then symlinked folders).
4. It compiles again and is called: NumPy's answer, and a status that is ``hit``
   only if nothing that matters changed (the bytes of ``meta.json``, ``code.o`` and
   ``weights.bin``, the text of ``meta.hmac``, what kind of file each is, whether a
   folder is private, the key), else ``rebuilt: ...``, ``miss, ...`` or ``off: <why>``.
5. ``qidao cache info`` and ``qidao cache clear`` (``qidao.tools.cache_command``): no
   exception; info exits 0; clear exits 0, or 1 with "not cleared" for a folder that
   is not private; it removes only entry folders qidao made (a key's name, only an
   entry's files), its "removed" count is the entries gone, and it names exactly
   what is left. Neither changes the key's folder.
6. It compiles a third time: NumPy's answer, and a miss (or off) unless clear left
   the entry.
7. Nothing outside the cache changed (a checksum listing of ``precious``), and every
   junk file a tampering planted (a name qidao never makes) still exists.

Every broken rule is ``wrong`` (a compile that raises among them: the cache must
never fail one). ``raw``: an exception out of the CLI, or an entry whose signature
does not verify answered ``rebuilt: the entry did not load: <error>`` (that branch
is for signed entries: a check crashed on untrusted bytes before refusing them).
A failing seed runs again with ``qidao fuzz --kinds cache --seed SEED --cases 1``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import io
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from qidao.tools.cache_command import cache_command

Result = tuple[str, str]
Array = np.ndarray[Any, Any]

FILES = ("meta.json", "meta.hmac", "code.o", "weights.bin")
KEY_NAME = re.compile(r"^[0-9a-f]{64}$")
OURS = re.compile(r"^([0-9a-f]{64}|\.tmp-[A-Za-z0-9_]+|\.broken-.*)$")
"""The names in ``v1`` that ``qidao cache clear`` may remove."""
STATUS = re.compile(
    r"(miss|rebuilt: .+), (stored|not stored: .+|another process stored it)"
    r"|off: \S.*",
    re.S,
)
BIG = 16 << 20
"""Files larger than this are listed by size only (a sparse 4 GiB file)."""


class _Skip(Exception):
    """A tampering that does not apply (an earlier one removed its target)."""


# --- the model: a dense layer or two, with a weight ----------------------------------


@dataclass
class _Model:
    x: Array
    layers: list[tuple[Array, Array, str]]

    def graph(self) -> Any:
        from qidao.frontend.builder import Graph

        g = Graph("main")
        h = g.input("x", self.x.shape)
        for w, b, act in self.layers:
            h = g.matmul(h, g.constant(w)) + g.constant(b)
            h = g.relu(h) if act == "relu" else g.tanh(h) if act == "tanh" else h
        g.output(h)
        return g

    def reference(self) -> Array:
        h = self.x.astype(np.float64)
        for w, b, act in self.layers:
            h = h @ w.astype(np.float64) + b
            h = (
                np.maximum(h, 0)
                if act == "relu"
                else np.tanh(h)
                if act == "tanh"
                else h
            )
        return h

    def other(self, rng: np.random.Generator) -> _Model:
        """The same shapes, other weights: another key, code alike."""
        layers = [
            (_normal(rng, w.shape), _normal(rng, b.shape), a) for w, b, a in self.layers
        ]
        return _Model(self.x, layers)

    def describe(self) -> str:
        shapes = "->".join(str(w.shape[1]) for w, _, _ in self.layers)
        return f"{self.x.shape[1]}->{shapes}"


def _normal(rng: np.random.Generator, shape: tuple[int, ...]) -> Array:
    return (rng.standard_normal(shape) / 4).astype(np.float32)


def _random_model(rng: np.random.Generator) -> _Model:
    m, k = int(rng.integers(1, 5)), int(rng.integers(16, 40))
    layers = []
    for _ in range(int(rng.integers(1, 3))):
        n = int(rng.integers(16, 40))  # k * n > 256: a weight of weights.bin
        act = str(rng.choice(["relu", "tanh", "none"]))
        layers.append((_normal(rng, (k, n)), _normal(rng, (n,)), act))
        k = n
    return _Model(
        rng.standard_normal((m, layers[0][0].shape[0])).astype(np.float32), layers
    )


def _mismatch(got: Array, want: Array) -> str:
    got = np.asarray(got, np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    scale = float(np.max(np.abs(want), initial=1.0))
    if np.allclose(got, want, rtol=1e-4, atol=1e-4 * scale):
        return ""
    return f"differs from NumPy by {float(np.max(np.abs(got - want))):.3g}"


# --- the case's folders ----------------------------------------------------------------


@dataclass
class _Case:
    rng: np.random.Generator
    folder: Path
    model: _Model
    key: str = ""
    notes: list[str] = field(default_factory=list)
    tokens: list[bytes] = field(default_factory=list)
    """The content of every junk file planted: qidao must remove none."""
    other: Path | None = None
    mid_load: int = 0
    """Remove the entry's files after this many reads of the next load (0: never)."""
    mid_load_fired: bool = False
    raw: list[str] = field(default_factory=list)
    """Internal errors that reached the user (the case is ``raw``)."""

    @property
    def cache(self) -> Path:
        return self.folder / "cache"

    @property
    def v1(self) -> Path:
        return self.cache / "v1"

    @property
    def entry(self) -> Path:
        return self.v1 / self.key

    @property
    def keydir(self) -> Path:
        return self.folder / "config" / "qidao"

    @property
    def keyfile(self) -> Path:
        return self.keydir / "cache.key"

    @property
    def precious(self) -> Path:
        return self.folder / "precious"

    def int(self, n: int) -> int:
        return int(self.rng.integers(0, n))

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.int(len(options))]

    def file(self, name: str) -> Path:
        """The entry's file ``name``, which must be a regular file now (and not one
        an earlier tampering made huge: it would be read whole)."""
        path = self.entry / name
        if not _is(self.entry, stat.S_ISDIR) or not _plain(path):
            raise _Skip
        return path

    def junk(self, path: Path, kind: str, keep: bool = True) -> None:
        """Plant junk of ``kind`` at ``path``; a file's content is remembered when
        qidao must ``keep`` it."""
        if os.path.lexists(path):
            raise _Skip
        if kind == "file":
            token = f"qidao fuzz junk {len(self.tokens)} {self.int(1 << 30)}\n".encode()
            path.write_bytes(token)
            if keep:
                self.tokens.append(token)
        elif kind == "folder":
            path.mkdir()
            self.junk(path / "inside.txt", "file", keep)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            targets = {
                "link-file": self.precious / "precious.txt",
                "link-folder": self.precious / "v1",
                "link-dangling": self.folder / "nowhere",
            }
            os.symlink(targets[kind], path)

    def other_entry(self) -> Path:
        """The entry of another model of the same shapes, in the same cache."""
        if self.other is None:
            before = set(os.listdir(self.v1))
            _compile(self.model.other(self.rng))
            (name,) = set(os.listdir(self.v1)) - before
            self.other = self.v1 / name
        return self.other


def _is(path: Path, test: Callable[[int], bool]) -> bool:
    try:
        return test(os.lstat(path).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _cache_environment(folder: Path, cache: str, config: str) -> dict[str, str]:
    return {
        "QIDAO_CACHE": "on",
        "QIDAO_CACHE_DIR": str(folder / cache),
        "XDG_CONFIG_HOME": str(folder / config),
    }


def _make_precious(folder: Path, rng: np.random.Generator) -> None:
    """Files outside the cache: two shaped like entries (in ``v1/`` and at the top,
    for a symlinked root or ``v1``), one named as the convolution records, a key."""
    fake = folder / "v1" / ("ab" * 32)
    top = folder / ("cd" * 32)
    for entry in (fake, top):
        entry.mkdir(parents=True)
        for name in FILES:
            (entry / name).write_bytes(rng.bytes(int(rng.integers(1, 200))))
    (folder / "precious.txt").write_bytes(rng.bytes(300))
    (folder / "conv-algo.jsonl").write_text('{"precious": true}\n')
    (folder / "key-like").write_bytes(rng.bytes(32))
    (folder / "key-like").chmod(0o600)


def _listing(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every path under ``root`` (symlinks not followed): kind, mode, size, and the
    SHA-256 of a file or the target of a symlink."""
    out: dict[str, tuple[Any, ...]] = {}
    for top, folders, names in os.walk(root, followlinks=False):
        for name in [*folders, *names]:
            path = Path(top) / name
            out[str(path.relative_to(root))] = _describe(path, modes=True)
    return out


def _describe(path: Path, modes: bool = False) -> tuple[Any, ...]:
    """What a path is, without following a symlink or opening a FIFO."""
    try:
        st = os.lstat(path)
    except OSError:
        return ("missing",)
    mode = stat.S_IMODE(st.st_mode) if modes else bool(st.st_mode & 0o022)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISREG(st.st_mode):
        size = st.st_size
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if size <= BIG else ""
        return ("file", mode if modes else 0, size, digest)
    return (stat.S_IFMT(st.st_mode), mode)


def _state(c: _Case) -> dict[str, Any]:
    """What decides whether an entry may load: a hit is right only if this is as
    it was (``meta.hmac`` by its text, surrounding whitespace aside)."""
    out: dict[str, Any] = {}
    for label, path in (("root", c.cache), ("v1", c.v1), ("entry", c.entry)):
        out[label] = _describe(path)
    for name in FILES:
        out[name] = _describe(c.entry / name)
    text = _small(c.entry / "meta.hmac")
    if text is not None:
        out["meta.hmac"] = text.decode("ascii", "replace").strip()
    out["keydir"] = _describe(c.keydir)
    out["key"] = _describe(c.keyfile)
    if _is(c.keyfile, stat.S_ISREG):
        out["key mode"] = os.lstat(c.keyfile).st_mode & 0o077
    return out


def _plain(path: Path, cap: int = BIG) -> bool:
    """Whether ``path`` is a regular file of at most ``cap`` bytes."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= cap


def _small(path: Path, cap: int = BIG) -> bytes | None:
    """The bytes of the regular file at ``path`` if it has at most ``cap``."""
    return path.read_bytes() if _plain(path, cap) else None


def _signed(c: _Case) -> bool:
    """Whether the entry's ``meta.hmac`` signs its ``meta.json`` under the key."""
    key, text, signature = (
        _small(p) for p in (c.keyfile, c.entry / "meta.json", c.entry / "meta.hmac")
    )
    if key is None or text is None or signature is None:
        return False
    expected = hmac.new(key, text, hashlib.sha256).hexdigest()
    return signature.decode("ascii", "replace").strip() == expected


def _found_tokens(folder: Path) -> set[bytes]:
    """The content of every small file under ``folder`` (but ``precious``)."""
    found: set[bytes | None] = set()
    for top, folders, names in os.walk(folder, followlinks=False):
        if top == str(folder):
            folders[:] = [f for f in folders if f != "precious"]
        found |= {_small(Path(top) / name, 4096) for name in names}
    return {data for data in found if data is not None}


# --- compiling and the command line ------------------------------------------------


def _compile(model: _Model) -> tuple[str, str]:
    """Compile and call ``model``: its ``stats["cache"]`` and how its answer differs
    from NumPy's (empty: it does not). A ``QidaoError`` is returned as a status,
    which no rule accepts: the cache must never fail a compile."""
    import qidao

    try:
        compiled = qidao.compile(model.graph(), threads=1, verify="stage", debug=0)
    except qidao.QidaoError as e:
        return f"compile raised {type(e).__name__}: {str(e)[:150]}", ""
    (got,) = compiled(model.x)
    return str(compiled.stats.get("cache")), _mismatch(got, model.reference())


def _cli(action: str) -> tuple[int, str]:
    """``qidao cache <action>`` in this process: its exit status and its output."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = int(cache_command(action))
    return code, out.getvalue()


@contextlib.contextmanager
def _mid_load(c: _Case) -> Iterator[None]:
    """While compiling: the entry's files removed after ``c.mid_load`` reads (a
    ``qidao cache clear`` in another process, say)."""
    from qidao.compiler.cache import store

    if not c.mid_load:
        yield
        return
    original = vars(store)["read_file"]
    calls = 0

    def reading(*args: Any, **kwargs: Any) -> bytes:
        nonlocal calls
        data: bytes = original(*args, **kwargs)
        calls += 1
        if calls == c.mid_load and _is(c.entry, stat.S_ISDIR):
            c.mid_load_fired = True
            for name in FILES:
                with contextlib.suppress(OSError):
                    os.unlink(c.entry / name)
        return data

    with mock.patch.object(store, "read_file", reading):
        yield


# --- the tamperings ------------------------------------------------------------------


def _flip(c: _Case) -> str:
    name = c.pick(FILES)
    data = bytearray(c.file(name).read_bytes())
    if not data:
        raise _Skip
    i = c.int(len(data))
    data[i] ^= 1 + c.int(255)
    c.file(name).write_bytes(bytes(data))
    return f"flipped byte {i} of {name}"


def _truncate(c: _Case) -> str:
    name = c.pick(FILES)
    size = os.lstat(c.file(name)).st_size
    if size == 0:
        raise _Skip
    new = c.pick([0, size - 1, c.int(size)])
    os.truncate(c.entry / name, new)
    return f"truncated {name} to {new}"


def _extend(c: _Case) -> str:
    name = c.pick(FILES)
    path = c.file(name)
    how = c.pick(["random", "zeros", "whitespace", "huge"])
    if how == "huge":  # sparse: past every cap, no disk used
        size = (64 << 20) + 1 if name == "meta.json" else 1 << 32
        os.truncate(path, size)
        return f"extended {name} to {size} bytes"
    extra = {
        "random": c.rng.bytes(1 + c.int(64)),
        "zeros": bytes(1 + c.int(64)),
        "whitespace": b" \n\t"[: 1 + c.int(3)],
    }[how]
    with path.open("ab") as f:
        f.write(extra)
    return f"appended {len(extra)} {how} byte(s) to {name}"


def _zero(c: _Case) -> str:
    name = c.pick(FILES)
    path = c.file(name)
    path.write_bytes(bytes(os.lstat(path).st_size))
    return f"zeroed {name}"


def _replace(c: _Case) -> str:
    """A file replaced by a symlink, a FIFO or a folder."""
    name = c.pick(FILES)
    path = c.file(name)
    kind = c.pick(
        ["zero", "null", "other", "outside", "dangling", "sibling", "fifo", "folder"]
    )
    targets = {
        "zero": Path("/dev/zero"),
        "null": Path("/dev/null"),
        "outside": c.precious / "precious.txt",
        "dangling": c.folder / "nowhere",
        "sibling": c.entry / c.pick([f for f in FILES if f != name]),
    }
    if kind == "other":
        targets["other"] = c.other_entry() / name
    path.unlink()
    if kind in targets:
        os.symlink(targets[kind], path)
        return f"{name} -> symlink to {targets[kind]}"
    c.junk(path, kind)
    return f"{name} -> {kind}"


def _attacker_hmac(c: _Case, text: bytes) -> tuple[str, str]:
    """A signature made without the user's key: the old one, a plain hash, or an
    HMAC under a guessed key."""
    how = c.pick(["old", "sha256", "guessed key", "empty"])
    if how == "old":
        return how, c.file("meta.hmac").read_text(errors="replace")
    if how == "sha256":
        return how, hashlib.sha256(text).hexdigest()
    if how == "guessed key":
        return how, hmac.new(c.rng.bytes(32), text, hashlib.sha256).hexdigest()
    return how, ""


def _forge(c: _Case, what: str) -> str:
    """Edit the entry as someone who can write the folder but lacks the key: the
    change, every size and checksum in ``meta.json`` recomputed, a signature forged."""
    for name in FILES:  # each written below: never through a symlink or a FIFO
        c.file(name)
    try:
        meta = json.loads(c.file("meta.json").read_bytes())
    except (ValueError, RecursionError):
        raise _Skip from None  # an earlier tampering broke it
    if not isinstance(meta, dict):
        raise _Skip
    code = bytearray(c.file("code.o").read_bytes())
    weights = np.frombuffer(c.file("weights.bin").read_bytes(), np.uint8).copy()
    if what == "weights":  # other weights of the same size
        floats = weights[: weights.size // 4 * 4].view(np.float32)
        with np.errstate(over="ignore"):
            floats *= np.float32(c.pick([2.0, -1.0, 0.0, 1e30]))
        change = "scaled weights.bin"
    elif what == "code":
        if not code:
            raise _Skip  # an earlier tampering emptied it
        i = c.int(len(code))
        code[i] ^= 1 + c.int(255)
        change = f"flipped byte {i} of code.o"
    else:
        change = _forge_field(c, meta)
    meta["code_bytes"] = len(code)
    meta["code_sha256"] = hashlib.sha256(code).hexdigest()
    meta["weights_bytes"] = int(weights.size)
    meta["weights_sha256"] = hashlib.sha256(weights.tobytes()).hexdigest()
    text = json.dumps(meta).encode()
    how, signature = _attacker_hmac(c, text)
    (c.entry / "code.o").write_bytes(bytes(code))
    (c.entry / "weights.bin").write_bytes(weights.tobytes())
    (c.entry / "meta.json").write_bytes(text)
    (c.entry / "meta.hmac").write_text(signature)
    return f"forged: {change}, checksums recomputed, signature {how}"


def _forge_field(c: _Case, meta: dict[str, Any]) -> str:
    name = c.pick(
        ["inputs", "outputs", "key", "weights", "format", "checks", "target", "stats"]
    )
    value: Any = meta.get(name)
    first = value[0] if isinstance(value, list) and value else None
    place = value[min(value)] if name == "weights" and value else None
    if isinstance(first, dict) and isinstance(first.get("shape"), list):
        if c.int(2) and first["shape"]:
            first["shape"][c.int(len(first["shape"]))] = 1 + c.int(64)
        else:
            first["dtype"] = c.pick(["float64", "int32", "float16"])
    elif name == "key":
        meta["key"] = c.rng.bytes(32).hex()
    elif isinstance(place, list) and [type(v) for v in place] == [int, int]:
        offset, size = place
        value[min(value)] = c.pick(
            [[offset + 64, size], [offset, size * 2], [offset, size - 4], [1, size]]
        )
    else:
        meta[name] = c.pick([None, "cuda", 3, [], {"x": 1}, ""])
    return f"edited {name}"


BOMBS: dict[str, Callable[[bytes], bytes]] = {
    "deep arrays": lambda m: b"[" * 200_000 + b"]" * 200_000,
    "deep objects": lambda m: b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "huge exponent": lambda m: b"1e999999",
    "a list": lambda m: b"[" + m + b"]",
    "a string": lambda m: b'"' + b"x" * (1 << 20) + b'"',
    "null": lambda m: b"null",
    "invalid UTF-8": lambda m: m[:10] + b"\xff\xfe\x80" + m[10:],
    "NaN format": lambda m: m.replace(b'"format": ', b'"format": NaN, "f": ', 1),
    "negative size": lambda m: m.replace(
        b'"code_bytes": ', b'"code_bytes": -1, "c": ', 1
    ),
    "huge size": lambda m: m.replace(
        b'"weights_bytes": ', b'"weights_bytes": 1' + b"0" * 30 + b', "w": ', 1
    ),
    "other key": lambda m: m.replace(b'"key": "', b'"key": "0', 1),
    "other format": lambda m: m.replace(b'"format": ', b'"format": 1', 1),
    "weight table": lambda m: re.sub(
        rb'"weights": \{[^}]*\}', b'"weights": [1, 2]', m, count=1
    ),
}
"""``meta.json`` made hostile. Signed with the user's key each must still fail a
check (a foreign format, key, size or table; a document that does not read)."""
UNSIGNED_ONLY: dict[str, Callable[[bytes], bytes]] = {
    "byte order mark": lambda m: b"\xef\xbb\xbf" + m,
    "duplicate fields": lambda m: b'{"format": 0, ' + m[1:],
    "trailing space": lambda m: m + b" ",
}


def _json_bomb(c: _Case, signed: bool) -> str:
    bombs = BOMBS if signed else {**BOMBS, **UNSIGNED_ONLY}
    name = c.pick(sorted(bombs))
    text = bombs[name](c.file("meta.json").read_bytes())
    c.file("meta.json").write_bytes(text)
    if signed:  # as qidao itself would sign it: a parser's robustness, not a forgery
        from qidao.compiler.cache.secret import sign

        if not _is(c.keyfile, stat.S_ISREG):
            raise _Skip
        c.file("meta.hmac").write_text(sign(c.keyfile.read_bytes(), text))
    return f"meta.json: {name}{', signed with the key' if signed else ''}"


def _swap(c: _Case) -> str:
    """Files exchanged with another model's entry (each side signed, but for the
    other key or other files)."""
    other = c.other_entry()
    names = [n for n in FILES if c.int(2)] or [c.pick(FILES)]
    for name in names:
        c.file(name)
        if not _is(other / name, stat.S_ISREG):
            raise _Skip
        os.rename(c.entry / name, c.folder / "swap")
        os.rename(other / name, c.entry / name)
        os.rename(c.folder / "swap", other / name)
    return f"swapped {', '.join(names)} with another model's entry"


def _foreign(c: _Case) -> str:
    """The same entry compiled by another user (another key folder), copied in."""
    with _environment(_cache_environment(c.folder, "cache2", "config2")):
        _compile(c.model)
    (theirs,) = (c.folder / "cache2" / "v1").iterdir()
    names = [n for n in FILES if c.int(2)] or list(FILES)
    for name in names:
        c.file(name).unlink()
        shutil.copyfile(theirs / name, c.entry / name)
    return f"{', '.join(names)} copied from another key's entry"


def _delete(c: _Case) -> str:
    if not _is(c.entry, stat.S_ISDIR):
        raise _Skip
    how = c.pick(["folder", "files", "mid-load"])
    if how == "folder":
        planted = _found_tokens(c.entry)  # by an earlier tampering: gone with it
        c.tokens = [t for t in c.tokens if t not in planted]
        shutil.rmtree(c.entry)
        return "deleted the entry"
    if how == "mid-load":
        c.mid_load = 1 + c.int(3)
        return f"the entry deleted after {c.mid_load} read(s) of the next load"
    names = [n for n in FILES if c.int(2)] or [c.pick(FILES)]
    for name in names:
        c.file(name).unlink()
    return f"deleted {', '.join(names)}"


JUNK_KINDS = ("file", "folder", "fifo", "link-file", "link-folder", "link-dangling")
JUNK_NAMES = ("notes.txt", ".hidden", "meta.json.bak", "code.o~", "ünï", "x" * 200)


def _junk_entry(c: _Case) -> str:
    if not _is(c.entry, stat.S_ISDIR):
        raise _Skip
    name, kind = c.pick(JUNK_NAMES), c.pick(JUNK_KINDS)
    c.junk(c.entry / name, kind)
    return f"junk {kind} '{name[:20]}' in the entry"


def _junk_v1(c: _Case) -> str:
    if not _is(c.v1, stat.S_ISDIR):
        raise _Skip
    kind = c.pick((*JUNK_KINDS, "key-named", "fake entry", "temporary"))
    name = c.pick(JUNK_NAMES)
    if kind == "key-named":  # a key's name on junk: a file, a FIFO, a symlink
        name, kind = c.rng.bytes(32).hex(), c.pick(JUNK_KINDS)
        if kind == "link-folder":
            os.symlink(c.precious / "v1" / ("ab" * 32), c.v1 / name)
            return "a key-named symlink to a folder like an entry, outside"
    elif kind == "fake entry":  # an entry's shape, unsigned: clear may remove it
        name = c.rng.bytes(32).hex()
        (c.v1 / name).mkdir()
        for inner in FILES:
            (c.v1 / name / inner).write_bytes(c.rng.bytes(16))
        if c.int(2):
            c.junk(c.v1 / name / c.pick(JUNK_NAMES), c.pick(JUNK_KINDS))
        return "a fake entry (unsigned) in v1"
    elif kind == "temporary":
        name, kind = f".tmp-{c.rng.bytes(4).hex()}", c.pick(["folder", "fifo"])
    c.junk(c.v1 / name, kind)
    return f"junk {kind} '{name[:20]}' in v1"


def _junk_root(c: _Case) -> str:
    if not _is(c.cache, stat.S_ISDIR):
        raise _Skip
    how = c.pick(["junk", "records link", "records fifo", "tag link"])
    if how.startswith("records") and os.path.lexists(c.cache / "conv-algo.jsonl"):
        raise _Skip
    if how == "records link":  # qidao cache clear removes the records, not a link
        os.symlink(c.precious / "conv-algo.jsonl", c.cache / "conv-algo.jsonl")
    elif how == "records fifo":
        os.mkfifo(c.cache / "conv-algo.jsonl")
    elif how == "tag link":  # never written through: precious/tag must not appear
        with contextlib.suppress(FileNotFoundError):
            os.unlink(c.cache / "CACHEDIR.TAG")
        os.symlink(c.precious / "tag", c.cache / "CACHEDIR.TAG")
    else:
        kind = c.pick(JUNK_KINDS)
        c.junk(c.cache / c.pick(JUNK_NAMES), kind)
        how = f"junk {kind}"
    return f"{how} in the cache's root"


def _chmod(c: _Case) -> str:
    label = c.pick(["root", "v1", "entry"])
    path = {"root": c.cache, "v1": c.v1, "entry": c.entry}[label]
    if not _is(path, stat.S_ISDIR):  # never through a symlink
        raise _Skip
    bits = c.pick([0o020, 0o002, 0o022])
    os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | bits)
    return f"chmod {label} +{bits:o}"


KEY_TAMPERINGS = (
    *("other key", "chmod", "truncate", "extend", "delete", "link", "fifo", "folder"),
    *("folder chmod", "folder link"),
)


def _key(c: _Case) -> str:
    how = c.pick(KEY_TAMPERINGS)
    key, folder = c.keyfile, c.keydir
    if not _is(folder, stat.S_ISDIR) or not _is(key, stat.S_ISREG):
        raise _Skip
    data = key.read_bytes()
    if how == "chmod":
        mode = c.pick([0o644, 0o640, 0o604, 0o666, 0o400, 0o700])
        key.chmod(mode)
        return f"chmod the key {mode:o}"
    if how == "folder chmod":
        folder.chmod(0o700 | c.pick([0o020, 0o002]))
        return "the key's folder writable by others"
    if how == "folder link":
        folder.rename(folder.with_name("qidao.moved"))
        os.symlink(c.precious, folder)
        return "the key's folder a symlink to a folder outside"
    key.unlink()
    if how == "other key":
        data = c.rng.bytes(32)
    elif how == "truncate":
        data = data[: c.int(32)]
    elif how == "extend":
        data = data + c.rng.bytes(1 + c.int(32))
    if how in ("other key", "truncate", "extend"):
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    elif how == "link":
        os.symlink(c.precious / "key-like", key)
    elif how in ("fifo", "folder"):
        c.junk(key, how, keep=False)
    return f"the key: {how}"


def _redirect(c: _Case) -> str:
    """The root or ``v1`` a symlink to a folder outside, holding precious files."""
    which = c.pick(["root", "v1"])
    path = c.cache if which == "root" else c.v1
    if not _is(c.cache, stat.S_ISDIR) or not _is(path, stat.S_ISDIR):
        raise _Skip  # never through a symlinked root
    os.rename(path, path.with_name(path.name + ".moved"))
    target = c.precious if which == "root" or c.int(2) else c.precious / "v1"
    os.symlink(target, path)
    return f"{which} -> symlink to {target.relative_to(c.folder)}"


TAMPERINGS: dict[str, tuple[int, Callable[[_Case], str]]] = {
    "flip": (0, _flip),
    "truncate": (0, _truncate),
    "extend": (0, _extend),
    "zero": (0, _zero),
    "replace": (0, _replace),
    "forge-weights": (0, functools.partial(_forge, what="weights")),
    "forge-code": (0, functools.partial(_forge, what="code")),
    "forge-field": (0, functools.partial(_forge, what="field")),
    "json-bomb": (0, functools.partial(_json_bomb, signed=False)),
    "signed-bomb": (0, functools.partial(_json_bomb, signed=True)),
    "swap": (0, _swap),
    "foreign-key": (0, _foreign),
    "delete": (0, _delete),
    "junk-entry": (1, _junk_entry),
    "junk-v1": (1, _junk_v1),
    "junk-root": (1, _junk_root),
    "chmod": (2, _chmod),
    "key": (2, _key),
    "redirect": (3, _redirect),
}
"""Each tampering by name: its stage (applied in stage order, so that a symlinked
folder comes last and no tampering writes through it) and what it does."""


# --- the case ------------------------------------------------------------------------


def cache_case(
    rng: np.random.Generator, folder: Path, only: Sequence[str] | None = None
) -> Result:
    """Run one case (module docstring) in ``folder``; ``only``: draw the tamperings
    from these names only."""
    c = _Case(rng, folder, _random_model(rng))
    c.precious.mkdir()
    _make_precious(c.precious, rng)
    precious = _listing(c.precious)
    with _environment(_cache_environment(folder, "cache", "config")):
        first, diff = _compile(c.model)
        if first != "miss, stored" or diff:
            return "wrong", f"the first compile: {first} {diff}"[:300]
        (c.key,) = os.listdir(c.v1)
        problems = _tamper_and_check(c, only)
    if _listing(c.precious) != precious:
        problems.append("a file outside the cache changed")
    found = _found_tokens(folder)
    missing = [t for t in c.tokens if t not in found]
    if missing:
        problems.append(f"{len(missing)} junk file(s) qidao did not make were removed")
    detail = f"{c.model.describe()}: {'; '.join(c.notes)}"
    if c.raw:  # first: the message alone tells what crashed
        return "raw", f"{'; '.join(c.raw)}; after {detail}"[:300]
    if problems:
        return "wrong", f"{'; '.join(problems)}; after {detail}"[:300]
    return "ok", detail[:300]


def _tamper_and_check(c: _Case, only: Sequence[str] | None) -> list[str]:
    names = sorted(only or TAMPERINGS)
    drawn = [c.pick(names) for _ in range(1 + c.int(3))]
    before = _state(c)
    for name in sorted(drawn, key=lambda n: TAMPERINGS[n][0]):
        try:
            c.notes.append(TAMPERINGS[name][1](c))
        except _Skip:
            c.notes.append(f"{name}: skipped")
    matters = _state(c) != before
    unsigned = not _signed(c)
    with _mid_load(c):
        second, diff = _compile(c.model)
    matters = matters or c.mid_load_fired
    c.notes.append(f"-> {second[:60]}")
    problems = [f"after tampering: {diff}"] if diff else []
    if unsigned and second.startswith("rebuilt: the entry did not load"):
        # the generic branch is for a signed entry; a check crashed before it
        c.raw.append(f"a check of an unsigned entry crashed: {second[:120]}")
    if second == "hit" and matters:
        problems.append("a hit on a tampered entry")
    elif second != "hit" and not STATUS.fullmatch(second):
        problems.append(f"status {second!r}")
    survived, cleared = _info_and_clear(c, problems)
    third, diff = _compile(c.model)
    c.notes.append(f"clear: {cleared} -> {third[:40]}")
    fresh = second == "hit" or second.endswith(", stored") or not matters
    if diff:
        problems.append(f"after clear: {diff}")
    if third == "hit" and not (survived and fresh):
        problems.append(
            "a hit after clear" + (" on a tampered entry" if survived else "")
        )
    elif third != "hit" and not STATUS.fullmatch(third):
        problems.append(f"after clear: status {third!r}")
    elif third.startswith("rebuilt") and not survived:
        problems.append("rebuilt after clear removed the entry")
    return problems


def _private(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o022


def _inventory(v1: Path) -> dict[str, bool]:
    """Each name in ``v1`` and whether clear may remove it: a real folder named as
    qidao names its folders, holding only an entry's names as files or symlinks."""
    out: dict[str, bool] = {}
    for name in os.listdir(v1):
        path = v1 / name
        removable = bool(OURS.match(name)) and _private(path)
        if removable:
            inner = os.listdir(path)
            removable = set(inner) <= set(FILES) and all(
                _is(path / n, lambda m: stat.S_ISREG(m) or stat.S_ISLNK(m))
                for n in inner
            )
        out[name] = removable
    return out


def _info_and_clear(c: _Case, problems: list[str]) -> tuple[bool, str]:
    """Run ``qidao cache info`` and ``clear`` and check them; whether the entry is
    there after clear, and what clear said."""
    config = _listing(c.folder / "config")
    code, text = _cli("info")
    if code != 0:
        problems.append(f"cache info exited {code}: {text.strip()[-120:]}")
    readable = _private(c.cache) and _private(c.v1)
    before = _inventory(c.v1) if readable else {}
    code, text = _cli("clear")
    if _listing(c.folder / "config") != config:
        problems.append("cache info or clear changed the key's folder")
    survived = os.path.lexists(c.entry)
    if code == 1 and "not cleared" in text:
        if readable:
            problems.append(f"clear refused a private cache: {text.strip()[:120]}")
        return survived, "refused"
    if code != 0:
        problems.append(f"cache clear exited {code}: {text.strip()[-120:]}")
        return survived, f"exit {code}"
    if not readable:
        return survived, "nothing to clear"
    after = set(os.listdir(c.v1))
    gone = set(before) - after
    wrongly = sorted(n for n in gone if not before[n])
    if wrongly:
        problems.append(f"clear removed {wrongly[0][:20]!r}, which qidao did not make")
    said = re.search(r"removed (\d+) entr", text)
    entries = sum(1 for n in gone if KEY_NAME.match(n))
    if said is None or int(said.group(1)) != entries:
        problems.append(f"clear removed {entries} entries, said {text.strip()[:80]!r}")
    left = re.search(r"left (\d+) item\(s\) qidao did not make: (.*)", text)
    named = set() if left is None else set(left.group(2).split(", "))
    if (int(left.group(1)) if left else 0) != len(after) or (
        len(after) <= 10 and named != after
    ):
        problems.append(f"clear left {len(after)} item(s), named {len(named)}")
    return survived, f"removed {entries}, left {len(after)}"
