"""ONNX importer: an ``onnx.ModelProto`` (or a ``.onnx`` file) to a tg module.

```python
module = import_onnx("model.onnx", input_shapes={"x": (1, 3, 224, 224)})
```

The steps, each failing with an ``OnnxImportError`` that says what to change:

1. load the model (a truncated or garbage file is reported, not a protobuf traceback);
2. scan every node: all unsupported op types are reported at once, with the nodes
   that use them (``UnsupportedOpsError``), before any other work;
3. fix the input shapes (``input_shapes`` overrides dynamic dimensions) and run
   ONNX shape inference in strict mode (type errors in the model surface here);
4. walk the nodes in order, one converter per op type, building tg ops through the
   ``Graph`` builder. Initializers and ``Constant`` outputs stay NumPy arrays until a
   tensor operand needs them, so a ``Reshape`` shape or reduce ``axes`` never becomes
   a ``tg.constant``. Each tg result shape is checked against ONNX's inferred shape.

Graph inputs and outputs must be float32 with static shapes. A converter registers
itself with ``@converter("OpType")``; ``SUPPORTED_OPS`` lists them all.

The package:

- ``load.py``: steps 1-3 and the dtype / static-shape checks on graph inputs and outputs;
- ``importer.py``: ``import_onnx``, the ``@converter`` registry, ``Node`` (one ONNX
  node with decoded attributes) and ``Importer`` (the walk of step 4, and operand
  access for converters: ``im.input``, ``im.optional_input``, ``im.value``,
  ``im.const``);
- one module per family of converters: ``elementwise``, ``linalg``, ``shape``,
  ``reduce``, ``nn``.

To add an operator, write a function in the fitting converter module (or a new one,
imported below) and register it with one decorator::

    @converter("OpType")
    def _op_type(im: Importer, node: Node) -> list[Value | Array]:
        x = im.input(node, 0)
        ...
        return [y]

It returns one entry per ONNX output it supports (a tg ``Value``, or a NumPy array for
a compile-time constant); raise ``node.error("...")`` for what it cannot convert.
"""

# Importing the converter modules registers their converters.
from qidao.frontend.onnx import elementwise, linalg, nn, reduce, shape  # noqa: F401
from qidao.frontend.onnx.importer import CONVERTERS, converter, import_onnx

SUPPORTED_OPS: tuple[str, ...] = tuple(sorted(CONVERTERS))
"""The ONNX op types (default domain) the importer converts."""

__all__ = ["SUPPORTED_OPS", "converter", "import_onnx"]
