"""``tg.matmul_integer`` and ``tg.matmul_bf16`` kernels: 8-bit products accumulated
in int32, bfloat16 products in float32.

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

``tg.matmul_bf16`` lowers to the same nests with each bfloat16 (an ``i16`` in
memory) widened to ``f32`` (its bits shifted to the top half:
``lowering/low_precision.py``), ``arith.mulf`` and ``arith.addf``, a float32
``C``; with its rhs packed in panels of ``w`` columns for ``vdpbf16ps``
(``[N/w, K/2, w, 2]``), ``k`` counts pairs and ``r`` walks one::

    for b.., i, k (K/2), j:  for r in [0, 2):
        C[b, i, j] += bf16(A[b, i, 2k + r]) * bf16(P[j floordiv w, k, j mod w, r])

(the default schedule's split of ``j`` by ``w`` makes P's index plain), and the
schedule tensorizes the 16 x 2 block onto ``vdpbf16ps`` (``avx512_bf16``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import BFloat16Type, f32, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.dialects import tg
from qidao.dialects.tg.linalg_integer import VNNI_GROUP
from qidao.dialects.tg.matmul_bf16 import BF16_GROUP
from qidao.dialects.tg.packed_matmul import WideningMatmulOp
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
from qidao.passes.kernels.lowering.low_precision import unpack
from qidao.passes.kernels.lowering.matmul import single_result


def lower_matmul_integer(
    op: Operation, k: Kernel, sources: list[Source], pool: ConstantPool
) -> None:
    assert isinstance(op, WideningMatmulOp)
    lhs, rhs = sources
    emit_matmul_integer(op, k.em, lhs, rhs, k.outputs[0])


def lower_matmul_integer_group(
    group: tg.FusedOp,
    matmul: WideningMatmulOp,
    k: Kernel,
    args: dict[SSAValue, Source],
    pool: ConstantPool,
) -> None:
    """A ``tg.fused`` of one ``tg.matmul_integer`` (or ``tg.matmul_bf16``) and its
    elementwise epilogue (the requantization; the cast back to bfloat16). The sums
    go to an int32 (float32) buffer ``acc`` of the kernel's own (the output has the epilogue's type), then a nest ``b.._epi, i_epi, j_epi``
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
            f"convert-tg-to-affine: tg.fused around {matmul.name} returns a "
            f"{list(shape(yielded))} tensor; its epilogue keeps the product's "
            f"shape {list(shape(matmul.result))}"
        )
    if any(operand not in args for operand in matmul.operands):
        raise TgLoweringError(
            f"convert-tg-to-affine: tg.fused computes an operand of {matmul.name} "
            "in its body; a widening product has no prologue, its operands must be "
            "the group's inputs"
        )
    em = k.em
    (out,) = k.outputs
    out_shape = shape(matmul.result)
    alloc = em.add(memref.AllocOp.get(_arith(matmul).acc, shape=out_shape))
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


@dataclass(frozen=True)
class _Arith:
    """How a widening product computes: its sums' type, its rhs's group."""

    acc: Attribute
    group: int
    integer: bool


def _arith(op: WideningMatmulOp) -> _Arith:
    if isinstance(op, tg.MatmulBf16Op):
        return _Arith(f32, BF16_GROUP, False)
    return _Arith(i32, VNNI_GROUP, True)


def emit_matmul_integer(
    op: WideningMatmulOp, em: Emitter, lhs: Source, rhs: Source, out: SSAValue
) -> None:
    """The init nest (``out = 0``) and the product nest accumulating into ``out``
    (the kernel's output, or a group's int32/float32 buffer)."""
    spec = _arith(op)
    out_shape = shape(op.result)
    batch = len(out_shape) - 2
    m, n = out_shape[-2:]
    kk = op.contraction()
    names = [f"b{d}" for d in range(batch)]
    with em.nest([f"{name}_init" for name in [*names, "i", "j"]], out_shape) as ivs:
        zero = em.constant(0 if spec.integer else 0.0, spec.acc)
        em.store(zero, out, ivs, [dim(d) for d in range(len(ivs))])
    widen_a = _widen(op.lhs)
    widen_b = _widen(op.rhs)
    b = [dim(d) for d in range(batch)]
    i, kd, j = dim(batch), dim(batch + 1), dim(batch + 2)
    lhs_batch = broadcast_index(b, shape(op.lhs)[:-2])
    out_index = [*b, i, j]
    if op.rhs_layout is None:
        rhs_index = [*broadcast_index(b, shape(op.rhs)[:-2]), kd, j]
        with (
            em.nest([*names, "i"], [*out_shape[:-2], m]) as row,
            em.nest(["k"], [kk]) as (kv,),
        ):
            a = widen_a(em, em.load(lhs, [*row, kv], [*lhs_batch, i, kd]))
            with em.nest(["j"], [n]) as (jv,):
                ivs = [*row, kv, jv]
                w = widen_b(em, em.load(rhs, ivs, rhs_index))
                _multiply_add(em, spec, a, w, out, ivs, out_index)
        return
    r = dim(batch + 3)
    g = spec.group
    bounds = [*out_shape[:-2], m, kk // g, n, g]
    if isinstance(op, tg.MatmulBf16Op):
        width = op.panel()
        rhs_packed = [j // width, kd, j % width, r]
    else:
        rhs_packed = [kd, j, r]
    with em.nest([*names, "i", "k", "j", "r"], bounds) as ivs:
        a = widen_a(em, em.load(lhs, ivs, [*lhs_batch, i, kd * g + r]))
        w = widen_b(em, em.load(rhs, ivs, rhs_packed))
        _multiply_add(em, spec, a, w, out, ivs, out_index)


def _multiply_add(
    em: Emitter,
    spec: _Arith,
    a: SSAValue,
    w: SSAValue,
    out: SSAValue,
    ivs: list[SSAValue],
    index: list[AffineExpr],
) -> None:
    """``out[index] += a * w`` in i32 (f32)."""
    acc = em.load(out, ivs, index)
    if spec.integer:
        total = em.value(arith.AddiOp(acc, em.value(arith.MuliOp(a, w))))
    else:
        total = em.value(arith.AddfOp(acc, em.value(arith.MulfOp(a, w))))
    em.store(total, out, ivs, index)


def _widen(value: SSAValue) -> Callable[[Emitter, SSAValue], SSAValue]:
    """How to widen an element of ``value`` (a tg tensor of i8 or ui8; bf16) to
    i32 (f32)."""
    element = element_type(value)
    unsigned = is_unsigned(element)

    def widen(em: Emitter, x: SSAValue) -> SSAValue:
        if element == BFloat16Type():
            return unpack(em, x, element)[0]
        if unsigned:
            return em.value(arith.ExtUIOp(x, i32))
        return em.value(arith.ExtSIOp(x, i32))

    return widen
