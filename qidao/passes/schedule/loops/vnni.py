"""``tensorize``'s CPU intrinsics ``avx512_vnni``, a 16 x 4 block of 8-bit
multiply-adds made one ``vpdpbusd``, and ``avx512_bf16``, a 16 x 2 block of
bfloat16 multiply-adds made one ``vdpbf16ps``.

    for j in [0, 16)                                  %a = vector.load A[.., i, 4q]     : vector<4xi8>
      for r in [0, 4)                         ==>     %b = vector.load P[.., q, j0, 0]  : vector<64xi8>
        C[.., j] += zext(A[.., 4q + r])               %c = vector.load C[.., j0]        : vector<16xi32>
                  * sext(P[.., q, j, r])              %d = x86vector.avx512.vpdpbusd %c, %a, %b
                                                      vector.store %d, C[.., j0]

(``j0``: the block's first column, the index at ``j = 0``.) Unlike the GPU's
intrinsics, which mark a tile and leave its loops to the CUDA emitter, this one
replaces the two loops by what they compute: the vector ops lower as every
vectorized loop's do, and ``x86vector.avx512.vpdpbusd`` to its LLVM intrinsic
(``qidao/passes/cpu/llvm/x86.py``). The loops must be exactly (each failure a
``TileError`` naming the rule):

1. ``j`` (the loop named) from 0 to 16, step 1, holding only ``r``, from 0 to 4,
   step 1; ``r``'s body is ``C[..] = addi(C[..], muli(extui(A[..]), extsi(P[..])))``
   (the operands of ``addi``/``muli`` in either order), C's load and store at the
   same index, A and P ``i8`` memrefs (A read as unsigned, P as signed: the
   instruction's operands), C an ``i32`` memref.
2. A's index moves with ``r`` in its last dimension only, with coefficient 1,
   and not with ``j``; P's moves with ``j`` in its next-to-last dimension and with
   ``r`` in its last, each with coefficient 1, and P's last two dimensions are
   contiguous and 4 wide (``[.., N, 4]``, strides ``[.., 4, 1]``: the 16 x 4 block
   is 64 contiguous bytes); C's moves with ``j`` in its last dimension only, with
   coefficient 1, and not with ``r``; every last dimension has stride 1.

A ``ui8 x i8`` ``tg.matmul_integer`` with its rhs packed (``rhs_layout =
"vnni"``) lowers to such loops (``qidao/passes/kernels/lowering/matmul_integer.py``)
and its default schedule tensorizes them (``qidao/compiler/targets/cpu/defaults/
matmul_integer.py``). The result is the same integers in the same wrapping i32
arithmetic, in another order of additions (exact).

``avx512_bf16`` is the same with pairs: ``r`` from 0 to 2, the body
``C[..] = addf(C[..], mulf(bf16(A[..]), bf16(P[..])))`` where ``bf16(x)`` is a
bfloat16 widened from its ``i16`` bits (``bitcast(shli(extui(x), 16))``, the
lowering's), A and P ``i16`` memrefs, C an ``f32`` memref, P's last two
dimensions ``[.., N, 2]`` with strides ``[.., 2, 1]``; the block becomes one
``x86vector.avx512.dot``. A ``tg.matmul_bf16`` with its rhs packed lowers to
such loops. The result is the same float32 products (exact) summed in another
order, with inputs and sums below 2**-126 flushed to zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from xdsl.dialects import affine, arith, func, vector
from xdsl.dialects.builtin import (
    AffineMapAttr,
    IndexType,
    IntegerType,
    MemRefType,
    VectorType,
    f32,
    i16,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import AffineMap

from qidao.dialects.amx import memref_strides
from qidao.dialects.x86vector import GROUP, LANES, PAIR, DotBf16, Vpdpbusd
from qidao.passes.schedule.loops.errors import IllegalScheduleError
from qidao.passes.schedule.loops.linear import coefficient
from qidao.passes.schedule.loops.nest import (
    body_ops,
    constant_bounds,
    iv,
    loop_name,
    step_of,
)

INTRINSIC = "avx512_vnni"
BF16_INTRINSIC = "avx512_bf16"

_I8 = IntegerType(8)
_P = TypeVar("_P", bound=Operation)
_Q = TypeVar("_Q", bound=Operation)


@dataclass(frozen=True)
class _Block:
    """A matched 16 x 4 block: A's and P's loads, C's load and store."""

    a: affine.LoadOp
    p: affine.LoadOp
    c: affine.LoadOp
    store: affine.StoreOp


