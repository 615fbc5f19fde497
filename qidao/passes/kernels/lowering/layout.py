"""Copy kernels: ``tg.contiguous`` of a strided input, ``tg.reshape`` that must
copy, and the copies of graph outputs (``qd.kernel = "copy"``).

One nest ``i0, i1, ...`` over the output; the read goes through the input's strided
memref layout and, for a reshape, through the row-major index remapping
(``floordiv``/``mod`` only across the dimensions that split or merge).
"""

from __future__ import annotations

from xdsl.ir import Operation

from qidao.passes.kernels.lowering.common import (
    Kernel,
    Source,
    dim,
    loop_names,
    reshape_index,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool


def lower_copy(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    (src,) = sources
    copy_kernel(k, src, shape(op.operands[0]), shape(op.results[0]))


def copy_kernel(
    k: Kernel, src: Source, in_shape: tuple[int, ...], out_shape: tuple[int, ...]
) -> None:
    """``out[i] = src[reshape(i)]`` over the output, loops ``i0, i1, ...``."""
    (out,) = k.outputs
    index = [dim(d) for d in range(len(out_shape))]
    with k.em.nest(loop_names("i", len(out_shape)), out_shape) as ivs:
        value = k.em.load(src, ivs, reshape_index(index, out_shape, in_shape))
        k.em.store(value, out, ivs, index)
