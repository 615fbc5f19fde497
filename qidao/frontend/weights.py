"""Weights from SafeTensors files: NumPy arrays for the builder, bound into ONNX models.

```python
from qidao.frontend.weights import load_safetensors

w = load_safetensors("mlp.safetensors")        # {"fc.weight": ndarray, ...}
g = Graph("main")
x = g.input("x", (4, 8))
y = g.relu(x @ g.constant(w["fc.weight"], name="fc.weight"))

compiled = qidao.compile("mlp.onnx", weights="mlp.safetensors")
```

``load_safetensors`` reads a ``.safetensors`` file with the ``safetensors`` package:
the header is read first and every tensor's dtype checked (only the dtypes tg has:
``SAFETENSORS_DTYPES``), then the data. A missing, truncated or corrupt file is a
``WeightsError`` naming the file, never a crash.

``bind_onnx_weights`` (what ``qidao.compile(..., weights=...)`` calls) returns a copy of
an ONNX model whose initializers, or graph inputs, named like the file's tensors hold
the file's data, so they become ``tg.constant`` ops. Each tensor must match what the
model declares (shape and dtype); a name the model does not have is an error, so a
misspelt or stale file is never silently ignored. Tensors the file does not name keep
the model's own data.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
from onnx import helper, numpy_helper

from qidao.frontend.errors import WeightsError

Array = npt.NDArray[Any]
WeightsSource = str | os.PathLike[str] | Mapping[str, Array]
"""What ``weights=`` takes: a ``.safetensors`` path, or tensors already loaded."""

SAFETENSORS_DTYPES: dict[str, str] = {
    "F32": "float32",
    "F64": "float64",
    "I32": "int32",
    "I64": "int64",
    "BOOL": "bool",
    "F16": "float16",
    "I8": "int8",
    "I16": "int16",
    "U8": "uint8",
    "U16": "uint16",
    "U32": "uint32",
    "U64": "uint64",
}
"""The SafeTensors dtypes qidao loads (those tg has), with their NumPy names."""


def load_safetensors(path: str | os.PathLike[str]) -> dict[str, Array]:
    """Every tensor of the SafeTensors file at ``path``, by name, as NumPy arrays.

    Raises ``WeightsError`` (naming the file) when the file is missing, truncated or
    corrupt, or holds a tensor of a dtype qidao does not support (naming the tensor).
    """
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError:
        raise WeightsError(
            "reading SafeTensors files needs the safetensors package: "
            "pip install 'qidao[weights]' (or safetensors==0.8.0)"
        ) from None

    name = os.fspath(path)
    if not os.path.isfile(name):
        raise WeightsError(f"no SafeTensors file at '{name}'")
    try:
        with safe_open(name, framework="np") as f:
            dtypes = {key: str(f.get_slice(key).get_dtype()) for key in f.keys()}  # noqa: SIM118
            _check_dtypes(name, dtypes)
            tensors = {key: f.get_tensor(key) for key in dtypes}
    except (SafetensorError, OSError, ValueError, TypeError) as e:
        raise WeightsError(
            f"cannot read '{name}' as a SafeTensors file (the file is truncated or "
            f"corrupt): {type(e).__name__}: {e}"
        ) from None
    return {key: np.ascontiguousarray(a) for key, a in sorted(tensors.items())}


def _check_dtypes(path: str, dtypes: Mapping[str, str]) -> None:
    refused = {
        key: d for key, d in sorted(dtypes.items()) if d not in SAFETENSORS_DTYPES
    }
    if not refused:
        return
    listed = ", ".join(f"'{key}' ({d})" for key, d in list(refused.items())[:8])
    more = f" and {len(refused) - 8} more" if len(refused) > 8 else ""
    supported = ", ".join(f"{k} ({v})" for k, v in SAFETENSORS_DTYPES.items())
    raise WeightsError(
        f"'{path}' holds tensor(s) of a dtype qidao does not support: {listed}{more}; "
        f"the supported dtypes are {supported}: convert the weights (e.g. to "
        "float32) before saving them"
    )


def weights_dict(weights: WeightsSource) -> tuple[dict[str, Array], str]:
    """The tensors of ``weights`` (a SafeTensors path or a mapping of arrays) and a
    description of where they come from, for messages."""
    if isinstance(weights, str | os.PathLike):
        path = os.fspath(weights)
        return load_safetensors(path), f"weights file '{path}'"
    if not isinstance(weights, Mapping):
        raise WeightsError(
            "weights must be a path to a .safetensors file or a dict of NumPy "
            f"arrays, got {type(weights).__name__}"
        )
    tensors: dict[str, Array] = {}
    for key, value in weights.items():
        array = np.asarray(value)
        if array.dtype.name not in SAFETENSORS_DTYPES.values():
            raise WeightsError(
                f"weights tensor '{key}' has dtype {array.dtype}; the supported "
                f"dtypes are {', '.join(SAFETENSORS_DTYPES.values())}"
            )
        tensors[str(key)] = np.ascontiguousarray(array)
    return tensors, "weights"


def bind_onnx_weights(proto: Any, weights: WeightsSource) -> Any:
    """A copy of the ONNX ``proto`` whose initializers and graph inputs named in
    ``weights`` hold those tensors (a graph input so bound becomes a constant).

    Raises ``WeightsError`` for a name the model has neither as initializer nor as
    graph input, and for a tensor whose shape or dtype differs from the model's,
    naming the tensor with what the model expects and what the weights give.
    """
    tensors, source = weights_dict(weights)
    graph = proto.graph
    initializers = {str(t.name): t for t in graph.initializer}
    inputs = {str(i.name): i for i in graph.input if i.name not in initializers}
    unknown = sorted(set(tensors) - set(initializers) - set(inputs))
    if unknown:
        raise WeightsError(_unknown_names(source, unknown, [*initializers, *inputs]))
    for key, array in sorted(tensors.items()):
        if key in initializers:
            t = initializers[key]
            expected_shape: list[int | str] = [int(d) for d in t.dims]
            elem_type = int(t.data_type)
            what = "initializer"
        else:
            tensor_type = inputs[key].type.tensor_type
            expected_shape = _declared_shape(inputs[key])
            elem_type = int(tensor_type.elem_type)
            what = "graph input"
        expected_dtype = _np_dtype(elem_type, array.dtype)
        if array.dtype != expected_dtype or not _shape_matches(
            expected_shape, array.shape
        ):
            raise WeightsError(
                f"{source}: tensor '{key}' does not match the model's {what} "
                f"'{key}': expected shape {_shape_text(expected_shape)} and dtype "
                f"{expected_dtype}, got shape {list(array.shape)} and dtype "
                f"{array.dtype}"
            )
    bound = onnx.ModelProto()
    bound.CopyFrom(proto)
    by_name = {str(t.name): t for t in bound.graph.initializer}
    for key, array in sorted(tensors.items()):
        new = numpy_helper.from_array(array, key)
        if key in by_name:
            by_name[key].CopyFrom(new)
            continue
        bound.graph.initializer.append(new)
        for graph_input in bound.graph.input:
            if graph_input.name == key:  # the constant's static shape, for inference
                shape = graph_input.type.tensor_type.shape
                shape.Clear()
                for d in array.shape:
                    shape.dim.add().dim_value = int(d)
    return bound


def _np_dtype(elem_type: int, default: np.dtype[Any]) -> np.dtype[Any]:
    """The NumPy dtype of an ONNX element type; ``default`` when it has none."""
    try:
        dtype: np.dtype[Any] = np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        return default
    return dtype


def _unknown_names(source: str, unknown: list[str], known: list[str]) -> str:
    lowered = {k.lower(): k for k in known}
    lines = []
    for key in unknown[:8]:
        close = difflib.get_close_matches(key.lower(), list(lowered), n=1)
        hint = f" (did you mean '{lowered[close[0]]}'?)" if close else ""
        lines.append(f"  '{key}'{hint}")
    if len(unknown) > 8:
        lines.append(f"  ... and {len(unknown) - 8} more")
    return (
        f"{source} names {len(unknown)} tensor(s) the model has neither as "
        "initializer nor as graph input:\n" + "\n".join(lines)
    )


def _declared_shape(value_info: Any) -> list[int | str]:
    """The declared dims of a graph input: an int, or a name for a dynamic one."""
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return ["..."]
    return [
        int(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
        for d in t.shape.dim
    ]


def _shape_matches(expected: list[int | str], got: tuple[int, ...]) -> bool:
    if expected == ["..."]:  # unknown rank
        return True
    if len(expected) != len(got):
        return False
    return all(
        not isinstance(e, int) or e == g for e, g in zip(expected, got, strict=True)
    )


def _shape_text(shape: list[int | str]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"
