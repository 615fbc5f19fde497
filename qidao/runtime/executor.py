"""Call a JIT-compiled entry function on NumPy arrays, checking every argument first.

Entry ABI (bare pointers, see ``qidao.passes.convert_to_llvm``):
``void entry(ptr in0, ..., ptr inN, ptr out0, ..., ptr outM)``, each pointer the first
element of a C-contiguous buffer of exactly the spec's shape and dtype.

``NativeFunction.__call__(*inputs)`` takes exactly one ``numpy.ndarray`` per input
spec (no implicit conversion: Python numbers, lists and 0-d scalars must be wrapped
with ``np.asarray(..., dtype=...)`` by the caller, so nothing is silently copied or
retyped) and checks count, type, dtype and shape, raising ``ArgumentError`` before
any native call. Non-contiguous inputs (``a.T``, ``a[::2]``) are copied with
``np.ascontiguousarray``. Outputs are fresh ``np.empty`` arrays (NumPy's default
alignment; the generated code uses unaligned vector loads, so 64-byte alignment is
not required), returned as a list.

``NativeFunction.raw(*arrays)`` passes inputs and preallocated outputs straight to the
native function without any check: for benchmarking only.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qidao.runtime.cpu import JitModule
from qidao.runtime.errors import ArgumentError

_c_char = ctypes.c_char
_addressof = ctypes.addressof


@dataclass(frozen=True)
class TensorSpec:
    """A function argument: its name, static shape and NumPy dtype name."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype).name)

    def describe(self) -> str:
        return f"ndarray of shape {self.shape} and dtype {self.dtype}"


def _data_address(array: np.ndarray[Any, Any]) -> int:
    """The address of ``array``'s first byte (fast path: the buffer protocol)."""
    try:
        return _addressof(_c_char.from_buffer(array))  # type: ignore[arg-type]
    except (TypeError, ValueError):  # read-only or empty buffer
        return int(array.ctypes.data)


class NativeFunction:
    """A native entry function with checked NumPy calling."""

    def __init__(
        self,
        jit: JitModule,
        entry: str,
        inputs: Sequence[TensorSpec],
        outputs: Sequence[TensorSpec],
    ) -> None:
        self.jit = jit  # keeps the machine code alive
        self.entry = entry
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        n_args = len(self.inputs) + len(self.outputs)
        prototype = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n_args))
        self._cfunc = prototype(jit.function_address(entry))
        self._in_checks = [
            (i, spec, np.dtype(spec.dtype), spec.shape)
            for i, spec in enumerate(self.inputs)
        ]
        self._out_allocs = [(spec.shape, np.dtype(spec.dtype)) for spec in self.outputs]
        names = ", ".join(repr(s.name) for s in self.inputs)
        self._count_message = (
            f"{entry}() takes {len(self.inputs)} input(s) ({names})"
            if self.inputs
            else f"{entry}() takes no inputs"
        )

    def _bad(self, i: int, spec: TensorSpec, what: str) -> ArgumentError:
        return ArgumentError(
            f"{self.entry}(): input '{spec.name}' (#{i}): expected "
            f"{spec.describe()}, got {what}"
        )

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        if len(arrays) != len(self._in_checks):
            raise ArgumentError(f"{self._count_message}, got {len(arrays)}")
        addresses: list[int] = []
        copies: list[np.ndarray[Any, Any]] = []  # alive until the native call returns
        for (i, spec, dtype, shape), array in zip(self._in_checks, arrays, strict=True):
            if not isinstance(array, np.ndarray):
                raise self._bad(i, spec, f"an object of type {type(array).__name__}")
            if array.dtype != dtype:
                raise self._bad(i, spec, f"dtype {array.dtype.name}")
            if array.shape != shape:
                raise self._bad(i, spec, f"shape {array.shape}")
            flags = array.flags
            if not flags.c_contiguous:
                array = np.ascontiguousarray(array)
                copies.append(array)
            elif not flags.aligned:
                array = array.copy()
                copies.append(array)
            addresses.append(_data_address(array))
        kept = [np.empty(shape, dtype) for shape, dtype in self._out_allocs]
        for out in kept:
            addresses.append(_data_address(out))
        self._cfunc(*addresses)
        del copies
        return kept

    def raw(self, *arrays: np.ndarray[Any, Any]) -> None:
        """Unchecked call on C-contiguous inputs then preallocated outputs."""
        self._cfunc(*[_data_address(a) for a in arrays])

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}: {s.shape} {s.dtype}" for s in self.inputs)
        outs = ", ".join(f"{s.name}: {s.shape} {s.dtype}" for s in self.outputs)
        return f"NativeFunction({self.entry}({ins}) -> ({outs}))"