@dataclass
class VnniMatcher:
    """Checks and rewrites the block headed by ``head`` (module docstring);
    ``fail`` makes the error (``tensorize``'s ``TileError`` subclasses).
    ``bf16``: the ``avx512_bf16`` block, else ``avx512_vnni``'s."""

    fn: func.FuncOp
    head: affine.ForOp
    kernel: str
    loop: str
    errors: dict[str, type[IllegalScheduleError]]
    """``"tile"``, ``"extent"``, ``"dtype"``, ``"stride"``: the error per rule."""
    bf16: bool = False

    @property
    def group(self) -> int:
        return PAIR if self.bf16 else GROUP

    def fail(self, rule: str, reason: str) -> IllegalScheduleError:
        return self.errors[rule]("tensorize", self.kernel, self.loop, reason)

    def rewrite(self) -> None:
        """Check the block, then replace its two loops by one ``vpdpbusd``."""
        j_loop, r_loop = self._loops()
        block = self._block(r_loop)
        j, r = iv(j_loop), iv(r_loop)
        self._check_moves(block, j, r)
        parent = self.head.parent_block()
        assert parent is not None
        zero = arith.ConstantOp.from_int_and_width(0, IndexType())
        parent.insert_op_before(zero, self.head)

        def at_start(op: affine.LoadOp | affine.StoreOp) -> list[SSAValue]:
            """``op``'s index values with ``j = r = 0``."""
            amap = op.map.data
            operands = [zero.result if v in (j, r) else v for v in op.indices]
            values: list[SSAValue] = []
            for result in amap.results:
                apply = affine.ApplyOp(
                    operands,
                    AffineMapAttr(
                        AffineMap(amap.num_dims, amap.num_symbols, (result,))
                    ),
                )
                parent.insert_op_before(apply, self.head)
                values.append(apply.result)
            return values

        g, element = self.group, (i16 if self.bf16 else _I8)
        a = vector.LoadOp(block.a.memref, at_start(block.a), VectorType(element, [g]))
        b = vector.LoadOp(
            block.p.memref, at_start(block.p), VectorType(element, [LANES * g])
        )
        c_index = at_start(block.c)
        acc = VectorType(f32 if self.bf16 else i32, [LANES])
        c = vector.LoadOp(block.c.memref, c_index, acc)
        dot = (DotBf16 if self.bf16 else Vpdpbusd)(c.result, a.result, b.result)
        ops = [a, b, c, dot, vector.StoreOp(dot.result, block.store.memref, c_index)]
        for op in ops:
            parent.insert_op_before(op, self.head)
        self.head.detach()
        self.head.erase()

    def _loops(self) -> tuple[affine.ForOp, affine.ForOp]:
        ops = body_ops(self.head)
        inner = ops[0] if len(ops) == 1 else None
        if not isinstance(inner, affine.ForOp):
            raise self.fail(
                "tile",
                "the loop must hold exactly one loop (j over 16 columns, then r over "
                f"the {self.group} elements of a group)",
            )
        for loop, extent in ((self.head, LANES), (inner, self.group)):
            bounds = constant_bounds(loop)
            if bounds != (0, extent) or step_of(loop) != 1 or loop.inits:
                raise self.fail(
                    "extent",
                    f"the loops must run 0 to {LANES} and 0 to {self.group}, step 1, "
                    f"without iter_args; loop '{_loop_name(loop)}' runs "
                    f"{'non-constant bounds' if bounds is None else bounds} step "
                    f"{step_of(loop)}",
                )
        return self.head, inner

    def _block(self, r_loop: affine.ForOp) -> _Block:
        if self.bf16:
            return self._bf16_block(r_loop)
        ops = body_ops(r_loop)
        stores = [op for op in ops if isinstance(op, affine.StoreOp)]
        want = "C[..] = addi(C[..], muli(extui(A[..]), extsi(P[..]))) and nothing else"
        if len(stores) != 1 or len(ops) != 8:
            raise self.fail("tile", f"the inner loop's body must be {want}")
        store = stores[0]
        add = store.value.owner
        if not isinstance(add, arith.AddiOp):
            raise self.fail("tile", f"the inner loop's body must be {want}")
        c, mul = _either(add.lhs, add.rhs, affine.LoadOp, arith.MuliOp)
        if c is None or mul is None:
            raise self.fail("tile", f"the inner loop's body must be {want}")
        zext, sext = _either(mul.lhs, mul.rhs, arith.ExtUIOp, arith.ExtSIOp)
        if zext is None or sext is None:
            raise self.fail(
                "dtype",
                "the product must be of a zero-extended byte (A, unsigned) and a "
                "sign-extended one (P, signed): vpdpbusd's operands",
            )
        a, p = zext.input.owner, sext.input.owner
        if not isinstance(a, affine.LoadOp) or not isinstance(p, affine.LoadOp):
            raise self.fail("tile", f"the inner loop's body must be {want}")
        if c.memref is not store.memref or _index(c) != _index(store):
            raise self.fail("tile", "C's load and store must be the same element")
        for what, op, element in (("A", a, _I8), ("P", p, _I8), ("C", c, i32)):
            if _element(op.memref.type) != element or op.result.type != element:
                raise self.fail(
                    "dtype",
                    f"{what} must be a memref of {element}, got {op.memref.type}",
                )
        for value in (zext.result, sext.result, mul.result, add.result):
            if value.type != i32:
                raise self.fail(
                    "dtype", f"the arithmetic must be i32, got {value.type}"
                )
        return _Block(a, p, c, store)

    def _bf16_block(self, r_loop: affine.ForOp) -> _Block:
        ops = body_ops(r_loop)
        stores = [op for op in ops if isinstance(op, affine.StoreOp)]
        want = "C[..] = addf(C[..], mulf(bf16(A[..]), bf16(P[..]))) and nothing else"
        add = stores[0].value.owner if len(stores) == 1 else None
        if not isinstance(add, arith.AddfOp):
            raise self.fail("tile", f"the inner loop's body must be {want}")
        c, mul = _either(add.lhs, add.rhs, affine.LoadOp, arith.MulfOp)
        if c is None or mul is None:
            raise self.fail("tile", f"the inner loop's body must be {want}")
        widened = [_bf16_load(x) for x in (mul.lhs, mul.rhs)]
        if widened[0] is None or widened[1] is None:
            raise self.fail(
                "dtype",
                "the product must be of two bfloat16s widened from their i16 bits "
                "(bitcast(shli(extui(x), 16)) to f32): vdpbf16ps's operands",
            )
        (a, chain_a), (p, chain_p) = widened[0], widened[1]
        if _moves_with_j(p, r_loop) is False and _moves_with_j(a, r_loop):
            a, p = p, a  # the rhs is the operand that moves along the columns
        store = stores[0]
        matched = {store, add, c, mul, a, p, *chain_a, *chain_p}
        if any(
            op not in matched and not isinstance(op, arith.ConstantOp) for op in ops
        ):
            raise self.fail("tile", f"the inner loop's body must be {want}")
        if c.memref is not store.memref or _index(c) != _index(store):
            raise self.fail("tile", "C's load and store must be the same element")
        for what, op, element in (("A", a, i16), ("P", p, i16), ("C", c, f32)):
            if _element(op.memref.type) != element or op.result.type != element:
                raise self.fail(
                    "dtype",
                    f"{what} must be a memref of {element}, got {op.memref.type}",
                )
        for value in (mul.result, add.result):
            if value.type != f32:
                raise self.fail(
                    "dtype", f"the arithmetic must be f32, got {value.type}"
                )
        return _Block(a, p, c, store)

    def _check_moves(self, block: _Block, j: SSAValue, r: SSAValue) -> None:
        # (memref, its name, expected (j, r) coefficients of each index from the last)
        wanted: tuple[tuple[affine.LoadOp, str, tuple[tuple[int, int], ...]], ...] = (
            (block.a, "A", ((0, 1),)),
            (block.p, "P", ((0, 1), (1, 0))),
            (block.c, "C", ((1, 0),)),
        )
        for op, what, tail in wanted:
            amap = op.map.data
            operands = list(op.indices)
            moves = [
                tuple(coefficient(expr, operands, amap.num_dims, v) for v in (j, r))
                for expr in amap.results
            ]
            expected = [(0, 0)] * (len(moves) - len(tail)) + list(reversed(tail))
            if len(moves) < len(tail) or moves != expected:
                raise self.fail(
                    "stride",
                    f"{what}'s index must move as (j, r) = {expected} per dimension, "
                    f"got {moves}",
                )
            t = op.memref.type
            assert isinstance(t, MemRefType)
            strides = memref_strides(t)
            if strides[-1] != 1:
                raise self.fail(
                    "stride", f"{what}'s last dimension has stride {strides[-1]}"
                )
            g = self.group
            if what == "P" and (t.get_shape()[-1] != g or strides[-2] != g):
                raise self.fail(
                    "stride",
                    f"P's last two dimensions must be [.., N, {g}] with strides "
                    f"[.., {g}, 1] (64 contiguous bytes a block), got {t}",
                )


