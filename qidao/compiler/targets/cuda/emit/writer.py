"""The base of the kernel writer: indented C lines, C names for SSA values, and
the C pointer behind every memref.

A value's C name is its IR name hint when it has one (made a C identifier, and
suffixed ``_1``, ``_2``, ... when taken or reserved), else ``v0``, ``v1``, ...;
constants are named by their literal. A memref is a :class:`Pointer`: a kernel
parameter, a local array or a ``__shared__`` staging array, and a view is the same
pointer with its own type. An access indexes it at the type's offset plus the sum
of stride x index, so strided layouts need nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap

from qidao.compiler.targets.cuda.emit.affine_exprs import affine_c, factor
from qidao.compiler.targets.cuda.emit.c_types import c_type, layout_of
from qidao.compiler.targets.cuda.emit.errors import CudaEmitError
from qidao.compiler.targets.cuda.staging import Staging

TID = "qd_tid"
"""The C name of the flattened thread index in a launch with staging buffers."""

RESERVED = frozenset(
    {
        "int",
        "float",
        "double",
        "char",
        "short",
        "long",
        "if",
        "else",
        "for",
        "do",
        "while",
        "return",
        "const",
        "auto",
        "bool",
        "true",
        "false",
        "void",
        "unsigned",
        "signed",
        "static",
        "register",
        "default",
        "case",
        "switch",
        "break",
        "continue",
        "new",
        "delete",
        "this",
        "class",
        "struct",
        "union",
        "enum",
        "template",
        "typename",
        "operator",
        "blockIdx",
        "threadIdx",
        "blockDim",
        "gridDim",
        "min",
        "max",
    }
)
"""Names a generated C name must not take: C++ keywords and types, CUDA's
built-in variables, ``min`` and ``max``."""


@dataclass
class Pointer:
    """The C array behind a memref value, and the memref type it is read as."""

    name: str
    type: MemRefType[Attribute]
    staging: Staging | None = None
    """A ``__shared__`` staging buffer: its layout is ``staging.shape`` with
    ``staging.strides``, and a thread's slice starts at ``counter * extent``
    along each sliced dimension (``Staging.slices``)."""


class CWriter:
    """The C lines of one launch of one kernel, the C names of its values and
    the pointers of its memrefs."""

    def __init__(self, fn: func.FuncOp, kernel: str) -> None:
        self.fn = fn
        self.kernel = kernel
        self.lines: list[str] = []
        self.depth = 1
        self.names: dict[SSAValue, str] = {}
        self.pointers: dict[SSAValue, Pointer] = {}
        self.taken: set[str] = {TID}
        self.counter = 0
        self.synced = False
        """The last statement was a ``__syncthreads()`` that every thread ran
        after the code before it (closing a loop that runs at least once, or a
        bound loop's scope without a guard, keeps it)."""

    def fail(self, op: Operation, reason: str) -> CudaEmitError:
        return CudaEmitError(f"kernel '{self.kernel}': '{op.name}': {reason}")

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)
        self.synced = text.startswith("__syncthreads();")

    def fresh(self, hint: str | None, fallback: str = "v") -> str:
        """A new C name: the IR's name hint, or ``v0``, ``v1``, ... without one."""
        base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in hint or "")
        if not base or base[0].isdigit():
            while f"{fallback}{self.counter}" in self.taken:
                self.counter += 1
            base = f"{fallback}{self.counter}"
        name, k = base, 0
        while name in self.taken or name in RESERVED:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def name(self, value: SSAValue) -> str:
        if value not in self.names:
            raise CudaEmitError(
                f"kernel '{self.kernel}': a value is used outside the launch that "
                "computes it (one launch per top-level loop nest with bound loops)"
            )
        return self.names[value]

    def define(self, value: SSAValue, expr: str) -> None:
        name = self.fresh(value.name_hint)
        self.line(f"const {c_type(value.type)} {name} = {expr};")
        self.names[value] = name

    def access(
        self, memref_value: SSAValue, indices: Sequence[str], op: Operation
    ) -> str:
        """The C element of ``memref_value`` at ``indices``."""
        pointer = self.pointers.get(memref_value)
        if pointer is None:
            raise self.fail(
                op, "accesses a memref the emitter cannot trace to a buffer"
            )
        offset, strides = layout_of(pointer.type, self.kernel)
        terms = [str(offset)] if offset else []
        staging = pointer.staging
        if staging is not None:  # the slices of a __shared__ buffer
            strides = staging.strides
            for d, (counter, _) in staging.slices.items():
                start = staging.extents[d] * strides[d]  # a slice's first element
                terms.append(f"{factor(self.name(counter))} * {start}")
        for index, stride in zip(indices, strides, strict=True):
            if index == "0" or stride == 0:
                continue
            terms.append(index if stride == 1 else f"{factor(index)} * {stride}")
        return f"{pointer.name}[{' + '.join(terms) or '0'}]"

    def map_indices(
        self, affine_map: AffineMap, operands: Sequence[SSAValue]
    ) -> list[str]:
        """The results of ``affine_map`` on ``operands``, as C expressions."""
        names = [self.name(v) for v in operands]
        dims, syms = names[: affine_map.num_dims], names[affine_map.num_dims :]
        return [affine_c(r, dims, syms) for r in affine_map.results]
