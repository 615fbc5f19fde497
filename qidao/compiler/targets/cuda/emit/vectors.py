"""The ops of a vectorized loop (``vectorize``, ``qidao/passes/schedule/vectorize.py``)
as CUDA C: wide global loads and stores, arithmetic lane by lane.

A ``vector<W x T>`` value is a C array of its W lanes, ``const float a[4] = {...}``
(indexed by constants only, so nvcc keeps it in registers). The ops:

- ``vector.load``/``vector.store``: ``W / n`` loads or stores of a CUDA vector
  type of ``n`` lanes (``float4``, ``float2``, ``double2``) where its alignment is
  proven (``alignment.py``), else W scalar loads or stores, lane ``k`` at the
  last index plus ``k``;
- ``vector.broadcast`` of a scalar: W copies of it;
- arith and math ops on vectors (``arith.mulf``, ``math.fma``, ``arith.maximumf``,
  ``arith.extf``, ...): the scalar op's C (``scalar_ops.py``) once per lane, since
  CUDA's vector types have no operators.

Refused (``CudaEmitError`` naming the kernel and the op): vectors of more than
one dimension, ``vector.reduction`` and the other vector ops. A vectorized
reduction carries a vector through its loop's ``iter_args``, which the loops of
``statements.py`` do not emit (``c_type`` knows scalars only).

The launch's header comment says, for each vector access, how wide it went and
why not wider (:func:`vector_notes`).

Before (the elementwise default schedule on the five-op chain ``relu(x * 3 + 1) *
0.5 + 2`` over 1028 floats: its loop split by 4, ``i0_i`` vectorized by 4 and
unrolled, ``i0_o`` split by 256 and bound; ``vectorize`` made ``x * 3 + 1`` one
``math.fma``)::

    %5 = vector.broadcast %0 : f32 to vector<4xf32>
    ...
    %10 = affine.apply affine_map<(d0, d1) -> (((d0 * 1024) + (d1 * 4)))> (%i0_o_o, %i0_o_i)
    %11 = vector.load %x[%10] : memref<1028xf32>, vector<4xf32>
    %12 = math.fma %11, %5, %6 : vector<4xf32>
    %13 = arith.maximumf %12, %7 : vector<4xf32>
    %14 = math.fma %13, %8, %9 : vector<4xf32>
    %15 = affine.apply affine_map<(d0, d1) -> (((d0 * 1024) + (d1 * 4)))> (%i0_o_o, %i0_o_i)
    vector.store %14, %out[%15] : memref<1028xf32>, vector<4xf32>

After (``i0_o_o * 1024 + i0_o_i * 4`` is a multiple of 4: one 16-byte load and
store a thread, which the PTX shows as ``ld.global.nc.v4.f32`` and
``st.global.v4.f32``)::

    // grid (2, 1, 1), block (256, 1, 1): i0_o_o -> blockIdx.x (2), i0_o_i -> ...
    // load x: vector<4xf32> as 1 float4
    // store out: vector<4xf32> as 1 float4
    ...
        const float v0[4] = {3.0f, 3.0f, 3.0f, 3.0f};
        ...
        const long long v5 = i0_o_o * 1024 + i0_o_i * 4;
        const float4 v6_float4 = *reinterpret_cast<const float4*>(&x[v5]);
        const float v6[4] = {v6_float4.x, v6_float4.y, v6_float4.z, v6_float4.w};
        const float v7[4] = {
          fmaf(v6[0], v0[0], v1[0]),
          ...
        };
        ...
        *reinterpret_cast<float4*>(&out[v10]) = make_float4(v9[0], v9[1], v9[2], v9[3]);

A view at offset 1 (``x[1:1025]``) is read lane by lane instead, and said so::

    // load in0: vector<4xf32> as 4 floats, not wide (not float4: its first element
    //   is 1 past a multiple of 4 elements; not float2: ...)
    const float v2[4] = {in0[1 + v1], in0[1 + v1 + 1], in0[1 + v1 + 2], in0[1 + v1 + 3]};
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import vector
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from qidao.compiler.targets.cuda.emit.alignment import (
    VectorAccess,
    Width,
    access_width,
    vector_type,
)
from qidao.compiler.targets.cuda.emit.c_types import c_type
from qidao.compiler.targets.cuda.emit.scalar_ops import scalar_expression
from qidao.compiler.targets.cuda.emit.writer import CWriter

FIELDS = "xyzw"
"""The members of CUDA's vector types, lane by lane."""
MAX_LINE = 96
"""A lane list longer than this is written one lane a line."""


