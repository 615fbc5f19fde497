"""PyTorch frontend: an ``nn.Module`` (or a function of tensors) to a tg module, via
``torch.export`` for inference and AOTAutograd for ``torch.compile`` training.

```python
captured = capture(model, (x,))          # importer.py: torch.export -> ATen FX graph
module = to_tg(captured)                 # every op supported: one tg module
compiled = compile_torch(model, (x,), compile_fn)   # backend.py: torch tensors in/out
```

The package:

- ``importer.py``: ``capture`` (torch.export and the tensors of the parameters,
  buffers and constants), ``node_support`` / ``unsupported_ops`` (why a node cannot
  be converted), ``FxConverter`` (the walk of an FX graph that builds tg ops),
  ``to_tg`` and ``partition`` (the supported nodes grouped into subgraphs), and the
  errors ``TorchImportError`` / ``UnsupportedTorchOpsError``;
- ``ops.py``: the ATen converter table, one function per operator registered with
  ``@converter``, and the dtype rules (``DTYPE_RULES``);
- ``grad_ops.py``: the converters of the ops AOTAutograd's backward graphs bring
  (comparisons, ``where``, ``embedding_dense_backward``, ``convolution_backward``);
- ``loss_ops.py``: ``nll_loss`` forward and backward and ``cross_entropy_loss``,
  converted whole as a one-hot mask;
- ``custom.py``: ``torch.library`` custom ops as qidao custom ops (``tg.custom``);
- ``backend.py``: ``compile_torch`` and ``TorchCompiled``, torch tensors in and out
  of the compiled parts (unsupported nodes run in PyTorch unless ``strict``);
- ``training.py``: AOTAutograd's forward and backward graphs compiled by qidao, for
  ``torch.compile(model, backend="qidao")`` training;
- ``detect.py``: ``is_torch_model``, answered without importing torch.

This ``__init__`` imports nothing, so ``detect.py`` stays free of torch (the ONNX and
builder paths of ``qidao.compile`` never import it) and ``importer.py`` registers
the converters when it is imported. The modules import PyTorch with absolute
imports (``import torch``), which this package's name does not shadow. The frontend
does not import the compiler: ``compile_torch`` takes the function that compiles a
tg module, and ``torch.compile``'s backend is ``qidao/dynamo_backend.py``.
"""
