"""What the compile cache's tests share: a small model with a weight, and an entry
forged as someone without the user's key would forge it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

import qidao
from qidao.compiler.cache import CompileCache
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


def compile_dense(**options: Any) -> Any:
    return qidao.compile(dense(), threads=1, verify="stage", **options)


def entry_folder(cache_dir: Path) -> Path:
    (folder,) = CompileCache(cache_dir).entries()
    return folder


def forge(folder: Path, **changes: Any) -> None:
    """Change fields of ``meta.json`` and recompute every checksum in it, as anyone
    who can write the folder can: only the signature (``meta.hmac``) is wrong."""
    meta = json.loads((folder / "meta.json").read_text())
    meta.update(changes)
    code = (folder / "code.o").read_bytes()
    weights = (folder / "weights.bin").read_bytes()
    meta["code_bytes"] = len(code)
    meta["code_sha256"] = hashlib.sha256(code).hexdigest()
    meta["weights_bytes"] = len(weights)
    meta["weights_sha256"] = hashlib.sha256(weights).hexdigest()
    (folder / "meta.json").write_text(json.dumps(meta))
