"""One ONNX node as converters see it: its proto, its place and opset, its attributes
decoded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx.load import node_label


@dataclass
class Node:
    """One ONNX node with its attributes decoded, for converters."""

    proto: Any
    index: int
    opset: int
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def op_type(self) -> str:
        return str(self.proto.op_type)

    @property
    def label(self) -> str:
        name = node_label(self.proto, self.index)
        return f"{self.op_type} node '{name}'"

    @property
    def inputs(self) -> list[str]:
        return [str(i) for i in self.proto.input]

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def optional_axis(self, rank: int) -> int | None:
        """The ``axis`` attribute made non-negative for an input of ``rank``, or
        None when the node has none (``Compress``, ``Unique``: flatten)."""
        axis = self.attrs.get("axis")
        if axis is None:
            return None
        a = int(axis)
        if not -rank <= a < rank:
            raise self.error(f"axis {a} is out of range for an input of rank {rank}")
        return a % rank

    def error(self, message: str) -> OnnxImportError:
        return OnnxImportError(f"{self.label}: {message}")
