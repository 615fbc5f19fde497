"""How large a tensor a model may ask for: every tensor a frontend makes (a graph
input, an op's result, a constant folded at import) is checked against
``max_tensor_bytes()`` before anything is allocated, so a model that asks for 2^40
elements (``ConstantOfShape``, ``OneHot`` with a huge depth, ``Expand``, ``Range``)
is refused naming the node instead of failing in NumPy or in the native code.

The limit is ``$QIDAO_MAX_TENSOR_BYTES`` (bytes) when set, else a quarter of the
machine's physical memory: one tensor larger than that cannot run beside the rest of
a model anyway.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from qidao.errors import ResourceError

ENV = "QIDAO_MAX_TENSOR_BYTES"
RAM_FRACTION = 4
"""The default limit is the physical memory divided by this."""
FALLBACK_BYTES = 4 << 30
"""The default when the physical memory cannot be read."""


def max_tensor_bytes() -> int:
    """The largest tensor a model may have, in bytes (module docstring)."""
    given = os.environ.get(ENV)
    if given:
        try:
            value = int(given)
        except ValueError:
            raise ValueError(
                f"${ENV} must be a number of bytes, got {given!r}"
            ) from None
        if value < 1:
            raise ValueError(f"${ENV} must be positive, got {value}")
        return value
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return FALLBACK_BYTES
    return max(ram // RAM_FRACTION, 1)


def check_tensor(what: str, shape: Sequence[int], itemsize: int) -> None:
    """Raise ``ResourceError`` naming ``what`` when a tensor of ``shape`` (elements
    of ``itemsize`` bytes) is larger than ``max_tensor_bytes()``."""
    elements = math.prod(int(d) for d in shape)
    size = elements * itemsize
    limit = max_tensor_bytes()
    if size > limit:
        raise ResourceError(
            f"{what}: a tensor of shape {list(shape)} ({elements} elements, "
            f"{_human(size)}) is larger than qidao's limit of {_human(limit)} "
            f"(${ENV}; default a quarter of the physical memory)"
        )


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover
