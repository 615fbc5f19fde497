"""The compile cache: a model compiled once is loaded, not compiled, the next time.

    qidao.compile("resnet50.onnx")    # cold: every stage, then the entry is stored
    qidao.compile("resnet50.onnx")    # warm, in any process: machine code loaded
    compiled.stats["cache"]           # "hit", "miss (stored)", or "off: <why>"

An entry is content-addressed: its key is a SHA-256 of everything the machine code
depends on (:func:`cache_key`): the model (the bytes of its file, its serialized
ONNX, or a digest of its tg IR), the target, the host CPU's name and features, the
settings (mode, threads, fuse, schedule, opt_level, the records file's bytes) and
qidao itself (a digest of its source files and the versions of xDSL and llvmlite;
a changed compiler never reads an old entry). Where the cache lives:
``$QIDAO_CACHE_DIR``, else ``$XDG_CACHE_HOME/qidao``, else ``~/.cache/qidao``;
``QIDAO_CACHE=off`` turns it off. ``qidao cache info`` and ``qidao cache clear``
show and empty it.

An entry is a folder ``<root>/v1/<key>/`` with three files: ``meta.json`` (the
format, the key, the signature, the stats, where each weight lies, the SHA-256 of
the two other files and of itself), ``code.o`` (the machine code MCJIT made) and ``weights.bin`` (the
model's large constants, each at a 64-byte aligned offset, mapped read-only when
loaded). It is written to a temporary folder and renamed into place, so a reader
never sees half an entry. A reader trusts nothing: an entry whose meta does not
parse, names another format or key, or whose files are missing, of the wrong size or
of the wrong SHA-256 is removed and rebuilt (``stats["cache"]`` says why), never
loaded into the process.

Not cached (``stats["cache"]`` says which): a ``schedule`` function (its effect
cannot be keyed), ``debug`` > 0 (it prints the stages as they run),
``verify="each"`` and ``profile=True``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from qidao.errors import RecordsError

FORMAT = 1
"""The entry layout; an entry of another format is foreign."""

ALIGNMENT = 64
"""Every weight starts at a multiple of this in ``weights.bin``."""

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


@cache
def compiler_digest() -> str:
    """A digest of qidao's source files and the versions of xDSL and llvmlite."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    for package in ("xdsl", "llvmlite"):
        h.update(f"{package}=={metadata.version(package)}".encode())
    return h.hexdigest()


