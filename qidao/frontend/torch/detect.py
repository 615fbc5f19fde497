"""Is this a PyTorch model? Answered without importing torch (or ``importer.py``, which
does), so the ONNX and builder paths of ``qidao.compile`` never pay for it."""

from __future__ import annotations

import inspect
import sys


def is_torch_model(model: object) -> bool:
    """True for an ``nn.Module`` or a plain Python function (what
    ``qidao.frontend.torch.importer.capture`` takes)."""
    if inspect.isfunction(model):
        return True
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)
