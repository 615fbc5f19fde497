"""Frontends: a model in, a tg module out.

``builder.py`` (a Python graph builder), ``onnx/`` (the ONNX importer: one converter
per operator, import-time folding, function bodies), ``torch/`` (PyTorch through
torch.export and AOTAutograd: capture and conversion, one converter per ATen
operator, torch tensors in and out of compiled parts), ``weights.py``
(SafeTensors). A frontend knows the dialects, never the compiler: what needs the
compiler (``torch.compile``'s backend) sits above it, in ``qidao/dynamo_backend.py``.
"""
