"""``qidao`` as an ONNX backend (``onnx.backend.base.Backend``), for ONNX's harness.

```python
import qidao.onnx_backend as backend

rep = backend.prepare(model, device="CPU")    # compiles (or specializes at first run)
outputs = rep.run([x])                        # a list, a dict by name, or one array
outputs = backend.run_model(model, [x])       # prepare + run
backend.supports_device("CPU")                # True; "CUDA" is not offered here
```

``prepare`` checks the model with ``onnx.checker`` and compiles it with
``qidao.compile`` on the CPU; an ONNX model whose integer inputs (shapes, axes, ...)
or dynamic dimensions are known only at run time compiles at its first ``run``
(``qidao.frontend.onnx.specialize``). What qidao cannot import raises its
``OnnxImportError`` from ``prepare``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

import qidao
from qidao.frontend.onnx.specialize import runtime_inputs

DEVICES = ("CPU",)
"""The devices this backend runs on."""


class QidaoRep(BackendRep):
    """A compiled model; ``run`` takes its inputs and returns its outputs."""

    def __init__(self, compiled: Any, input_names: list[str]) -> None:
        self.compiled = compiled
        self.input_names = input_names

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """The outputs, in graph-output order, for ``inputs``: a sequence in
        graph-input order, a mapping by input name, or one array."""
        if kwargs:
            raise TypeError(f"unknown run option(s): {', '.join(sorted(kwargs))}")
        if isinstance(inputs, np.ndarray):
            arrays = [inputs]
        elif isinstance(inputs, Mapping):
            missing = [n for n in self.input_names if n not in inputs]
            if missing:
                raise ValueError(
                    f"inputs lack {missing}; the model's inputs are {self.input_names}"
                )
            arrays = [inputs[n] for n in self.input_names]
        else:
            arrays = list(inputs)
        return tuple(self.compiled(*arrays))


class QidaoBackend(Backend):
    """The ONNX backend API over ``qidao.compile`` (CPU)."""

    @classmethod
    def is_compatible(
        cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any
    ) -> bool:
        return cls.supports_device(device)

    @classmethod
    def prepare(
        cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any
    ) -> QidaoRep:
        """Check and compile ``model``; ``kwargs`` go to ``qidao.compile``."""
        if not cls.supports_device(device):
            raise ValueError(
                f"qidao's ONNX backend runs on {', '.join(DEVICES)}, not '{device}'"
            )
        super().prepare(model, device)  # onnx.checker.check_model
        compiled = qidao.compile(model, **kwargs)
        return QidaoRep(compiled, [str(i.name) for i in runtime_inputs(model)])

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """``CPU`` (also ``CPU:0``)."""
        return device.split(":")[0].upper() in DEVICES


prepare = QidaoBackend.prepare
run_model = QidaoBackend.run_model
supports_device = QidaoBackend.supports_device
is_compatible = QidaoBackend.is_compatible
