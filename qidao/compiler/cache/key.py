"""The compile cache's key: a SHA-256 of everything that decides the machine code.

    cache_key({"model": model_digest(m), "target": "cpu", "options": {...}, ...})

Its parts (``qidao.compiler.compile`` gathers them):

- the model (:func:`model_digest`): a ``.mlir`` file's bytes; a ``.onnx`` file's
  bytes and the bytes of every external-data range it names (initializers and
  constants of nodes and subgraphs, each location checked as the importer checks
  it *before* anything is read); a ``ModelProto``'s serialization; a builder
  ``Graph``'s or tg ``ModuleOp``'s IR (:func:`module_digest`), custom ops' forward
  and vjp regions included. An ONNX model with a node that a registered custom op
  (``qidao.custom_op``) answers is keyed by its imported IR, since the op's body is
  Python code in this process, not bytes of the file;
- the target, the host CPU's name and features, the mode, ``threads`` and every
  option (a records file by its bytes, an optimizer by its hyper-parameters);
- qidao itself (:func:`compiler_digest`): the digest of its source files, its
  version, and the versions of xDSL, llvmlite (and the LLVM inside it), NumPy and
  onnx. A changed compiler never reads an old entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

FORMAT = 2
"""The entry format (``meta.json``'s fields, the signed ``meta.hmac``); an entry of
another format is foreign and rebuilt."""

_VERSIONED = ("qidao", "xdsl", "llvmlite", "numpy", "onnx")


@cache
def compiler_digest() -> str:
    """A digest of qidao's source files, its version and the versions of what
    makes its code (xDSL, llvmlite and its LLVM, NumPy, onnx)."""
    import llvmlite.binding as llvm

    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[2]
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    for package in _VERSIONED:
        try:
            version = metadata.version(package)
        except metadata.PackageNotFoundError:
            version = "not installed"
        h.update(f"{package}=={version}\n".encode())
    h.update(f"LLVM {llvm.llvm_version_info}".encode())
    return h.hexdigest()


def _file_digest(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def model_digest(model: Any) -> str | None:
    """A digest of the model's content (module docstring), or None for a kind the
    cache cannot key. An ``.onnx`` path whose external data the importer would
    refuse raises the importer's error before any of it is read."""
    import onnx
    from xdsl.dialects.builtin import ModuleOp

    from qidao.frontend.builder import Graph

    if isinstance(model, str | os.PathLike):
        path = Path(model)
        if not path.is_file():
            return None
        h = hashlib.sha256(f"file{path.suffix}".encode())
        h.update(_file_digest(path).encode())
        if path.suffix == ".onnx":
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
    """The digest of the external data an ONNX file names ("" if none): exactly the
    byte ranges the importer reads, after its checks of every location."""
    with path.open("rb") as f:
        if b"location" not in f.read():
            return ""
    import onnx

    from qidao.frontend.onnx.load import external_places

    proto = onnx.load(path, load_external_data=False)
    h = hashlib.sha256()
    for what, _, file, offset, length in external_places(proto, str(path.parent)):
        h.update(f"{what}\0{offset}\0{length}\0".encode())
        with open(file, "rb") as f:
            f.seek(offset)
            remaining = length
            while remaining is None or remaining > 0:
                chunk = f.read(
                    1 << 20 if remaining is None else min(remaining, 1 << 20)
                )
                if not chunk:
                    break
                h.update(chunk)
                if remaining is not None:
                    remaining -= len(chunk)
    return h.hexdigest()


def uses_custom_ops(model: Any) -> bool:
    """Whether an ONNX model (a path or a ``ModelProto``) has a node that a
    registered custom op answers (``qidao.frontend.custom``): its body is not in
    the model's bytes."""
    from qidao.frontend.custom import registered_names

    names = registered_names()
    if not names:
        return False
    import onnx

    if isinstance(model, str | os.PathLike):
        try:
            model = onnx.load(model, load_external_data=False)
        except Exception:  # the import says what is wrong with the file
            return False
    if not isinstance(model, onnx.ModelProto):
        return False
    graphs = [model.graph]
    nodes: list[Any] = [n for f in model.functions for n in f.node]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            nodes.append(node)
            for attr in node.attribute:
                graphs.extend([attr.g] if attr.HasField("g") else list(attr.graphs))
    return any(f"{n.domain}::{n.op_type}" in names for n in nodes)


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
        nesting = []  # per region, each block's argument types and op count
        for region in op.regions:
            blocks = []
            for block in region.blocks:
                for arg in block.args:
                    values[arg] = len(values)
                types = ",".join(str(a.type) for a in block.args)
                blocks.append(f"({types}){len(list(block.ops))}")
            nesting.append(",".join(blocks))
        operands = ",".join(str(values.get(v, -1)) for v in op.operands)
        attrs = ";".join(
            f"{k}={attribute(v)}"
            for k, v in sorted({**op.properties, **op.attributes}.items())
        )
        types = ",".join(str(r.type) for r in op.results)
        h.update(
            f"{op.name}({operands}){{{attrs}}}[{'|'.join(nesting)}]:{types}\n".encode()
        )
        for result in op.results:
            values[result] = len(values)
    return h.hexdigest()


def cache_key(parts: Mapping[str, Any]) -> str:
    """The SHA-256 of ``parts`` (JSON-able) with the compiler's digest and format."""
    payload = {"format": FORMAT, "compiler": compiler_digest(), **parts}
    text = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()
