"""How wide a ``vector.load``/``vector.store`` may go: the proof that it starts at
an address aligned to a CUDA vector type.

A ``float4`` load is one 16-byte instruction (``ld.global.v4.f32``), four times
the bytes of a ``float`` load for the same instruction count; but CUDA requires
its address to be a multiple of 16 (``float2``: 8, ``double2``: 16), or the
launch stops with "misaligned address". So an access is wide only where the
emitter proves the alignment for every thread and every iteration; otherwise it
is written lane by lane (correct, only narrower), and :class:`Width` says why.

The types, widest first: ``float4`` then ``float2`` for ``f32``, ``double2`` for
``f64``; an access of W lanes is W / n of them when n divides W (``vector<8xf32>``:
two ``float4``).

The proof. The access's first element is ``offset + sum_d stride_d * index_d``
elements from its buffer's base (the memref type's static layout, views
included). Its buffer must be a kernel argument: a ``cudaMalloc`` buffer, whose
base is 256-byte aligned (the host plan passes every argument at its base:
views carry their offset in their type). Each index is read as a linear form
(``loops/linear.py``, through ``affine.apply``) over constants and loop
counters, and a counter of ``affine.for %i = lb to ... step s`` takes the values
``lb + s * t`` (a bound loop too: ``i = lb + s * blockIdx.x``); so a term ``a *
i`` is ``a * lb`` plus a multiple of ``a * s``, and ``lb`` is read the same way.
The access is aligned to n elements when every ``a * s`` and the constant left
are multiples of n. After ``split`` by 4 and ``vectorize`` (``x[i_o * 4 +
i_i]``, ``i_i`` from 0 step 4) every term is; ``x[i + 1]``, a view at offset 1,
or a row of 1001 floats (``x[i * 1001 + j]``) are not.

Not wide, with the reason: another element type, a width that no type divides,
an innermost stride other than 1, a local or ``__shared__`` array (its base
alignment is not known), an index that is not linear in loop counters (``mod``,
``floordiv``, a value of another op), a loop that starts at a max of values.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import affine, arith, func, vector
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    IntegerAttr,
    MemRefType,
    VectorType,
)
from xdsl.ir import Attribute, BlockArgument, OpResult, SSAValue
from xdsl.ir.affine import AffineExpr

from qidao.compiler.targets.cuda.emit.c_types import layout_of
from qidao.passes.schedule.loops.linear import Linear, linear_form
from qidao.passes.schedule.loops.nest import loop_name, root_buffer, step_of

VectorAccess = vector.LoadOp | vector.StoreOp

CUDA_VECTORS: dict[type[Attribute], tuple[tuple[str, int], ...]] = {
    Float32Type: (("float4", 4), ("float2", 2)),
    Float64Type: (("double2", 2),),
}
"""Element type -> its CUDA vector types and their lanes, widest first (each as
many bytes as it is aligned to)."""


@dataclass(frozen=True)
class Width:
    """How one vector access is written: as ``vector<W x T>`` in CUDA vector types
    of ``lanes`` elements (``c_vector``), or lane by lane (``c_vector`` None);
    ``why_not`` says why it is not wider (empty when it takes the widest type)."""

    lanes: int
    c_vector: str | None
    why_not: str


def vector_type(op: VectorAccess) -> VectorType[Attribute]:
    """The vector an access loads or stores."""
    t = op.result.type if isinstance(op, vector.LoadOp) else op.vector.type
    assert isinstance(t, VectorType)
    return t


def access_width(op: VectorAccess, fn: func.FuncOp, kernel: str) -> Width:
    """The widest CUDA vector type ``op`` may use (see the module doc)."""
    t = vector_type(op)
    width = t.get_shape()[-1]
    types = CUDA_VECTORS.get(type(t.get_element_type()), ())
    if not types:
        return Width(1, None, f"{t}: only f32 and f64 have CUDA vector types here")
    fits = [(name, n) for name, n in types if width % n == 0]
    if not fits:
        sizes = " or ".join(str(n) for _, n in types)
        return Width(1, None, f"its {width} lanes are not a multiple of {sizes}")
    reasons: list[str] = []
    for name, n in fits:
        why = misalignment(op, fn, kernel, n)
        if why is None:
            return Width(n, name, "; ".join(reasons))
        reasons.append(f"not {name}: {why}")
    return Width(1, None, "; ".join(reasons))


def misalignment(op: VectorAccess, fn: func.FuncOp, kernel: str, n: int) -> str | None:
    """Why the first element of ``op`` may not sit at a multiple of ``n`` elements
    from a 256-byte-aligned base; None when it provably does."""
    memref_type = op.base.type
    assert isinstance(memref_type, MemRefType)
    root = root_buffer(op.base)
    if not (isinstance(root, BlockArgument) and root.owner is fn.body.block):
        what = f"%{root.name_hint}" if root.name_hint else "the buffer"
        return f"{what} is a local or __shared__ array: its alignment is not known"
    offset, strides = layout_of(memref_type, kernel)
    if strides[-1] != 1:
        return f"the innermost stride of {memref_type} is {strides[-1]}, not 1"
    total: Linear = {None: offset}
    for index, stride in zip(op.indices, strides, strict=True):
        form = linear_form(AffineExpr.dimension(0), [index], 1, through_apply=True)
        if form is None:
            return "an index is not linear in the loop counters (mod, floordiv)"
        for key, c in form.items():
            total[key] = total.get(key, 0) + c * stride
    residue = _residue(total, n)
    if isinstance(residue, str):
        return residue
    if residue:
        return f"its first element is {residue} past a multiple of {n} elements"
    return None


def _residue(form: Linear, n: int) -> int | str:
    """``form`` (over constants and loop counters) modulo ``n`` when it is the same
    for every value of the counters; else why not."""
    residue = form.get(None, 0)
    for value, a in form.items():
        if value is None or a % n == 0:
            continue
        known = _constant(value)
        if known is not None:
            residue += a * known
            continue
        loop = _loop_of(value)
        if loop is None:
            source = value.owner.name if isinstance(value, OpResult) else "a block"
            return f"an index depends on a value of '{source}', not a loop counter"
        name = loop_name(loop) or "a loop"
        if a * step_of(loop) % n:
            return (
                f"each step of loop '{name}' moves it by {a * step_of(loop)} "
                f"elements, not a multiple of {n}"
            )
        lower = loop.lowerBoundMap.data
        if len(lower.results) != 1:
            return f"loop '{name}' starts at a max of several values"
        start = linear_form(
            lower.results[0],
            list(loop.lowerBoundOperands),
            lower.num_dims,
            through_apply=True,
        )
        if start is None:
            return f"the start of loop '{name}' is not linear (mod, floordiv)"
        # a * (lb + step * t): the multiples of a * step drop out, a * lb is left
        part = _residue({k: a * c for k, c in start.items()}, n)
        if isinstance(part, str):
            return part
        residue += part
    return residue % n


def _constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _loop_of(value: SSAValue) -> affine.ForOp | None:
    """The loop whose counter ``value`` is, or None."""
    if not isinstance(value, BlockArgument) or value.index != 0:
        return None
    loop = value.owner.parent_op()
    return loop if isinstance(loop, affine.ForOp) else None
