"""``tg.matmul_integer`` kernels: 8-bit products accumulated in int32.

The output is zero-filled in a first nest (``b0_init, ..., i_init, j_init``), then
accumulated, each operand widened to ``i32`` by its signedness (``arith.extui``
for ``ui8``, ``arith.extsi`` for ``i8``; the memrefs are signless ``i8`` either
way, so the tg types say which), ``arith.muli`` and ``arith.addi`` wrapping as
the op says. With the rhs as it is (``[..., K, N]``), the nest is matmul's
``b0, ..., i, k, j``::

    for b.., i, k:  a = ext(A[b, i, k]);  for j:  C[b, i, j] += a * ext(B[b, k, j])

With the rhs packed for VNNI (``rhs_layout = "vnni"``, ``[K/4, N, 4]``), ``k``
counts groups of four rows and a fourth loop ``r`` walks the group, innermost::

    for b.., i, k (K/4), j:  for r in [0, 4):
        C[b, i, j] += ext(A[b, i, 4k + r]) * ext(P[k, j, r])

so that the 16 x 4 block ``j, r`` of a 16-column vector is the one ``vpdpbusd``
computes (the ``tensorize`` pass's ``avx512_vnni`` intrinsic, which the default
schedule applies: ``qidao/compiler/targets/cpu/defaults/matmul_integer.py``).
Written as loops it is correct on any CPU, scheduled or not.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import i32
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.dialects.tg.linalg_integer import VNNI_GROUP
from qidao.dialects.tg.types import is_unsigned
from qidao.passes.kernels.lowering.common import (
    Emitter,
    Kernel,
    Source,
    TgLoweringError,
    broadcast_index,
    dim,
    element_type,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool
from qidao.passes.kernels.lowering.elementwise import PointwiseEvaluator
from qidao.passes.kernels.lowering.matmul import single_result


def lower_matmul_integer(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, tg.MatmulIntegerOp)
    lhs, rhs = sources
    emit_matmul_integer(op, k.em, lhs, rhs, k.outputs[0])


def lower_matmul_integer_group(
    group: tg.FusedOp,
    matmul: tg.MatmulIntegerOp,
    k: Kernel,
    args: dict[SSAValue, Source],
    pool: ConstantPool,
) -> None:
    """A ``tg.fused`` of one ``tg.matmul_integer`` and its elementwise epilogue
    (the requantization). The sums go to an int32 buffer ``acc`` of the kernel's
    own (the output has the epilogue's type), then a nest ``b.._epi, i_epi, j_epi``
    writes the output from them::

        acc = alloc [b.., M, N] i32
        for b_init, i_init, j_init:   acc[b, i, j] = 0
        for b, i, k, j (, r):         acc[b, i, j] += ext(A) * ext(B)
        for b_epi, i_epi, j_epi:      out[b, i, j] = epilogue(acc[b, i, j], ...)
        dealloc acc

    The default schedule moves the init and epilogue nests into the block loop,
    where ``cache_write`` shrinks ``acc`` to the block (it lives in no other loop,
    so nothing is written back): the sums never reach memory."""
    yielded = single_result(group)
    if shape(yielded) != shape(matmul.result):
        raise TgLoweringError(
            f"convert-tg-to-affine: tg.fused around tg.matmul_integer returns a "
            f"{list(shape(yielded))} tensor; its epilogue keeps the product's "
            f"shape {list(shape(matmul.result))}"
        )
    if any(operand not in args for operand in matmul.operands):
        raise TgLoweringError(
            "convert-tg-to-affine: tg.fused computes an operand of "
            "tg.matmul_integer in its body; an int8 product has no prologue, its "
            "operands must be the group's inputs"
        )
    em = k.em
    (out,) = k.outputs
    out_shape = shape(matmul.result)
    alloc = em.add(memref.AllocOp.get(i32, shape=out_shape))
    acc = alloc.memref
    acc.name_hint = "sums"
    emit_matmul_integer(matmul, em, args[matmul.lhs], args[matmul.rhs], acc)
    finished = {**args, matmul.result: acc}
    index = [dim(d) for d in range(len(out_shape))]
    names = [f"b{d}" for d in range(len(out_shape) - 2)]
    with em.nest([f"{name}_epi" for name in [*names, "i", "j"]], out_shape) as ivs:
        value = PointwiseEvaluator(em, ivs, finished, pool).at(yielded, index)
        em.store(value, out, ivs, index)
    em.add(memref.DeallocOp.get(acc))


def emit_matmul_integer(
    op: tg.MatmulIntegerOp, em: Emitter, lhs: Source, rhs: Source, out: SSAValue
) -> None:
    """The init nest (``out = 0``) and the product nest accumulating into ``out``
    (the kernel's output, or a group's int32 buffer)."""
    out_shape = shape(op.result)
    batch = len(out_shape) - 2
    m, n = out_shape[-2:]
    kk = op.contraction()
    names = [f"b{d}" for d in range(batch)]
    with em.nest([f"{name}_init" for name in [*names, "i", "j"]], out_shape) as ivs:
        em.store(em.constant(0, i32), out, ivs, [dim(d) for d in range(len(ivs))])
    widen_a = _widen(op.lhs)
    widen_b = _widen(op.rhs)
    b = [dim(d) for d in range(batch)]
    i, kd, j = dim(batch), dim(batch + 1), dim(batch + 2)
    lhs_batch = broadcast_index(b, shape(op.lhs)[:-2])
    out_index = [*b, i, j]
    if not op.vnni:
        rhs_index = [*broadcast_index(b, shape(op.rhs)[:-2]), kd, j]
        with (
            em.nest([*names, "i"], [*out_shape[:-2], m]) as row,
            em.nest(["k"], [kk]) as (kv,),
        ):
            a = widen_a(em, em.load(lhs, [*row, kv], [*lhs_batch, i, kd]))
            with em.nest(["j"], [n]) as (jv,):
                ivs = [*row, kv, jv]
                w = widen_b(em, em.load(rhs, ivs, rhs_index))
                _multiply_add(em, a, w, out, ivs, out_index)
        return
    r = dim(batch + 3)
    bounds = [*out_shape[:-2], m, kk // VNNI_GROUP, n, VNNI_GROUP]
    with em.nest([*names, "i", "k", "j", "r"], bounds) as ivs:
        a = widen_a(em, em.load(lhs, ivs, [*lhs_batch, i, kd * VNNI_GROUP + r]))
        w = widen_b(em, em.load(rhs, ivs, [kd, j, r]))
        _multiply_add(em, a, w, out, ivs, out_index)


def _multiply_add(
    em: Emitter,
    a: SSAValue,
    w: SSAValue,
    out: SSAValue,
    ivs: list[SSAValue],
    index: list[AffineExpr],
) -> None:
    """``out[index] += a * w`` in i32."""
    acc = em.load(out, ivs, index)
    product = em.value(arith.MuliOp(a, w))
    em.store(em.value(arith.AddiOp(acc, product)), out, ivs, index)


def _widen(value: SSAValue) -> Callable[[Emitter, SSAValue], SSAValue]:
    """How to widen an element of ``value`` (a tg tensor of i8 or ui8) to i32."""
    unsigned = is_unsigned(element_type(value))

    def widen(em: Emitter, x: SSAValue) -> SSAValue:
        if unsigned:
            return em.value(arith.ExtUIOp(x, i32))
        return em.value(arith.ExtSIOp(x, i32))

    return widen