def _either(
    x: SSAValue, y: SSAValue, first: type[_P], second: type[_Q]
) -> tuple[_P | None, _Q | None]:
    """The owners of ``x`` and ``y`` as (a ``first``, a ``second``) in either order."""
    for u, v in ((x, y), (y, x)):
        p, q = u.owner, v.owner
        if isinstance(p, first) and isinstance(q, second):
            return p, q
    return None, None


def _bf16_load(value: SSAValue) -> tuple[affine.LoadOp, list[Operation]] | None:
    """The ``i16`` load that ``value`` widens to f32 as a bfloat16
    (``bitcast(shli(extui(load), 16))``) and the three ops between, or None."""
    cast = value.owner
    if not isinstance(cast, arith.BitcastOp) or cast.result.type != f32:
        return None
    shift = cast.input.owner
    if not isinstance(shift, arith.ShLIOp) or _constant(shift.rhs) != 16:
        return None
    ext = shift.lhs.owner
    if not isinstance(ext, arith.ExtUIOp) or ext.result.type != i32:
        return None
    load = ext.input.owner
    if not isinstance(load, affine.LoadOp):
        return None
    return load, [cast, shift, ext]


def _constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp):
        attr = owner.value
        data = getattr(attr, "value", None)
        return getattr(data, "data", None)
    return None


def _moves_with_j(load: affine.LoadOp, r_loop: affine.ForOp) -> bool:
    """Whether ``load``'s index uses the column loop (``r_loop``'s parent)."""
    j_loop = r_loop.parent_op()
    return isinstance(j_loop, affine.ForOp) and iv(j_loop) in load.indices


def _index(op: affine.LoadOp | affine.StoreOp) -> tuple[object, ...]:
    return (op.map.data, tuple(op.indices))


def _element(t: Attribute) -> Attribute | None:
    return t.get_element_type() if isinstance(t, MemRefType) else None


def _loop_name(loop: affine.ForOp) -> str:
    return str(loop_name(loop))
