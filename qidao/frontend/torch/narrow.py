"""bfloat16 and float16 in the PyTorch frontend: each op computed in float32, its
result rounded back once, as PyTorch's CPU kernels do.

PyTorch runs a ``bfloat16`` (or ``float16``) ``linear``, ``gelu``, ``softmax`` or
``layer_norm`` on the CPU by widening its inputs to float32, computing, and
rounding the result to the narrow type once. The importer does the same around
every converter (:func:`widened_args`, :func:`narrowed`): a narrow input is
``tg.cast`` to float32 (exact), the converter builds float32 ops as it always
does, and each float result that PyTorch types as narrow is ``tg.cast`` back
(rounded to nearest even). A ``_to_copy`` to a narrow dtype is that cast alone.
So a bfloat16 model's ``linear`` reaches the graph passes as a float32
``tg.matmul`` of a widened bfloat16 by a constant whose every value is a
bfloat16, which ``bf16-matmul`` computes on ``vdpbf16ps``/AMX where the CPU has
them (float32 FMAs elsewhere: the same products, exact, summed in float32).

NumPy has no bfloat16 of its own: a tensor crosses as ``ml_dtypes.bfloat16``,
the same bytes (:func:`to_numpy`, :func:`from_numpy`).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import torch

NARROW: dict[torch.dtype, str] = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
"""The narrow float dtypes, computed in float32 op by op, and their NumPy names."""


def widened(dtype: torch.dtype) -> torch.dtype:
    """The dtype a converter sees for a tensor of ``dtype``: float32 for a narrow
    float, else ``dtype``."""
    return torch.float32 if dtype in NARROW else dtype


def to_numpy(t: torch.Tensor) -> npt.NDArray[Any]:
    """``t`` (on the CPU, contiguous) as a NumPy array sharing its memory; a
    bfloat16 tensor as ``ml_dtypes.bfloat16``."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def from_numpy(a: npt.NDArray[Any]) -> torch.Tensor:
    """``a`` as a tensor sharing its memory; an ``ml_dtypes.bfloat16`` array as
    ``torch.bfloat16``."""
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)
