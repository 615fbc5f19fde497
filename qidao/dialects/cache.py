"""``cache``: a software prefetch, a hint that a memref element will be read soon.

MLIR writes it ``memref.prefetch``; the xDSL that qidao pins has none, so the
``prefetch`` schedule primitive writes it here::

    cache.prefetch %b[%i, %j] locality = 2 : memref<16x4608x32xf32>

The cache line holding ``b[i, j]`` is fetched towards the core, with LLVM's
``locality`` (0: no temporal locality ... 3: keep it in every level; 2 fetches
into L2 on x86, ``prefetcht1``). It reads nothing and writes nothing the program
sees: an address past the memref's end would still be harmless on x86 (a
prefetch never faults), but the indices must be in bounds, as a load's (the
primitive clamps them), so that the address arithmetic stays inside the
allocation. ``convert-to-llvm`` lowers it to ``llvm.prefetch`` (read, data cache).
"""

from __future__ import annotations

from xdsl.dialects.builtin import I64, IndexType, IntegerAttr, MemRefType, i64
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

LOCALITIES = range(4)
"""LLVM's locality hints: 0 (none) to 3 (keep in all levels)."""


@irdl_op_definition
class PrefetchOp(IRDLOperation):
    """Fetch the cache line of ``memref[indices]`` (module docstring)."""

    name = "cache.prefetch"
    memref = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    locality = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$memref `[` $indices `]` `locality` `=` $locality attr-dict `:` type($memref)"
    )

    def __init__(
        self, memref: SSAValue, indices: list[SSAValue], locality: int = 2
    ) -> None:
        super().__init__(
            operands=[memref, indices],
            properties={"locality": IntegerAttr(locality, i64)},
        )

    def verify_(self) -> None:
        t: Attribute = self.memref.type
        assert isinstance(t, MemRefType)
        rank = len(t.get_shape())
        if len(self.indices) != rank:
            raise VerifyException(
                f"{self.name}: a rank-{rank} memref takes {rank} indices, got "
                f"{len(self.indices)}"
            )
        locality = self.locality.value.data
        if locality not in LOCALITIES:
            raise VerifyException(
                f"{self.name}: locality must be 0..3 (LLVM's hint), got {locality}"
            )


Cache = Dialect("cache", [PrefetchOp], [])
