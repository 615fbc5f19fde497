"""The :class:`Example` record: one built-in model with its references."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qidao.frontend.builder import Graph

Arrays = list[np.ndarray[Any, Any]]


@dataclass(frozen=True)
class Example:
    name: str
    summary: str
    build: Callable[[], Graph | Any]
    """The model: a builder ``Graph``, or anything ``qidao.compile`` takes (the real
    models build an ``onnx.ModelProto``)."""
    inputs: Callable[[np.random.Generator], Arrays]
    reference: Callable[..., Arrays]
    torch_fn: Callable[..., Any]
    bytes_per_call: int = 0
    """Bytes a fused kernel reads and writes per call; 0 when GB/s means nothing."""
    numpy_fn: Callable[..., None] | None = None
    """``numpy_fn(*inputs, *outputs)`` computes into preallocated outputs."""
    flops_per_call: int = 0
    """Floating-point operations per call (a multiply-add is two); 0 when GFLOP/s
    means nothing."""
    tolerance: tuple[float, float] = (1e-4, 1e-5)
    """(rtol, atol) of the check against the reference: a sum of n products carries
    O(sqrt(n) eps) of rounding, so long reductions get a looser atol."""
    onnx_path: Callable[[], Path] | None = None
    """The model as an ONNX file, for the ``onnxruntime`` bench backend."""
