"""Turn whatever the user hands ``qidao.compile`` into a tg module."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from qidao.compiler.context import make_context


def load_model(model: Any) -> ModuleOp:
    """A tg module from an ``onnx.ModelProto``, a ``.onnx``/``.mlir`` path, a builder
    ``Graph`` or a ``ModuleOp`` (which is cloned, never changed)."""
    if isinstance(model, ModuleOp):
        return model.clone()
    from qidao.frontend.builder import Graph

    if isinstance(model, Graph):
        return model.module().clone()  # the graph keeps its module; compile a copy
    if isinstance(model, str | os.PathLike):
        path = Path(model)
        if not path.exists():
            raise FileNotFoundError(f"no model file at '{path}'")
        if path.suffix == ".mlir":
            return parse_mlir(path.read_text(), str(path))
        from qidao.frontend.onnx import import_onnx

        return import_onnx(path)
    type_name = type(model).__module__ + "." + type(model).__qualname__
    if type_name.startswith("onnx."):
        from qidao.frontend.onnx import import_onnx

        return import_onnx(model)
    raise TypeError(
        "qidao.compile takes an onnx.ModelProto, a path to a .onnx or .mlir file, a "
        f"qidao.frontend.builder.Graph or an xDSL ModuleOp; got {type_name}"
    )


def parse_mlir(text: str, name: str = "<string>") -> ModuleOp:
    """Parse and verify a module written in any dialect of the tower."""
    module = Parser(make_context(), text, name).parse_module()
    module.verify()
    return module
