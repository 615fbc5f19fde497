"""Call a program compiled once for every size of its symbolic dimensions.

A model with symbolic dimensions (``qidao.dialects.symbolic``) is compiled at each
dimension's capacity; its loops over the dimension run to the call's size, which
the program reads from its last input (``symbolic_dims``). :class:`SymbolicProgram`
is what ``qidao.compile`` returns for it: it takes arrays of any declared size,
checks them, hands the program its inputs laid out at capacity with the sizes,
and returns the outputs cut to the call's sizes.

Checks, before any native code runs (``ArgumentError``, naming input, axis and
dimension): the number of inputs, each one's dtype and rank, each static axis's
size, each symbolic axis's size within the declared range, and every axis of one
dimension the same size across the inputs.

Each input is copied into a buffer of the capacity's shape that the program keeps
(so a loop that computes a whole tile past the call's size reads memory that
exists); the outputs are views of the program's capacity-sized outputs, made
contiguous (a copy only where a symbolic axis is not the outermost). The staging
buffers make one ``SymbolicProgram`` safe for one thread at a time, like the
program's pooled outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qidao.compiler.compiled import CompiledProgram
from qidao.dialects.symbolic import Dim
from qidao.runtime.cpu import keep_large_buffers
from qidao.runtime.errors import ArgumentError
from qidao.runtime.executor import TensorSpec, dtype_mismatch, numpy_dtype


class SymbolicProgram:
    """A program compiled once for every size of its symbolic dimensions; call it
    with NumPy arrays in graph-input order (the sizes are read off them)."""

    def __init__(self, program: CompiledProgram) -> None:
        meta = program.stats["symbolic"]
        self.program = program
        self.dims = {n: Dim(n, lo, hi) for n, (lo, hi, _) in meta["dims"].items()}
        self.input_labels: list[list[str]] = meta["inputs"][:-1]
        self.output_labels: list[list[str]] = meta["outputs"]
        specs = list(program.inputs)  # type: ignore[attr-defined]
        self._specs: list[TensorSpec] = specs[:-1]
        self._staging: list[np.ndarray[Any, Any] | None] = [None] * len(self._specs)
        keep_large_buffers()  # capacity-sized buffers: kept, not mmapped per call

    @property
    def stats(self) -> dict[str, Any]:
        return self.program.stats

    def ir(self, stage: str = "tg") -> str:
        return self.program.ir(stage)

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """The inputs at capacity (a symbolic axis shows its capacity)."""
        return tuple(self._specs)

    def shapes(self) -> list[tuple[int | str, ...]]:
        """Each input's shape with its symbolic axes named."""
        return [
            tuple(lab or size for lab, size in zip(labels, spec.shape, strict=True))
            for labels, spec in zip(self.input_labels, self._specs, strict=True)
        ]

    def sizes(self, *arrays: Any) -> dict[str, int]:
        """The size of each dimension in a call on ``arrays``, checked."""
        if len(arrays) != len(self._specs):
            raise ArgumentError(
                f"expected {len(self._specs)} input(s) "
                f"({', '.join(s.name for s in self._specs)}), got {len(arrays)}"
            )
        sizes: dict[str, tuple[int, str]] = {}
        for array, spec, labels in zip(
            arrays, self._specs, self.input_labels, strict=True
        ):
            if not isinstance(array, np.ndarray):
                raise ArgumentError(
                    f"input '{spec.name}' must be a numpy.ndarray, got "
                    f"{type(array).__name__}"
                )
            if array.dtype != numpy_dtype(spec.dtype):
                raise ArgumentError(
                    f"input '{spec.name}': {dtype_mismatch(array.dtype, spec.dtype)}"
                )
            if array.ndim != len(spec.shape):
                raise ArgumentError(
                    f"input '{spec.name}' has rank {array.ndim}, expected "
                    f"{len(spec.shape)} (shape {self._named(labels, spec)})"
                )
            for axis, (label, size) in enumerate(zip(labels, spec.shape, strict=True)):
                got = array.shape[axis]
                where = f"input '{spec.name}' axis {axis}"
                if not label:
                    if got != size:
                        raise ArgumentError(
                            f"{where} has size {got}, expected {size} (shape "
                            f"{self._named(labels, spec)})"
                        )
                    continue
                dim = self.dims[label]
                if not dim.lo <= got <= dim.hi:
                    raise ArgumentError(
                        f"{where} is dimension '{label}' = {got}, outside its "
                        f"declared range [{dim.lo}, {dim.hi}]"
                    )
                if label in sizes and sizes[label][0] != got:
                    raise ArgumentError(
                        f"dimension '{label}' is {sizes[label][0]} in "
                        f"{sizes[label][1]} but {got} in {where}"
                    )
                sizes[label] = (got, where)
        return {name: size for name, (size, _) in sizes.items()}

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        sizes = self.sizes(*arrays)
        staged = []
        for k, (array, spec) in enumerate(zip(arrays, self._specs, strict=True)):
            buffer = self._staging[k]
            if buffer is None:
                buffer = np.zeros(spec.shape, numpy_dtype(spec.dtype))
                self._staging[k] = buffer
            buffer[tuple(slice(0, n) for n in array.shape)] = array
            staged.append(buffer)
        counts = np.array([sizes[name] for name in sorted(self.dims)], np.int64)
        outputs = self.program(*staged, counts)  # type: ignore[operator]
        return [
            np.ascontiguousarray(
                out[
                    tuple(
                        slice(0, sizes[lab]) if lab else slice(None) for lab in labels
                    )
                ]
            )
            for out, labels in zip(outputs, self.output_labels, strict=True)
        ]

    @staticmethod
    def _named(labels: list[str], spec: TensorSpec) -> str:
        shape = [lab or str(size) for lab, size in zip(labels, spec.shape, strict=True)]
        return f"[{', '.join(shape)}]"

    def __repr__(self) -> str:
        ranges = ", ".join(f"{d.name} in [{d.lo}, {d.hi}]" for d in self.dims.values())
        return f"<qidao.SymbolicProgram {ranges}: {self.program!r}>"