def is_vector_op(op: Operation) -> bool:
    """True for an op of the vector dialect or one with a vector operand or result."""
    return op.dialect_name() == "vector" or any(
        isinstance(v.type, VectorType) for v in (*op.operands, *op.results)
    )


def write_vector_op(w: CWriter, op: Operation) -> None:
    """The C statements of one vector op (see the module doc)."""
    for value in (*op.operands, *op.results):
        if isinstance(value.type, VectorType):
            _check_type(w, op, value.type)
    if isinstance(op, vector.LoadOp):
        _load(w, op)
    elif isinstance(op, vector.StoreOp):
        _store(w, op)
    elif isinstance(op, vector.BroadcastOp):
        _broadcast(w, op)
    elif isinstance(op, vector.ReductionOp):
        raise w.fail(
            op,
            "vectorized reductions are not emitted: their loop carries a vector, "
            "which the CUDA loops do not; vectorize a loop without iter_args",
        )
    elif op.dialect_name() == "vector":
        raise w.fail(op, "the CUDA emitter does not know this vector op")
    else:
        _lanewise(w, op)


def vector_notes(w: CWriter, ops: Sequence[Operation]) -> list[str]:
    """The header comments of a launch whose top-level ops are ``ops``: how wide
    each vector load and store went, and why not wider (one line per distinct
    access, in order)."""
    notes: list[str] = []
    for top in ops:
        for op in top.walk():
            if not isinstance(op, vector.LoadOp | vector.StoreOp):
                continue
            note = "// " + _describe(w, op, access_width(op, w.fn, w.kernel))
            if note not in notes:
                notes.append(note)
    return notes


# --- memory ---------------------------------------------------------------------------


def _load(w: CWriter, op: vector.LoadOp) -> None:
    t = vector_type(op)
    elem = c_type(t.get_element_type())
    indices = [w.name(v) for v in op.indices]
    width = access_width(op, w.fn, w.kernel)
    lanes: list[str] = []
    if width.c_vector is None:
        for k in range(t.get_shape()[0]):
            lanes.append(w.access(op.base, _shifted(indices, k), op))
        _declare(w, op.result, elem, lanes)
        return
    array = w.fresh(op.result.name_hint)
    chunks = t.get_shape()[0] // width.lanes
    for c in range(chunks):
        suffix = width.c_vector if chunks == 1 else f"{width.c_vector}_{c}"
        name = w.fresh(f"{array}_{suffix}")
        ref = w.access(op.base, _shifted(indices, c * width.lanes), op)
        cast = f"reinterpret_cast<const {width.c_vector}*>(&{ref})"
        w.line(f"const {width.c_vector} {name} = *{cast};")
        lanes += [f"{name}.{FIELDS[k]}" for k in range(width.lanes)]
    _declare(w, op.result, elem, lanes, array)


