"""Errors raised while a frontend turns a model into a tg graph.

Every frontend error is a ``FrontendError``; catch that to handle them all.

- ``GraphError``: an op built with the Python builder is invalid (bad shapes, axes,
  values from another graph, ...). The message names the op and the operand shapes.
- ``OnnxImportError``: an ONNX model cannot be imported (unreadable file, dynamic
  input shape, unsupported dtype or attribute, ...).
- ``UnsupportedOpsError``: the ONNX model uses op types qidao does not implement; one
  error lists all of them with the nodes that use them, before any work is done.
- ``ConstantRequiredError``: a node needs, at compile time, the value of a tensor
  that is computed at run time (a ``Reshape`` shape, reduce ``axes``, ``Pad``
  pads); ``qidao.frontend.onnx.specialize`` binds the graph inputs it comes from.
- ``DataDependentShapeError``: a node's output size is data (``NonZero`` of a
  runtime tensor); ``qidao.frontend.onnx.staged`` compiles the model in stages
  around it.
- ``MlirError``: a ``.mlir`` file or text that cannot be read (not UTF-8), parsed
  (a syntax error, nesting too deep) or verified; the message names the file.
- ``WeightsError``: a weights file cannot be read (missing, truncated, a dtype qidao
  does not support), or its tensors do not fit the model (a name the model lacks, a
  shape or dtype that differs).
"""

from __future__ import annotations

from qidao.errors import ModelError, UnsupportedError


class FrontendError(ModelError):
    """Base of every error a frontend raises."""


class GraphError(FrontendError):
    """An invalid op or graph built with ``qidao.frontend.builder.Graph``."""


class OnnxImportError(FrontendError):
    """An ONNX model that qidao cannot import."""


class UnsupportedOpsError(OnnxImportError, UnsupportedError):
    """An ONNX model using op types that qidao does not implement.

    ``ops`` maps each unsupported op type to the nodes that use it (node names, or
    ``#index`` for unnamed nodes).
    """

    def __init__(self, ops: dict[str, list[str]]) -> None:
        self.ops = ops
        lines = [
            f"  {op_type}: {', '.join(nodes)}" for op_type, nodes in sorted(ops.items())
        ]
        super().__init__(
            f"the model uses {len(ops)} unsupported op type(s):\n" + "\n".join(lines)
        )


class ConstantRequiredError(OnnxImportError):
    """A node needs the value of runtime tensors at compile time; ``names`` are
    those ONNX tensors (the node's inputs that must be constants). ``shape`` says
    the value fixes a shape (``Resize`` scales, a ``OneHot`` depth), so a small
    float graph input it comes from may be bound too (``specialize.py``)."""

    def __init__(
        self,
        message: str,
        names: list[str],
        shape: bool = False,
        stage_at: str | None = None,
    ) -> None:
        super().__init__(message)
        self.names = tuple(names)
        self.shape = shape
        self.stage_at = stage_at
        """The first output of a main-graph node the staging may cut at when no
        graph input can be bound to give the value (a ``Loop`` whose trip count
        is data runs as a loop on the host: ``qidao.frontend.onnx.staged``)."""


class DataDependentShapeError(OnnxImportError):
    """A node whose output's size is data (``NonZero`` of a runtime tensor), which
    one static-shape graph cannot hold. ``output`` names the node's first output
    and ``op_type`` its op; the staging (``qidao.frontend.onnx.staged``) splits the
    model there when the node is in its main graph."""

    def __init__(self, message: str, output: str, op_type: str) -> None:
        super().__init__(message)
        self.output = output
        self.op_type = op_type


class MlirError(FrontendError):
    """A ``.mlir`` model that cannot be read, parsed or verified."""


class WeightsError(FrontendError):
    """Weights (a SafeTensors file) that qidao cannot read or cannot bind to a model."""