def _file_digest(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def model_digest(model: Any) -> str | None:
    """A digest of the model's content, or None for a kind the cache cannot key:
    a ``.onnx``/``.mlir`` file's bytes (with an ONNX model's external data files),
    a ``ModelProto``'s serialization, a builder ``Graph``'s or tg ``ModuleOp``'s
    IR (:func:`module_digest`)."""
    import onnx
    from xdsl.dialects.builtin import ModuleOp

    from qidao.frontend.builder import Graph

    if isinstance(model, str | os.PathLike):
        path = Path(model)
        if not path.is_file():
            return None
        h = hashlib.sha256(f"file{path.suffix}".encode())
        h.update(_file_digest(path).encode())
        if path.suffix == ".onnx":  # external data lives beside the file
            h.update(_external_data_digest(path).encode())
        return h.hexdigest()
    if isinstance(model, onnx.ModelProto):
        data = model.SerializeToString(deterministic=True)
        return hashlib.sha256(b"onnx" + data).hexdigest()
    if isinstance(model, Graph):
        model = model.module()
    if isinstance(model, ModuleOp):
        return module_digest(model)
    return None


def _external_data_digest(path: Path) -> str:
    """The digest of the external data files an ONNX file names ("" if none)."""
    with path.open("rb") as f:
        if b"location" not in f.read():
            return ""
    import onnx

    proto = onnx.load(path, load_external_data=False)
    files = sorted(
        {
            entry.value
            for tensor in proto.graph.initializer
            for entry in tensor.external_data
            if entry.key == "location"
        }
    )
    h = hashlib.sha256()
    for name in files:
        data = path.parent / name
        h.update(name.encode())
        h.update(_file_digest(data).encode() if data.is_file() else b"missing")
    return h.hexdigest()


def module_digest(module: Any) -> str:
    """A digest of a tg module that is the same in every process: ops, operands by
    position, types and attributes as text, except that dense constants enter as
    the SHA-256 of their bytes (printing ResNet-50's weights would take minutes)."""
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr

    h = hashlib.sha256(b"tg")
    values: dict[Any, int] = {}

    def attribute(a: Any) -> str:
        if isinstance(a, DenseIntOrFPElementsAttr):
            return f"dense<{a.type}:{hashlib.sha256(a.data.data).hexdigest()}>"
        return str(a)

    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    values[arg] = len(values)
        operands = ",".join(str(values.get(v, -1)) for v in op.operands)
        attrs = ";".join(
            f"{k}={attribute(v)}"
            for k, v in sorted({**op.properties, **op.attributes}.items())
        )
        types = ",".join(str(r.type) for r in op.results)
        h.update(f"{op.name}({operands}){{{attrs}}}:{types}\n".encode())
        for result in op.results:
            values[result] = len(values)
    return h.hexdigest()


def cache_key(parts: Mapping[str, Any]) -> str:
    """The SHA-256 of ``parts`` (JSON-able) with the compiler's digest and format."""
    payload = {"format": FORMAT, "compiler": compiler_digest(), **parts}
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Entry:
    """One compiled model: its machine code, its weights, and what describes it."""

    code: bytes
    weights: dict[str, np.ndarray[Any, Any]]
    meta: dict[str, Any]
    """JSON-able: signature, stats, flags (whatever the target needs to load it)."""


class CompileCache:
    """The entries under one folder (:func:`cache_dir` by default)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or cache_dir()) / f"v{FORMAT}"

    def _folder(self, key: str) -> Path:
        return self.root / key

    def load(self, key: str) -> Entry | None:
        """The entry of ``key``; None if there is none. An entry that fails a check
        raises :class:`CacheError`."""
        folder = self._folder(key)
        if not folder.exists():
            return None
        return _read(folder, key)

    def remove(self, key: str) -> None:
        shutil.rmtree(self._folder(key), ignore_errors=True)

    def store(self, key: str, entry: Entry) -> None:
        """Write ``entry`` under ``key``, atomically (a temporary folder renamed)."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.root))
        try:
            offsets: dict[str, list[int]] = {}
            with (tmp / "weights.bin").open("wb") as f:
                position = 0
                for name, array in entry.weights.items():
                    pad = -position % ALIGNMENT
                    f.write(bytes(pad))
                    position += pad
                    data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
                    f.write(data.tobytes())
                    offsets[name] = [position, int(data.size)]
                    position += int(data.size)
            (tmp / "code.o").write_bytes(entry.code)
            meta = {
                **entry.meta,
                "format": FORMAT,
                "key": key,
                "code_sha256": hashlib.sha256(entry.code).hexdigest(),
                "weights_sha256": _file_digest(tmp / "weights.bin"),
                "weights_bytes": position,
                "weights": offsets,
            }
            meta["meta_sha256"] = _meta_digest(meta)
            (tmp / "meta.json").write_text(json.dumps(meta))
            with contextlib.suppress(OSError):  # another process stored it first
                tmp.rename(self._folder(key))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def entries(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if not p.name.startswith("."))

    def info(self) -> dict[str, Any]:
        """The folder, the number of entries and their bytes."""
        entries = self.entries()
        size = sum(f.stat().st_size for e in entries for f in e.glob("*"))
        return {"path": str(self.root), "entries": len(entries), "bytes": size}

    def clear(self) -> int:
        """Remove every entry; return how many there were."""
        entries = self.entries()
        for entry in entries:
            shutil.rmtree(entry, ignore_errors=True)
        return len(entries)


def _meta_digest(meta: dict[str, Any]) -> str:
    """The SHA-256 of ``meta`` without its own checksum field."""
    rest = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()


def _read(folder: Path, key: str) -> Entry:
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError) as e:
        raise CacheError(f"its meta.json does not read ({e})") from e
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CacheError("it is of another format")
    if meta.get("meta_sha256") != _meta_digest(meta):
        raise CacheError("its meta.json does not match its checksum")
    if meta.get("key") != key:
        raise CacheError("it belongs to another key")
    try:
        code = (folder / "code.o").read_bytes()
        weights_path = folder / "weights.bin"
        size = weights_path.stat().st_size
    except OSError as e:
        raise CacheError(f"a file is missing ({e})") from e
    if hashlib.sha256(code).hexdigest() != meta.get("code_sha256"):
        raise CacheError("its machine code does not match its checksum")
    if size != meta.get("weights_bytes"):
        raise CacheError("weights.bin has the wrong size")
    if _file_digest(weights_path) != meta.get("weights_sha256"):
        raise CacheError("weights.bin does not match its checksum")
    offsets = meta.get("weights")
    if not isinstance(offsets, dict):
        raise CacheError("its weight table is missing")
    weights: dict[str, np.ndarray[Any, Any]] = {}
    if size:
        blob = np.memmap(weights_path, dtype=np.uint8, mode="r")
        for name, place in offsets.items():
            if (
                not isinstance(place, list)
                or len(place) != 2
                or not all(isinstance(v, int) and v >= 0 for v in place)
                or place[0] % ALIGNMENT
                or place[0] + place[1] > size
            ):
                raise CacheError(f"weight '{name}' lies outside weights.bin")
            weights[name] = blob[place[0] : place[0] + place[1]]
    elif offsets:
        raise CacheError("weights.bin is empty but weights are listed")
    return Entry(code, weights, meta)


def lookup(
    key: str, cache: CompileCache, build: Callable[[Entry], Any]
) -> tuple[Any, str]:
    """``build(entry)`` for the entry of ``key`` and ``"hit"``; or None and why
    not: ``"miss"``, or ``"rebuilt: <why>"`` for an entry that failed a check
    (in :meth:`CompileCache.load` or in ``build``, which raises ``CacheError``);
    such an entry is removed."""
    try:
        entry = cache.load(key)
        if entry is None:
            return None, "miss"
        return build(entry), "hit"
    except CacheError as e:
        cache.remove(key)
        return None, f"rebuilt: the entry failed a check: {e}"
