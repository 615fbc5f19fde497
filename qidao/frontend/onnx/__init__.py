"""ONNX importer: an ``onnx.ModelProto`` (or a ``.onnx`` file) to a tg module.

```python
module = import_onnx("model.onnx", input_shapes={"x": (1, 3, 224, 224)})
```

The steps, each failing with an ``OnnxImportError`` that says what to change:

1. load the model (a truncated or garbage file is reported, not a protobuf traceback);
2. scan every node: all unsupported op types are reported at once, with the nodes
   that use them (``UnsupportedOpsError``), before any other work. An op type is
   supported if it has a converter or a folder (below); constant-only ops pass the
   scan, since which inputs fold is known only during the walk. An op with neither
   that ONNX defines as a function of other ops (``Attention``,
   ``RMSNormalization``, the losses, ...) is supported when its function body is:
   the walk converts the body in its place (``functions.py``), and a body op qidao
   lacks is named with it (``Op (expanded: Inner unsupported)``);
3. fix the input shapes (``input_shapes`` overrides dynamic dimensions) and run
   ONNX shape inference in strict mode (type errors in the model surface here);
4. walk the nodes in order, one converter per op type, building tg ops through the
   ``Graph`` builder. Initializers and ``Constant`` outputs stay NumPy arrays until a
   tensor operand needs them, so a ``Reshape`` shape or reduce ``axes`` never becomes
   a ``tg.constant``. A node whose inputs are all such arrays is *folded*: evaluated
   in NumPy by its folder (``@folder("OpType")``, ``fold.py``), with ONNX semantics
   and any dtype, and its outputs stay arrays. That is how shape computations
   (``Shape``, ``Gather``, ``Concat``, ``ConstantOfShape``, int64 arithmetic, ...)
   are done at import and never reach tg, which has static shapes (a shape must be
   known at compile time). Otherwise the node's converter builds tg ops. Each
   result's shape and dtype is checked against ONNX's shape inference. A converter
   that needs a computed value as a constant raises ``ConstantRequiredError``
   naming it (``qidao.frontend.onnx.specialize`` then binds the graph inputs it comes
   from).

Graph inputs and outputs must have static shapes and one of the dtypes tg has
(float32, float64, int32, int64, bool: ``load.DTYPES``). A converter registers
itself with ``@converter("OpType")``; ``SUPPORTED_OPS`` lists every op type with a
converter or a folder. ``CONSTANT_ONLY_OPS`` are those with a folder but no converter:
they are supported only when all their inputs are constants so far, and a runtime
tensor input is an ``OnnxImportError`` that names the node and the op.

The package:

- ``load.py``: steps 1-3 and the dtype / static-shape checks on graph inputs and outputs;
- ``importer.py``: ``import_onnx``, the ``@converter`` and ``@folder`` registries,
  ``Node`` (one ONNX
  node with decoded attributes) and ``Importer`` (the walk of step 4, and operand
  access for converters: ``im.input``, ``im.optional_input``, ``im.value``,
  ``im.const``);
- one module per family of converters: ``elementwise``, ``linalg``, ``shape``,
  ``reduce``, ``nn`` (Conv, ConvTranspose, the pools, BatchNormalization), ``norm``
  (LayerNormalization, InstanceNormalization, GroupNormalization, LRN,
  LogSoftmax), ``resize`` (Resize), ``logic`` (comparisons, logical ops, Where,
  Mod), ``bitwise`` (BitwiseAnd/Or/Xor/Not, BitShift), ``einsum`` (Einsum, as
  transposes, reductions and batched matmuls), ``recurrent`` (RNN, GRU, LSTM,
  unrolled over time), ``signal`` (DFT and STFT as matmuls with constant twiddle
  matrices, MelWeightMatrix at import), ``along_axis`` (Tile, CumSum, CumProd,
  TopK, ReverseSequence), ``scatter`` (ScatterElements, ScatterND, GatherND,
  TensorScatter), ``grid_sample``, ``quantize`` (QuantizeLinear, DequantizeLinear,
  the integer and QLinear ops), ``control_flow`` (If, Loop, Scan: subgraphs
  inlined, loops unrolled), and ``compose`` (ops built from other tg ops:
  LeakyRelu, Clip, Pow, ReduceL2, Squeeze, Pad, ...);
- ``fold.py``: the folders (NumPy evaluation on constant inputs) and the ``Shape`` /
  ``Size`` converters, which read the static shape of any input;
  ``fold_reference.py``: a small all-constant node without a folder, evaluated by
  ONNX's reference; ``subgraphs.py``: the names subgraphs read from outer scopes;
- ``functions.py``: ops ONNX defines as functions, expanded into their bodies (the
  scan of step 2, and the expansion in the walk);
- ``specialize.py``: a model whose integer inputs or dynamic dimensions decide shapes,
  imported and compiled at its first call with those values and shapes bound (the
  compile function is passed in: the frontend does not import the compiler);
- ``trainable.py``: initializers lifted into graph inputs for ``grad=``.

To add an operator, write a function in the fitting converter module (or a new one,
imported below) and register it with one decorator::

    @converter("OpType")
    def _op_type(im: Importer, node: Node) -> list[Value | Array]:
        x = im.input(node, 0)
        ...
        return [y]

It returns one entry per ONNX output it supports (a tg ``Value``, or a NumPy array for
a compile-time constant); raise ``node.error("...")`` for what it cannot convert.

If the op has a NumPy definition, also give it a folder in ``fold.py``, checked
against ``onnx.reference.ReferenceEvaluator`` in ``tests/frontend/onnx/test_fold.py``::

    @folder("OpType")
    def _op_type(node: Node, args: list[Array | None]) -> list[Array]:
        x = _arg(node, args, 0, "X")   # args[k]: input #k, None when omitted
        ...
        return [y]

An op with only a folder is constant-only; giving it a converter later (for runtime
tensors) needs no other change: the folder still runs when all inputs are constant.
"""

# Importing the converter modules registers their converters.
from qidao.frontend.onnx import (  # noqa: F401
    along_axis,
    bitwise,
    compose,
    control_flow,
    einsum,
    elementwise,
    fold,
    grid_sample,
    linalg,
    logic,
    nms,
    nn,
    nonzero,
    norm,
    quantize,
    recurrent,
    reduce,
    resize,
    scatter,
    shape,
    signal,
    unique,
)
from qidao.frontend.onnx.importer import (
    CONVERTERS,
    FOLDERS,
    converter,
    folder,
    import_onnx,
)

SUPPORTED_OPS: tuple[str, ...] = tuple(sorted(CONVERTERS.keys() | FOLDERS.keys()))
"""The ONNX op types (default domain) the importer takes: converted to tg, folded at
import, or both."""

CONSTANT_ONLY_OPS: tuple[str, ...] = tuple(sorted(FOLDERS.keys() - CONVERTERS.keys()))
"""The supported op types that are folded only: every input must be a constant
(initializer, ``Constant`` output or folded result) for now."""

__all__ = ["CONSTANT_ONLY_OPS", "SUPPORTED_OPS", "converter", "folder", "import_onnx"]