def _store(w: CWriter, op: vector.StoreOp) -> None:
    t = vector_type(op)
    lanes = _lanes(w, op.vector, t.get_shape()[0])
    indices = [w.name(v) for v in op.indices]
    width = access_width(op, w.fn, w.kernel)
    if width.c_vector is None:
        for k, lane in enumerate(lanes):
            w.line(f"{w.access(op.base, _shifted(indices, k), op)} = {lane};")
        return
    for c in range(len(lanes) // width.lanes):
        ref = w.access(op.base, _shifted(indices, c * width.lanes), op)
        part = ", ".join(lanes[c * width.lanes : (c + 1) * width.lanes])
        target = f"*reinterpret_cast<{width.c_vector}*>(&{ref})"
        w.line(f"{target} = make_{width.c_vector}({part});")


def _shifted(indices: list[str], k: int) -> list[str]:
    """``indices`` with the last one ``k`` further (a lane, or a chunk's first)."""
    last = indices[-1]
    if k == 0:
        return indices
    moved = str(k) if last == "0" else f"{last} + {k}"
    return [*indices[:-1], moved]


def _describe(w: CWriter, op: VectorAccess, width: Width) -> str:
    """``load x: vector<4xf32> as 1 float4`` (and why not wider)."""
    t = vector_type(op)
    kind = "load" if isinstance(op, vector.LoadOp) else "store"
    pointer = w.pointers.get(op.base)
    name = pointer.name if pointer is not None else "a buffer"
    lanes = t.get_shape()[0]
    if width.c_vector is None:
        how = f"{lanes} {c_type(t.get_element_type())}s, not wide"
    else:
        how = f"{lanes // width.lanes} {width.c_vector}"
    why = f" ({width.why_not})" if width.why_not else ""
    return f"{kind} {name}: {t} as {how}{why}"


# --- values ---------------------------------------------------------------------------


def _broadcast(w: CWriter, op: vector.BroadcastOp) -> None:
    t = op.vector.type
    assert isinstance(t, VectorType)
    source = op.source
    if isinstance(source.type, VectorType):
        if source.type.get_shape() != (1,):
            raise w.fail(op, f"broadcasts a {source.type}; only scalars are emitted")
        scalar = f"{w.name(source)}[0]"
    else:
        scalar = w.name(source)
    lanes = [scalar] * t.get_shape()[0]
    _declare(w, op.vector, c_type(t.get_element_type()), lanes)


def _lanewise(w: CWriter, op: Operation) -> None:
    """An arith or math op on vectors: its scalar C once per lane."""
    if len(op.results) != 1 or op.regions:
        raise w.fail(op, "the CUDA emitter does not know this op")
    t = op.results[0].type
    if not isinstance(t, VectorType):
        raise w.fail(op, f"reduces a vector to {t}: only lane-by-lane ops are emitted")
    width = t.get_shape()[0]
    probe = _scalar_probe(op)
    lanes = []
    for k in range(width):
        args = [
            f"{w.name(v)}[{k}]" if isinstance(v.type, VectorType) else w.name(v)
            for v in op.operands
        ]
        text = scalar_expression(probe, args)
        if text is None:
            raise w.fail(op, "the CUDA emitter does not know this op")
        lanes.append(text)
    _declare(w, op.results[0], c_type(t.get_element_type()), lanes)


def _scalar_probe(op: Operation) -> Operation:
    """The op on one lane: same kind, properties and attributes, on values of the
    element types (the arguments of a detached block), for ``scalar_expression``,
    which reads the types (``expf`` for f32, ``exp`` for f64)."""
    block = Block(arg_types=[_element(v.type) for v in op.operands])
    return type(op).create(
        operands=list(block.args),
        result_types=[_element(r.type) for r in op.results],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )


def _element(t: Attribute) -> Attribute:
    return t.get_element_type() if isinstance(t, VectorType) else t


def _lanes(w: CWriter, value: SSAValue, width: int) -> list[str]:
    name = w.name(value)
    return [f"{name}[{k}]" for k in range(width)]


def _declare(
    w: CWriter, value: SSAValue, elem: str, lanes: list[str], name: str = ""
) -> None:
    """``const <elem> <name>[W] = {lanes};``, one lane a line when long; ``name``
    taken already (else a fresh one)."""
    name = name or w.fresh(value.name_hint)
    head = f"const {elem} {name}[{len(lanes)}] = {{"
    one = f"{head}{', '.join(lanes)}}};"
    if len("  " * w.depth + one) <= MAX_LINE:
        w.line(one)
    else:
        w.line(head)
        w.depth += 1
        for lane in lanes:
            w.line(f"{lane},")
        w.depth -= 1
        w.line("};")
    w.names[value] = name


def _check_type(w: CWriter, op: Operation, t: VectorType[Attribute]) -> None:
    if t.get_num_dims() != 1 or t.get_num_scalable_dims():
        raise w.fail(op, f"{t}: only fixed one-dimensional vectors are emitted")
