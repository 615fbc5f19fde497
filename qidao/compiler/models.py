"""Turn whatever the user hands ``qidao.compile`` into a tg module."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qidao.frontend.errors import MlirError


def load_model(model: Any, example_inputs: Any = None) -> ModuleOp:
    """A tg module from an ``onnx.ModelProto``, a ``.onnx``/``.mlir`` path, a builder
    ``Graph``, a ``ModuleOp`` (which is cloned, never changed) or a PyTorch
    ``nn.Module``/function with its ``example_inputs`` (every operator supported).

    A ``.mlir`` file is data, never code: ``qidao.frontend.mlir`` reads it with a
    parser that knows only what the frontends build (tg ops in ``func.func @main``)
    and checks every shaped type against the tensor limit as it reads it."""
    if isinstance(model, ModuleOp):
        return model.clone()
    from qidao.frontend.torch.detect import is_torch_model

    if is_torch_model(model):
        from qidao.frontend.torch.importer import capture, to_tg

        return to_tg(capture(model, example_inputs))
    from qidao.frontend.builder import Graph

    if isinstance(model, Graph):
        return model.module().clone()  # the graph keeps its module; compile a copy
    if isinstance(model, str | os.PathLike):
        path = Path(model)
        if not path.exists():
            raise FileNotFoundError(f"no model file at '{path}'")
        if path.suffix == ".mlir":
            from qidao.frontend.mlir import import_mlir

            return import_mlir(read_mlir(path), str(path))
        from qidao.frontend.onnx import import_onnx

        return import_onnx(path)
    type_name = type(model).__module__ + "." + type(model).__qualname__
    if type_name.startswith("onnx."):
        from qidao.frontend.onnx import import_onnx

        return import_onnx(model)
    raise TypeError(
        "qidao.compile takes an onnx.ModelProto, a path to a .onnx or .mlir file, a "
        "qidao.frontend.builder.Graph, an xDSL ModuleOp or a PyTorch nn.Module; got "
        f"{type_name}"
    )


def read_mlir(path: Path) -> str:
    """The text of the ``.mlir`` file ``path``; ``MlirError`` unless it is UTF-8."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise MlirError(
            f"{path}: not UTF-8 text (byte {err.start} is 0x{err.object[err.start]:02x})"
            "; a .mlir model is MLIR's textual form"
        ) from None


def with_weights(model: Any, weights: Any) -> Any:
    """The ONNX ``model`` (a ``ModelProto`` or a ``.onnx`` path) as a ``ModelProto``
    whose initializers and graph inputs named in ``weights`` (a ``.safetensors`` path
    or a dict of arrays) hold those tensors; see ``qidao.frontend.weights``."""
    type_name = type(model).__module__ + "." + type(model).__qualname__
    is_path = isinstance(model, str | os.PathLike)
    if (is_path and Path(model).suffix == ".mlir") or not (
        is_path or type_name.startswith("onnx.")
    ):
        raise TypeError(
            "weights= binds tensors to the initializers and inputs of an ONNX model "
            f"by name, but the model is {type_name if not is_path else repr(model)}; "
            "for a builder Graph, make constants from "
            "qidao.frontend.weights.load_safetensors(path) with graph.constant(...)"
        )
    from qidao.frontend.onnx.load import load_model as load_onnx
    from qidao.frontend.weights import bind_onnx_weights

    if is_path and not Path(model).exists():
        raise FileNotFoundError(f"no model file at '{model}'")
    return bind_onnx_weights(load_onnx(model), weights)


def is_onnx(model: Any) -> bool:
    """An ``onnx.ModelProto`` or a path to a ``.onnx`` file."""
    type_name = type(model).__module__ + "." + type(model).__qualname__
    if isinstance(model, str | os.PathLike):
        return Path(model).suffix == ".onnx"
    return type_name.startswith("onnx.")


def lift_for_grad(model: Any, names: Any) -> tuple[Any, dict[str, Any]]:
    """``model`` with the ONNX initializers named in ``names`` lifted into graph
    inputs (``qidao.frontend.onnx.trainable``), and their values; any other model
    is returned as it is (its gradients are of its inputs)."""
    if not is_onnx(model):
        return model, {}
    is_onnx_path = isinstance(model, str | os.PathLike)
    from qidao.frontend.onnx.load import load_model as load_onnx
    from qidao.frontend.onnx.trainable import lift_initializers

    if is_onnx_path and not Path(model).exists():
        raise FileNotFoundError(f"no model file at '{model}'")
    return lift_initializers(load_onnx(model), list(names))
