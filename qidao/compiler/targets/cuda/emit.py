"""The CUDA C emitter: a ``schedule``-stage module -> CUDA C + a launch plan.

Input: the kernels as affine loop nests on memrefs (after the schedule; no
``expand-math``: ``math.exp`` becomes CUDA's ``expf``), and the host ``@main`` that
calls them. Output: a :class:`qidao.runtime.cuda.CudaProgram`.

Launches. Each top-level loop nest of a kernel that holds GPU-bound loops
(``qd.bind``, see ``qidao/passes/schedule/bind.py``) is one ``extern "C" __global__``
function; a run of top-level ops without bound loops is one more, launched
``<<<1, 1>>>`` and marked ``serial`` in the plan (it runs, on one GPU thread; the
plan and ``qidao compile --emit cuda`` say so). A kernel that is one launch keeps
its name; otherwise the functions are ``<kernel>__<first loop>``. Pure top-level
ops (constants) are repeated in each function that uses them; any other value
that one launch computes and another uses is refused.

Code. A bound loop ``for i in [lb, ub) step s`` becomes ``i = lb + s * blockIdx.x``
(the launch has exactly the loop's extent on that axis), with a guard ``if (i <
...)`` only for the non-constant results of a ``min`` upper bound. Other loops are
C ``for`` loops (``iter_args`` as variables updated at the end of the body);
``affine.if`` an ``if``; ``affine.apply``/``min``/``max`` index arithmetic (``mod``,
``floordiv`` and ``ceildiv`` round as affine does, through small helpers).
``affine.load``/``store`` index a kernel parameter (``float* __restrict__`` when
the argument has ``llvm.noalias``, ``const`` when the launch never writes it) at
the memref type's offset plus the sum of stride × index, so strided layouts need
nothing more; views are the same pointer with their own type. ``memref.alloca``
(and ``alloc``) inside a kernel is a local C array: per thread, in registers or
local memory, except the staging buffers below. Indices are ``long long``.

Shared memory. Every thread of a launch runs the whole nest and takes one
iteration of each bound loop, so the code outside the ``threadIdx`` loops (the
serial loops between the ``blockIdx`` loops and the ``threadIdx`` loops, e.g. the
k-tile loop ``k_o`` of a tiled matmul) is run by all the threads of a block in
lock-step: the ``threadIdx`` loops already sit inside those serial loops. That code
is the same in every thread of a block: its values come from constants, ``blockIdx``
and loop counters, and from memory that ``bind``'s rule 4 keeps from changing under
it (no thread writes what it reads). A ``cache_read`` buffer placed there is staged
in ``__shared__`` memory, once per block instead of once per thread, when
(``staging.py``):

1. it is a ``memref.alloca`` followed by its copy loops ``<loop>_cr_i<d>`` (constant
   bounds from 0, ``min`` clips allowed, step 1) whose body stores a load into
   ``buffer[i0, ..., in]``, and every other use of it is a load;
2. it is inside a ``blockIdx`` loop (outside every ``blockIdx`` loop there is no
   block to share it) and outside every ``threadIdx`` loop, or inside
   ``threadIdx`` loops as *slices* (below);
3. the loops and ``affine.if`` around it are bounded by constants, loop counters
   and pure arithmetic on them (provably uniform, so every thread of the block
   reaches its barriers); a load or an ``iter_args`` value there is refused;
4. the staging buffers of one launch take at most 48 KiB (CUDA's static shared
   memory per block); more is refused.

The copy loops then run cooperatively: the points of the flattened copy (``q =
i0 * n1 * ... + in``; clipped points skipped by a guard) are dealt out to the
block's threads, thread ``qd_tid = threadIdx.x + blockDim.x * (threadIdx.y +
blockDim.y * threadIdx.z)`` taking ``q = qd_tid``, ``qd_tid + threads``, ... (the
block's shape is the launch's constant). A ``__syncthreads()`` follows each run of
copies (before any read); when a serial loop is around the buffer (its block runs
again, and the next copy would overwrite a tile other threads still read), another
one ends the block that holds it. Two barriers merge: the one after a copy waits
for the copy at the top of a serial loop right after it that runs at least once
(``x_pack`` at ``k_o_o``, then ``w_pack`` at the top of ``k_o_i``: one barrier
after both), and the one ending a block is left out when the block's last
statement already was a barrier every thread ran (closing a loop that runs at
least once). Barriers sit only in that uniform code, never inside a guarded
``threadIdx`` loop, so no thread skips one (the guard of a ``blockIdx`` loop is
the same for the whole block). Refused: a staging buffer that breaks rule 3 or 4,
with a ``CudaEmitError`` naming the kernel, the loop and the reason. Staging
arrays are ``__align__(16)``, so that nvcc loads four floats at a time where a
thread reads them in a row.

Slices. Inside ``threadIdx`` loops a ``cache_read`` buffer is each thread's own
tile: the register-tiled matmul (``defaults.py``) puts its ``k_o`` loop inside
the thread loops, and thread ``(ty, tx)`` packs rows ``ty * TM ..`` of A's tile
and columns ``tx * TN ..`` of B's. Threads with the same ``ty`` pack the same
rows, and the slices of all ``ty`` side by side are the block's tile: so the
buffer is staged as one ``__shared__`` array of every slice, the copy dealt out
to the block's threads as above, and each thread reads its slice in it
(``staging.py`` says when: no guard on the thread loops around it, uniform code
between, a source the launch does not write, each thread counter moving one
dimension by exactly the slice's extent, and some threads sharing a slice). The
sliced dimensions are stored last, so a thread's ``TM`` rows of A at one ``k``
are contiguous (two 16-byte loads). Matmul 2048, ``x`` @ ``w``, 16 x 16 threads::

    __shared__ __align__(16) float x_pack[1024];  // 128 x 8, stored in dimension
        // order [1, 0]: each thread's 8 x 8 slice (16 slices along dimension 0
        // by i_o_i), staged by the block's threads
    for (long long k_o_o_cr = qd_tid; k_o_o_cr < 1024; k_o_o_cr += 256) {
      const long long k_o_o_cr_i0_s = k_o_o_cr / 8;
      const long long i_o_i_s = k_o_o_cr_i0_s / 8;      // whose slice
      const long long k_o_o_cr_i0 = k_o_o_cr_i0_s % 8;  // where in it
      const long long k_o_o_cr_i1 = k_o_o_cr % 8;
      const float v64 = x[(k_o_o_cr_i0 + i_o_o * 128 + i_o_i_s * 8) * 2048
                          + k_o_o_cr_i1 + k_o_o * 8];
      x_pack[i_o_i_s * 8 + k_o_o_cr_i0 + k_o_o_cr_i1 * 128] = v64;
    }
    ...
    const float v66 = x_pack[i_o_i * 8 + (k_o_i * 8 + k_i) * 128];  // its row 0

Soundness. ``bind`` checks each binding when it is made, but the primitives
applied after it (``split``, ``cache_read``, ...) do not rerun its checks, so the
emitter reruns them on every launch's final nest (``check_gpu_nest``) and refuses
with ``bind``'s reason. Rule 4 of ``bind`` (code outside the innermost bound loop
writes only buffers allocated in the nest) treats a staging buffer as each
thread's own; sharing it is still race-free, since each element is copied by one
thread, read only after the barrier that follows the copy, and copied again only
after the barrier that ends the block holding it. A slice staged for several
threads holds what each of them would have copied (the same loads of a buffer
the launch does not write), so sharing it changes no value either.

Refused with a ``CudaEmitError`` naming the kernel and the op: vector ops
(``vectorize`` is a CPU primitive), dynamic shapes or layouts, non-memref kernel
arguments, ops the table below does not know.

Before (a 64x48 @ 48x80 matmul after ``split`` of i, j, k by 16, ``reorder(i_o, j_o,
k_o, i_i, j_i, k_i)``, ``bind`` of i_o, j_o, i_i, j_i to blockIdx.y, blockIdx.x,
threadIdx.y, threadIdx.x, ``cache_read(j_o, "x")`` and ``cache_read(k_o, "w")``)::

    affine.for %k_o = 0 to 3 {
      %w_pack = memref.alloca() : memref<16x16xf32>
      affine.for %k_o_cr_i0 = 0 to 16 {
        affine.for %k_o_cr_i1 = 0 to 16 {
          %1 = affine.load %w[%k_o_cr_i0 + %k_o * 16, %k_o_cr_i1 + %j_o * 16]
          affine.store %1, %w_pack[%k_o_cr_i0, %k_o_cr_i1] : memref<16x16xf32>
      ...
      affine.for %i_i = 0 to 16 { affine.for %j_i = 0 to 16 { ... %w_pack ... }
          {qd.bind = "threadIdx.x"} } {qd.bind = "threadIdx.y"}
    } {qd.loop = "k_o"}

After::

    for (long long k_o = 0; k_o < 3; ++k_o) {
      __shared__ float w_pack[256];  // 16 x 16: staged by the block's threads
      for (long long k_o_cr = qd_tid; k_o_cr < 256; k_o_cr += 256) {
        const long long k_o_cr_i0 = k_o_cr / 16;
        const long long k_o_cr_i1 = k_o_cr % 16;
        const float v1 = w[(k_o_cr_i0 + k_o * 16) * 80 + k_o_cr_i1 + j_o * 16];
        w_pack[k_o_cr_i0 * 16 + k_o_cr_i1] = v1;
      }
      __syncthreads();  // w_pack staged
      {  // loop 'i_i' bound to threadIdx.y
        ...
      }
      __syncthreads();  // the next copy into w_pack waits for every thread's reads
    }
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import affine, arith, func, memref
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineConstraintKind,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.traits import is_side_effect_free

from qidao.compiler.targets.cuda.staging import (
    MAX_SHARED_BYTES,
    Staging,
    StagingError,
    find_staging,
)
from qidao.passes.schedule.bind import (
    BLOCK_AXES,
    bound_axis,
    check_gpu_nest,
    gpu_loops,
    launch_extent,
)
from qidao.passes.schedule.loops.errors import ScheduleError
from qidao.passes.schedule.loops.nest import (
    KERNEL_ATTR,
    MEMREF_VIEWS,
    constant_bounds,
    loop_name,
    root_buffer,
)
from qidao.runtime.cuda import BufferSpec, CudaProgram, Launch
from qidao.runtime.executor import TensorSpec

ENTRY = "main"
TID = "qd_tid"
"""The C name of the flattened thread index in a launch with staging buffers."""
MAX_LOCAL_BYTES = 512 * 1024
"""CUDA's limit on local memory per thread; a bigger local array is refused."""

PREAMBLE = """\
// Generated by qidao (qidao/compiler/targets/cuda/emit.py).
// Affine integer division and modulo round toward minus infinity.
__device__ __forceinline__ long long qd_floordiv(long long a, long long b) {
  long long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ long long qd_ceildiv(long long a, long long b) {
  return -qd_floordiv(-a, b);
}
__device__ __forceinline__ long long qd_mod(long long a, long long b) {
  long long r = a % b;
  return r < 0 ? r + b : r;
}
__device__ __forceinline__ long long qd_min(long long a, long long b) {
  return a < b ? a : b;
}
__device__ __forceinline__ long long qd_max(long long a, long long b) {
  return a > b ? a : b;
}
// arith.maximumf/minimumf propagate NaN (fmaxf/fminf do not).
__device__ __forceinline__ float qd_maximumf(float a, float b) {
  return a != a ? a : (b != b ? b : fmaxf(a, b));
}
__device__ __forceinline__ float qd_minimumf(float a, float b) {
  return a != a ? a : (b != b ? b : fminf(a, b));
}
__device__ __forceinline__ double qd_maximum(double a, double b) {
  return a != a ? a : (b != b ? b : fmax(a, b));
}
__device__ __forceinline__ double qd_minimum(double a, double b) {
  return a != a ? a : (b != b ? b : fmin(a, b));
}
"""


class CudaEmitError(ValueError):
    """The module cannot be emitted as CUDA C: names the kernel, the op, the reason."""


# --- types and constants ----------------------------------------------------------


def c_type(t: Attribute, unsigned: bool = False) -> str:
    """The C type of a scalar type (``f32`` -> ``float``, ``index`` -> ``long long``)."""
    if isinstance(t, Float32Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, IndexType):
        return "unsigned long long" if unsigned else "long long"
    if isinstance(t, IntegerType):
        width = t.width.data
        names = {1: "bool", 8: "char", 16: "short", 32: "int", 64: "long long"}
        if width not in names:
            raise CudaEmitError(f"no C type for {t}")
        if width == 1:
            return "bool"
        base = names[width]
        if width == 8:
            return "unsigned char" if unsigned else "signed char"
        return f"unsigned {base}" if unsigned else base
    raise CudaEmitError(f"no C type for {t}")


def float_literal(value: float, t: Attribute) -> str:
    """An exact C literal for a float of type ``t``."""
    if isinstance(t, Float32Type):
        if math.isnan(value) or math.isinf(value):
            bits = int(np.array(value, np.float32).view(np.uint32))
            return f"__int_as_float({bits:#010x})"
        text = repr(float(np.float32(value)))
        short = str(np.float32(value))
        if float(np.float32(float(short))) == float(np.float32(value)):
            text = short
        if "e" not in text and "." not in text and "inf" not in text:
            text += ".0"
        return f"{text}f"
    if math.isnan(value) or math.isinf(value):
        bits = int(np.array(value, np.float64).view(np.uint64))
        return f"__longlong_as_double({bits:#018x}ULL)"
    text = repr(float(value))
    return text if ("." in text or "e" in text) else text + ".0"


def int_literal(value: int, t: Attribute) -> str:
    if isinstance(t, IntegerType) and t.width.data == 1:
        return "true" if value else "false"
    return f"{value}LL" if abs(value) > 2**31 - 1 else str(value)


def layout_of(t: MemRefType[Attribute], kernel: str) -> tuple[int, list[int]]:
    """The static offset and strides of a memref type."""
    strides = t.get_strides()
    offset = t.get_offset()
    if strides is None or offset is None or any(s is None for s in strides):
        raise CudaEmitError(f"kernel '{kernel}': {t} has a dynamic layout")
    if any(d < 0 for d in t.get_shape()):
        raise CudaEmitError(f"kernel '{kernel}': {t} has a dynamic shape")
    return offset, [int(s) for s in strides if s is not None]


def span_of(t: MemRefType[Attribute], kernel: str) -> int:
    """Elements from the base pointer to one past the last element of ``t``."""
    offset, strides = layout_of(t, kernel)
    shape = t.get_shape()
    if any(n == 0 for n in shape):
        return offset
    return offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + 1


# --- affine expressions -----------------------------------------------------------


def affine_c(expr: AffineExpr, dims: Sequence[str], syms: Sequence[str]) -> str:
    """``expr`` as a C expression over ``long long`` names."""
    if isinstance(expr, AffineConstantExpr):
        return str(expr.value)
    if isinstance(expr, AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, AffineSymExpr):
        return syms[expr.position]
    assert isinstance(expr, AffineBinaryOpExpr)
    lhs = affine_c(expr.lhs, dims, syms)
    rhs_expr = expr.rhs
    match expr.kind:
        case AffineBinaryOpKind.Add:
            lhs_expr = expr.lhs
            if (
                isinstance(lhs_expr, AffineBinaryOpExpr)
                and lhs_expr.kind == AffineBinaryOpKind.Mul
                and isinstance(lhs_expr.rhs, AffineConstantExpr)
                and lhs_expr.rhs.value < 0
            ):  # -256 * o + 1000 reads 1000 - o * 256
                scaled = _factor(affine_c(lhs_expr.lhs, dims, syms))
                factor = -lhs_expr.rhs.value
                term = scaled if factor == 1 else f"{scaled} * {factor}"
                return f"{affine_c(rhs_expr, dims, syms)} - {term}"
            if isinstance(rhs_expr, AffineConstantExpr) and rhs_expr.value < 0:
                return f"{lhs} - {-rhs_expr.value}"
            if (
                isinstance(rhs_expr, AffineBinaryOpExpr)
                and rhs_expr.kind == AffineBinaryOpKind.Mul
                and isinstance(rhs_expr.rhs, AffineConstantExpr)
                and rhs_expr.rhs.value == -1
            ):
                return f"{lhs} - {_factor(affine_c(rhs_expr.lhs, dims, syms))}"
            return f"{lhs} + {affine_c(rhs_expr, dims, syms)}"
        case AffineBinaryOpKind.Mul:
            rhs = affine_c(rhs_expr, dims, syms)
            if isinstance(rhs_expr, AffineConstantExpr) and rhs_expr.value == -1:
                return f"-{_factor(lhs)}"
            return f"{_factor(lhs)} * {_factor(rhs)}"
        case AffineBinaryOpKind.Mod:
            return f"qd_mod({lhs}, {affine_c(rhs_expr, dims, syms)})"
        case AffineBinaryOpKind.FloorDiv:
            return f"qd_floordiv({lhs}, {affine_c(rhs_expr, dims, syms)})"
        case AffineBinaryOpKind.CeilDiv:
            return f"qd_ceildiv({lhs}, {affine_c(rhs_expr, dims, syms)})"
    raise CudaEmitError(f"unknown affine expression {expr}")


def _factor(text: str) -> str:
    """``text`` parenthesized when it is a sum or a difference."""
    depth = 0
    for k, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch in "+-" and k > 0 and text[k - 1] == " ":
            return f"({text})"
    return text


def _fold(kind: str, items: list[str]) -> str:
    """``qd_min(a, qd_min(b, c))`` for several results; the item for one."""
    result = items[-1]
    for item in reversed(items[:-1]):
        result = f"qd_{kind}({item}, {result})"
    return result


# --- op tables --------------------------------------------------------------------

_BINARY = {
    arith.AddfOp: "+",
    arith.SubfOp: "-",
    arith.MulfOp: "*",
    arith.DivfOp: "/",
    arith.AddiOp: "+",
    arith.SubiOp: "-",
    arith.MuliOp: "*",
    arith.DivSIOp: "/",
    arith.RemSIOp: "%",
    arith.AndIOp: "&",
    arith.OrIOp: "|",
    arith.XOrIOp: "^",
    arith.ShLIOp: "<<",
    arith.ShRSIOp: ">>",
}
_UNSIGNED_BINARY = {arith.DivUIOp: "/", arith.RemUIOp: "%", arith.ShRUIOp: ">>"}
_CMPI = ["==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="]
_CMPF = {
    "oeq": "{a} == {b}",
    "ogt": "{a} > {b}",
    "oge": "{a} >= {b}",
    "olt": "{a} < {b}",
    "ole": "{a} <= {b}",
    "one": "({a} < {b} || {a} > {b})",
    "ord": "({a} == {a} && {b} == {b})",
    "ueq": "!({a} < {b} || {a} > {b})",
    "ugt": "!({a} <= {b})",
    "uge": "!({a} < {b})",
    "ult": "!({a} >= {b})",
    "ule": "!({a} > {b})",
    "une": "{a} != {b}",
    "uno": "({a} != {a} || {b} != {b})",
    "false": "false",
    "true": "true",
}
_CMPF_NAMES = list(arith.CMPF_COMPARISON_OPERATIONS)
_MATH = {
    mathd.ExpOp: "exp",
    mathd.Exp2Op: "exp2",
    mathd.ExpM1Op: "expm1",
    mathd.LogOp: "log",
    mathd.Log2Op: "log2",
    mathd.Log10Op: "log10",
    mathd.Log1pOp: "log1p",
    mathd.SqrtOp: "sqrt",
    mathd.RsqrtOp: "rsqrt",
    mathd.TanhOp: "tanh",
    mathd.SinOp: "sin",
    mathd.CosOp: "cos",
    mathd.TanOp: "tan",
    mathd.ErfOp: "erf",
    mathd.AbsFOp: "fabs",
    mathd.FloorOp: "floor",
    mathd.CeilOp: "ceil",
    mathd.RoundOp: "round",
    mathd.TruncOp: "trunc",
    mathd.PowFOp: "pow",
    mathd.FmaOp: "fma",
    mathd.Atan2Op: "atan2",
    mathd.CopySignOp: "copysign",
}
_CASTS = (
    arith.IndexCastOp,
    arith.SIToFPOp,
    arith.FPToSIOp,
    arith.ExtFOp,
    arith.TruncFOp,
    arith.ExtSIOp,
    arith.TruncIOp,
)


def _math_name(base: str, t: Attribute) -> str:
    return f"{base}f" if isinstance(t, Float32Type) else base


# --- one __global__ function ------------------------------------------------------


@dataclass
class _Pointer:
    name: str
    type: MemRefType[Attribute]
    staging: Staging | None = None
    """A ``__shared__`` staging buffer: its layout is ``staging.shape`` with
    ``staging.strides``, and a thread's slice starts at ``counter * extent``
    along each sliced dimension (``Staging.slices``)."""


class _Writer:
    """Writes the C body of one launch of one kernel."""

    def __init__(
        self,
        fn: func.FuncOp,
        kernel: str,
        staging: dict[memref.AllocaOp, Staging] | None = None,
        threads: int = 1,
    ) -> None:
        self.fn = fn
        self.kernel = kernel
        self.lines: list[str] = []
        self.depth = 1
        self.names: dict[SSAValue, str] = {}
        self.pointers: dict[SSAValue, _Pointer] = {}
        self.taken: set[str] = {TID}
        self.counter = 0
        self.staging = staging or {}
        self.copies = {s.loops[0]: s for s in self.staging.values()}
        self.repeated = {s.block for s in self.staging.values() if s.repeats}
        self.threads = threads
        self.carried: list[str] = []
        """Staging buffers copied just before the loop being entered, whose
        barrier the copies at the top of its body give (``stages_first``)."""
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
        while name in self.taken or name in _RESERVED:
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

    # -- memory ---------------------------------------------------------------

    def access(
        self, memref_value: SSAValue, indices: Sequence[str], op: Operation
    ) -> str:
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
                terms.append(f"{_factor(self.name(counter))} * {start}")
        for index, stride in zip(indices, strides, strict=True):
            if index == "0" or stride == 0:
                continue
            terms.append(index if stride == 1 else f"{_factor(index)} * {stride}")
        return f"{pointer.name}[{' + '.join(terms) or '0'}]"

    def map_indices(
        self, affine_map: AffineMap, operands: Sequence[SSAValue]
    ) -> list[str]:
        names = [self.name(v) for v in operands]
        dims, syms = names[: affine_map.num_dims], names[affine_map.num_dims :]
        return [affine_c(r, dims, syms) for r in affine_map.results]

    # -- ops ------------------------------------------------------------------

    def block(self, block: Block) -> None:
        """The ops of ``block``; a ``__syncthreads()`` after each run of staging
        copies, and one at the end when a staging buffer of this block is copied
        again by the next iteration of a loop around it."""
        # staging buffers written since the last barrier (with those of the block
        # around, when its barrier was left to the copies at the top of this one)
        pending, self.carried = self.carried, []
        for op in block.ops:
            copy = self.copies.get(op) if isinstance(op, affine.ForOp) else None
            if copy is not None:
                source = root_buffer(copy.source)
                if any(source is s.alloca.memref for s in self.staging.values()):
                    self.barrier(pending)  # it copies a buffer staged just before
                self.staged_copy(copy)
                pending.append(self.pointers[copy.alloca.memref].name)
            elif isinstance(op, memref.AllocaOp) and op in self.staging:
                pass
            elif pending and self.stages_first(op):
                self.carried, pending = pending, []  # one barrier after both copies
            else:
                self.barrier(pending)
            self.op(op)
        self.barrier(pending)
        if block in self.repeated and not self.synced:
            # (when the last statement was a barrier that every thread ran after
            # its last read, this one would add nothing)
            staged = [
                self.pointers[s.alloca.memref].name
                for s in self.staging.values()
                if s.block is block and s.repeats
            ]
            self.line(
                f"__syncthreads();  // the next copy into {', '.join(staged)} waits "
                "for every thread's reads"
            )

    def barrier(self, pending: list[str]) -> None:
        if pending:
            self.line(f"__syncthreads();  // {', '.join(pending)} staged")
            pending.clear()

    def stages_first(self, op: Operation) -> bool:
        """True when ``op`` is a serial loop that runs at least once and begins
        with a staging copy: the barrier after the copies before it can wait for
        the barrier after that copy (one barrier for both)."""
        if not isinstance(op, affine.ForOp) or bound_axis(op) or op.inits:
            return False
        bounds = constant_bounds(op)
        first = op.body.block.first_op
        return (
            bounds is not None
            and bounds[1] > bounds[0]
            and isinstance(first, memref.AllocaOp)
            and first in self.staging
        )

    def op(self, op: Operation) -> None:
        if isinstance(op, affine.YieldOp | func.ReturnOp):
            return  # handled by the parent
        if isinstance(op, arith.ConstantOp):
            value = op.value
            if isinstance(value, FloatAttr):
                self.names[op.result] = float_literal(value.value.data, value.type)
            elif isinstance(value, IntegerAttr):
                self.names[op.result] = int_literal(value.value.data, value.type)
            else:
                raise self.fail(op, f"constant {value} is not a scalar")
            return
        if isinstance(op, affine.ForOp):
            if op not in self.copies:  # a staging copy is written by ``block``
                self.loop(op)
            return
        if isinstance(op, affine.IfOp):
            self.if_op(op)
            return
        if isinstance(op, affine.LoadOp):
            ref = self.access(op.memref, self.map_indices(op.map.data, op.indices), op)
            self.define(op.result, ref)
            return
        if isinstance(op, affine.StoreOp):
            ref = self.access(op.memref, self.map_indices(op.map.data, op.indices), op)
            self.line(f"{ref} = {self.name(op.value)};")
            return
        if isinstance(op, memref.LoadOp):
            indices = [self.name(v) for v in op.indices]
            self.define(op.res, self.access(op.memref, indices, op))
            return
        if isinstance(op, memref.StoreOp):
            indices = [self.name(v) for v in op.indices]
            self.line(f"{self.access(op.memref, indices, op)} = {self.name(op.value)};")
            return
        if isinstance(op, affine.ApplyOp):
            (expr,) = self.map_indices(op.map.data, op.mapOperands)
            self.define(op.result, expr)
            return
        if isinstance(op, affine.MinOp):
            items = self.map_indices(op.map.data, op.operands)
            self.define(op.result, _fold("min", items))
            return
        if isinstance(op, memref.AllocaOp) and op in self.staging:
            staging = self.staging[op]
            t = op.memref.type
            assert isinstance(t, MemRefType)
            elem = c_type(t.get_element_type())
            name = self.fresh(op.memref.name_hint, "buf")
            shape = " x ".join(map(str, staging.shape))
            what = "staged by the block's threads"
            if staging.slices:
                slices = ", ".join(
                    f"{n} slices along dimension {d} by {self.name(counter)}"
                    for d, (counter, n) in staging.slices.items()
                )
                what = f"each thread's {' x '.join(map(str, staging.extents))} slice ({slices}), {what}"
            if staging.order != sorted(staging.order):
                shape += f", stored in dimension order {staging.order}"
            self.line(
                f"__shared__ __align__(16) {elem} {name}[{math.prod(staging.shape)}];"
                f"  // {shape}: {what}"
            )
            self.pointers[op.memref] = _Pointer(name, t, staging)
            return
        if isinstance(op, memref.AllocaOp | memref.AllocOp):
            t = op.memref.type
            assert isinstance(t, MemRefType)
            size = span_of(t, self.kernel)
            elem = c_type(t.get_element_type())
            if (
                size * np.dtype(_np_dtype(t.get_element_type())).itemsize
                > MAX_LOCAL_BYTES
            ):
                raise self.fail(
                    op,
                    f"a local array of {size} elements is over CUDA's "
                    f"{MAX_LOCAL_BYTES} bytes of local memory per thread",
                )
            name = self.fresh(op.memref.name_hint, "buf")
            self.line(f"{elem} {name}[{max(size, 1)}];")
            self.pointers[op.memref] = _Pointer(name, t)
            return
        if isinstance(op, memref.DeallocOp):
            return
        if isinstance(op, MEMREF_VIEWS):
            source = self.pointers.get(op.operands[0])
            view_type = op.results[0].type
            if source is None or not isinstance(view_type, MemRefType):
                raise self.fail(op, "views a memref the emitter cannot trace")
            layout_of(view_type, self.kernel)
            if isinstance(op, memref.SubviewOp) and len(op.operands) > 1:
                raise self.fail(op, "dynamic subviews are not supported")
            self.pointers[op.results[0]] = _Pointer(source.name, view_type)
            return
        if op.dialect_name() in ("vector",):
            raise self.fail(
                op,
                "vector ops are not emitted: vectorize is a CPU primitive; bind "
                "the loop to threadIdx instead",
            )
        if len(op.results) != 1 or op.regions:
            raise self.fail(op, "the CUDA emitter does not know this op")
        self.define(op.results[0], self.expression(op))

    def expression(self, op: Operation) -> str:
        args = [self.name(v) for v in op.operands]
        kind = type(op)
        result_type = op.results[0].type
        if kind in _BINARY:
            return f"{args[0]} {_BINARY[kind]} {args[1]}"
        if kind in _UNSIGNED_BINARY:
            u = c_type(op.operands[0].type, unsigned=True)
            return f"({c_type(result_type)})(({u}){args[0]} {_UNSIGNED_BINARY[kind]} ({u}){args[1]})"
        if isinstance(op, arith.NegfOp):
            return f"-{args[0]}"
        if isinstance(op, arith.MaximumfOp | arith.MinimumfOp):
            which = "maximum" if isinstance(op, arith.MaximumfOp) else "minimum"
            return f"qd_{_math_name(which, result_type)}({args[0]}, {args[1]})"
        if isinstance(op, arith.MaxnumfOp | arith.MinnumfOp):
            which = "fmax" if isinstance(op, arith.MaxnumfOp) else "fmin"
            return f"{_math_name(which, result_type)}({args[0]}, {args[1]})"
        if isinstance(op, arith.MaxSIOp | arith.MinSIOp):
            cmp = ">" if isinstance(op, arith.MaxSIOp) else "<"
            return f"{args[0]} {cmp} {args[1]} ? {args[0]} : {args[1]}"
        if isinstance(op, arith.FloorDivSIOp):
            return f"({c_type(result_type)})qd_floordiv({args[0]}, {args[1]})"
        if isinstance(op, arith.CeilDivSIOp):
            return f"({c_type(result_type)})qd_ceildiv({args[0]}, {args[1]})"
        if isinstance(op, arith.CmpiOp):
            predicate = op.predicate.value.data
            if predicate >= 6:
                u = c_type(op.operands[0].type, unsigned=True)
                return f"({u}){args[0]} {_CMPI[predicate]} ({u}){args[1]}"
            return f"{args[0]} {_CMPI[predicate]} {args[1]}"
        if isinstance(op, arith.CmpfOp):
            name = _CMPF_NAMES[op.predicate.value.data]
            return _CMPF[name].format(a=args[0], b=args[1])
        if isinstance(op, arith.SelectOp):
            return f"{args[0]} ? {args[1]} : {args[2]}"
        if isinstance(op, _CASTS):
            return f"({c_type(result_type)}){args[0]}"
        if isinstance(op, arith.UIToFPOp):
            u = c_type(op.operands[0].type, unsigned=True)
            return f"({c_type(result_type)})({u}){args[0]}"
        if isinstance(op, arith.FPToUIOp):
            u = c_type(result_type, unsigned=True)
            return f"({c_type(result_type)})({u}){args[0]}"
        if isinstance(op, arith.ExtUIOp):
            u = c_type(op.operands[0].type, unsigned=True)
            return f"({c_type(result_type)})({u}){args[0]}"
        if kind in _MATH:
            return f"{_math_name(_MATH[kind], result_type)}({', '.join(args)})"
        raise self.fail(op, "the CUDA emitter does not know this op")

    # -- structure ------------------------------------------------------------

    def loop(self, op: affine.ForOp) -> None:
        name = self.fresh(loop_name(op) or op.body.block.args[0].name_hint, "i")
        self.names[op.body.block.args[0]] = name
        axis = bound_axis(op)
        lower = self.map_indices(op.lowerBoundMap.data, op.lowerBoundOperands)
        upper = self.map_indices(op.upperBoundMap.data, op.upperBoundOperands)
        step = op.step.value.data
        carried: list[str] = []
        for init, arg, result in zip(
            op.inits, op.body.block.args[1:], op.results, strict=True
        ):
            var = self.fresh(arg.name_hint or result.name_hint, "acc")
            self.line(f"{c_type(arg.type)} {var} = {self.name(init)};")
            self.names[arg] = var
            self.names[result] = var
            carried.append(var)
        if axis is not None:
            lb = lower[0]
            offset = (
                f"{step} * (long long){axis}" if step != 1 else f"(long long){axis}"
            )
            start = offset if lb == "0" else f"{lb} + {offset}"
            self.line(f"{{  // loop '{loop_name(op)}' bound to {axis}")
            self.depth += 1
            self.line(f"const long long {name} = {start};")
            guards = [
                f"{name} < {u}"
                for u, r in zip(upper, op.upperBoundMap.data.results, strict=True)
                if not isinstance(r, AffineConstantExpr)
            ]
            if guards:
                self.line(f"if ({' && '.join(guards)}) {{")
                self.depth += 1
        else:
            lb = _fold("max", lower)
            ub = _fold("min", upper)
            increment = f"++{name}" if step == 1 else f"{name} += {step}"
            self.line(f"for (long long {name} = {lb}; {name} < {ub}; {increment}) {{")
            self.depth += 1
            guards = []
        self.block(op.body.block)
        self.assign_yield(op.body.block, carried)
        synced = self.synced
        if axis is not None and guards:
            self.depth -= 1
            self.line("}")
        self.depth -= 1
        self.line("}")
        bounds = constant_bounds(op)
        runs = axis is not None or (bounds is not None and bounds[1] > bounds[0])
        self.synced = synced and runs and not guards

    def staged_copy(self, staging: Staging) -> None:
        """The copy nest of a staging buffer, its points spread over the block's
        threads: point ``q`` is run by thread ``q % threads``."""
        threads = self.threads
        shape = staging.shape
        total = math.prod(shape)
        q = self.fresh(f"{staging.loop}_cr")
        self.line(f"for (long long {q} = {TID}; {q} < {total}; {q} += {threads}) {{")
        self.depth += 1
        names = []
        inner = total
        saved = {c: self.names[c] for c, _ in staging.slices.values()}
        for d, (loop, extent) in enumerate(zip(staging.loops, shape, strict=True)):
            inner //= extent
            name = self.fresh(loop_name(loop), "i")
            self.names[loop.body.block.args[0]] = name
            names.append(name)
            index = q if inner == 1 else f"{q} / {inner}"
            if extent == 1:
                index = "0"
            elif inner * extent != total:
                index = f"({index}) % {extent}" if inner != 1 else f"{q} % {extent}"
            if d in staging.slices:  # which slice, and where in it
                counter, _ = staging.slices[d]
                slice_extent = staging.extents[d]
                point = self.fresh(f"{name}_s")
                self.line(f"const long long {point} = {index};")
                which = self.fresh(f"{saved[counter]}_s")
                self.line(f"const long long {which} = {point} / {slice_extent};")
                self.names[counter] = which
                index = f"{point} % {slice_extent}"
            self.line(f"const long long {name} = {index};")
        guards = []
        for loop, name in zip(staging.loops, names, strict=True):
            upper = self.map_indices(loop.upperBoundMap.data, loop.upperBoundOperands)
            guards += [
                f"{name} < {u}"
                for u, r in zip(upper, loop.upperBoundMap.data.results, strict=True)
                if not isinstance(r, AffineConstantExpr)
            ]
        if guards:
            self.line(f"if ({' && '.join(guards)}) {{")
            self.depth += 1
        for op in staging.loops[-1].body.block.ops:
            self.op(op)
        if guards:
            self.depth -= 1
            self.line("}")
        self.depth -= 1
        self.line("}")
        self.names.update(saved)

    def assign_yield(self, block: Block, targets: Sequence[str]) -> None:
        if not targets:
            return
        terminator = block.last_op
        assert terminator is not None
        values = [self.name(v) for v in terminator.operands]
        if len(targets) == 1:
            if values[0] != targets[0]:
                self.line(f"{targets[0]} = {values[0]};")
            return
        temps = []
        for value, target in zip(values, targets, strict=True):
            temp = self.fresh(f"{target}_next")
            self.line(f"const auto {temp} = {value};")
            temps.append(temp)
        for temp, target in zip(temps, targets, strict=True):
            self.line(f"{target} = {temp};")

    def if_op(self, op: affine.IfOp) -> None:
        condition = op.properties["condition"]
        affine_set = condition.data  # type: ignore[attr-defined]
        names = [self.name(v) for v in op.operands]
        dims, syms = names[: affine_set.num_dims], names[affine_set.num_dims :]
        tests = []
        for constraint in affine_set.constraints:
            lhs = affine_c(constraint.lhs, dims, syms)
            rhs = affine_c(constraint.rhs, dims, syms)
            sign = {
                AffineConstraintKind.ge: ">=",
                AffineConstraintKind.le: "<=",
                AffineConstraintKind.eq: "==",
            }[constraint.kind]
            tests.append(f"{lhs} {sign} {rhs}")
        results = []
        for result in op.results:
            var = self.fresh(result.name_hint, "r")
            self.line(f"{c_type(result.type)} {var};")
            self.names[result] = var
            results.append(var)
        self.line(f"if ({' && '.join(tests) or 'true'}) {{")
        self.depth += 1
        self.block(op.then_region.block)
        self.assign_yield(op.then_region.block, results)
        self.depth -= 1
        if op.else_region.blocks and (list(op.else_region.block.ops)[:-1] or results):
            self.line("} else {")
            self.depth += 1
            self.block(op.else_region.block)
            self.assign_yield(op.else_region.block, results)
            self.depth -= 1
        self.line("}")


_RESERVED = frozenset(
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


def _np_dtype(t: Attribute) -> str:
    if isinstance(t, Float32Type):
        return "float32"
    if isinstance(t, Float64Type):
        return "float64"
    if isinstance(t, IndexType):
        return "int64"
    if isinstance(t, IntegerType):
        return {1: "bool", 8: "int8", 16: "int16", 32: "int32", 64: "int64"}[
            t.width.data
        ]
    raise CudaEmitError(f"no NumPy dtype for {t}")


# --- kernels -> launches ------------------------------------------------------------


@dataclass
class KernelLaunch:
    """One ``__global__`` function of a kernel: its source and launch shape."""

    function: str
    source: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    params: tuple[str, ...]
    serial: bool


def _segments(fn: func.FuncOp) -> tuple[list[Operation], list[list[Operation]]]:
    """The kernel's replicated pure ops, and its top-level ops split into launches."""
    replicated: list[Operation] = []
    known: set[SSAValue] = set(fn.body.block.args)
    segments: list[list[Operation]] = []
    serial: list[Operation] = []
    for op in fn.body.block.ops:
        if isinstance(op, func.ReturnOp):
            continue
        pure = is_side_effect_free(op) and not op.regions
        if pure and all(v in known for v in op.operands):
            replicated.append(op)
            known.update(op.results)
            continue
        if gpu_loops(op):
            if serial:
                segments.append(serial)
                serial = []
            segments.append([op])
        else:
            serial.append(op)
    if serial:
        segments.append(serial)
    return replicated, segments


def _used(ops: Sequence[Operation]) -> set[SSAValue]:
    used: set[SSAValue] = set()
    for top in ops:
        for op in top.walk():
            used.update(op.operands)
    return used


def _written(ops: Sequence[Operation]) -> set[SSAValue]:
    """The roots of the memrefs stored to in ``ops``."""
    roots: set[SSAValue] = set()
    for top in ops:
        for op in top.walk():
            if isinstance(op, affine.StoreOp | memref.StoreOp):
                roots.add(root_buffer(op.memref))
    return roots


def emit_kernel(fn: func.FuncOp) -> list[KernelLaunch]:
    """The ``__global__`` functions of one kernel, in launch order."""
    kernel = fn.sym_name.data
    replicated, segments = _segments(fn)
    if not segments:
        segments = [[]]
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else None
    launches = []
    for k, segment in enumerate(segments):
        bound = [loop for top in segment for loop in gpu_loops(top)]
        grid, block = [1, 1, 1], [1, 1, 1]
        for loop in bound:
            axis = str(bound_axis(loop))
            dims = grid if axis in BLOCK_AXES else block
            dims["xyz".index(axis[-1])] = launch_extent(loop) or 1
        if len(segments) == 1:
            function = kernel
        else:
            first = next(
                (
                    loop_name(op)
                    for top in segment
                    for op in top.walk()
                    if loop_name(op)
                ),
                None,
            )
            function = f"{kernel}__{first or f'part{k}'}"
        if bound:
            _recheck(fn, kernel, segment, bound)
        try:
            staging = find_staging(fn, kernel, function, segment)
        except StagingError as err:
            raise CudaEmitError(str(err)) from err
        writer = _Writer(fn, kernel, staging, math.prod(block))
        written = _written(segment)
        params = []
        for i, arg in enumerate(fn.body.block.args):
            t = arg.type
            if not isinstance(t, MemRefType):
                raise CudaEmitError(
                    f"kernel '{kernel}': argument #{i} is {t}, not a memref"
                )
            name = writer.fresh(arg.name_hint, f"arg{i}")
            entry = attrs[i] if attrs is not None else None
            noalias = isinstance(entry, DictionaryAttr) and "llvm.noalias" in entry.data
            elem = c_type(t.get_element_type())
            const = "" if arg in written else "const "
            restrict = " __restrict__" if noalias else ""
            params.append((f"{const}{elem}*", f"{const}{elem}*{restrict} {name}"))
            writer.pointers[arg] = _Pointer(name, t)
        if staging:
            tid = ["(long long)threadIdx.x"]
            if block[1] > 1:
                tid.append(f"{block[0]} * (long long)threadIdx.y")
            if block[2] > 1:
                tid.append(f"{block[0] * block[1]} * (long long)threadIdx.z")
            writer.line(f"const long long {TID} = {' + '.join(tid)};")
        used = _used(segment)
        needed = _closure(replicated, used)
        for op in replicated:
            if op in needed:
                writer.op(op)
        for op in segment:
            writer.op(op)
        signature = ", ".join(p for _, p in params)
        head = []
        if not bound:
            head.append("// serial: no loop is bound to a GPU axis; launch <<<1, 1>>>")
        else:
            shape = ", ".join(
                f"{loop_name(loop)} -> {bound_axis(loop)} ({launch_extent(loop)})"
                for loop in bound
            )
            head.append(f"// grid {tuple(grid)}, block {tuple(block)}: {shape}")
        if staging:
            shared = ", ".join(
                f"{writer.pointers[s.alloca.memref].name} ({s.nbytes} bytes, "
                f"at loop '{s.loop}')"
                for s in staging.values()
            )
            total = sum(s.nbytes for s in staging.values())
            head.append(f"// __shared__ {total} of {MAX_SHARED_BYTES} bytes: {shared}")
        source = "\n".join(
            [
                *head,
                f'extern "C" __global__ void {function}({signature}) {{',
                *writer.lines,
                "}",
            ]
        )
        launches.append(
            KernelLaunch(
                function,
                source,
                (grid[0], grid[1], grid[2]),
                (block[0], block[1], block[2]),
                tuple(t for t, _ in params),
                not bound,
            )
        )
    return launches


def _recheck(
    fn: func.FuncOp,
    kernel: str,
    segment: Sequence[Operation],
    bound: Sequence[affine.ForOp],
) -> None:
    """``bind``'s checks again, on the final nest: primitives applied after ``bind``
    (``cache_read``, ``split``, ...) do not rerun them."""
    (top,) = segment
    try:
        check_gpu_nest(fn, top, kernel, str(loop_name(bound[-1])))
    except ScheduleError as err:
        raise CudaEmitError(
            f"kernel '{kernel}': the nest of loop '{loop_name(top)}' no longer "
            f"passes bind's checks after the rest of the schedule: {err}"
        ) from err


def _closure(replicated: Sequence[Operation], used: set[SSAValue]) -> set[Operation]:
    """The replicated ops that ``used`` values need, transitively."""
    needed: set[Operation] = set()
    for op in reversed(replicated):
        if any(r in used for r in op.results):
            needed.add(op)
            used = used | set(op.operands)
    return needed


# --- the host program -----------------------------------------------------------------


def _string_list(fn: func.FuncOp, attr: str) -> list[str] | None:
    names = fn.attributes.get(attr)
    if isinstance(names, ArrayAttr):
        return [n.data for n in names.data if isinstance(n, StringAttr)]
    return None


def emit_program(module: ModuleOp) -> CudaProgram:
    """CUDA C for every kernel of ``module`` and the launch plan of its ``@main``."""
    functions = {
        op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)
    }
    globals_ = {
        op.sym_name.data: op for op in module.ops if isinstance(op, memref.GlobalOp)
    }
    if ENTRY not in functions:
        raise CudaEmitError(f"the module has no entry function @{ENTRY}")
    main = functions[ENTRY]
    kernel_launches: dict[str, list[KernelLaunch]] = {}
    buffers: list[BufferSpec] = []
    buffer_of: dict[SSAValue, int] = {}
    args = list(main.body.block.args)
    num_inputs_attr = main.attributes.get("qd.num_inputs")
    num_inputs = (
        num_inputs_attr.value.data
        if isinstance(num_inputs_attr, IntegerAttr)
        else len(args) - len(main.function_type.outputs.data)
    )
    in_names = _string_list(main, "qd.input_names") or [
        a.name_hint or f"input{i}" for i, a in enumerate(args[:num_inputs])
    ]
    out_names = _string_list(main, "qd.output_names") or [
        f"output{j}" for j in range(len(args) - num_inputs)
    ]
    inputs: list[TensorSpec] = []
    outputs: list[TensorSpec] = []
    for i, arg in enumerate(args):
        t = arg.type
        if not isinstance(t, MemRefType):
            raise CudaEmitError(f"@{ENTRY}: argument #{i} is {t}, not a memref")
        is_input = i < num_inputs
        index = i if is_input else i - num_inputs
        name = in_names[index] if is_input else out_names[index]
        spec = TensorSpec(name, tuple(t.get_shape()), _np_dtype(t.get_element_type()))
        (inputs if is_input else outputs).append(spec)
        nbytes = span_of(t, ENTRY) * np.dtype(spec.dtype).itemsize
        buffer_of[arg] = len(buffers)
        buffers.append(
            BufferSpec(name, "input" if is_input else "output", nbytes, index)
        )
    launches: list[Launch] = []
    for op in main.body.block.ops:
        if isinstance(op, memref.AllocOp | memref.AllocaOp):
            t = op.memref.type
            assert isinstance(t, MemRefType)
            nbytes = (
                span_of(t, ENTRY) * np.dtype(_np_dtype(t.get_element_type())).itemsize
            )
            buffer_of[op.memref] = len(buffers)
            buffers.append(
                BufferSpec(
                    op.memref.name_hint or f"buffer{len(buffers)}", "scratch", nbytes
                )
            )
        elif isinstance(op, memref.GetGlobalOp):
            symbol = op.name_.root_reference.data
            glob = globals_.get(symbol)
            if glob is None:
                raise CudaEmitError(f"@{ENTRY}: no memref.global @{symbol}")
            data = _global_data(glob)
            buffer_of[op.memref] = len(buffers)
            buffers.append(BufferSpec(f"@{symbol}", "constant", data.nbytes, data=data))
        elif isinstance(op, MEMREF_VIEWS):
            buffer_of[op.results[0]] = buffer_of[op.operands[0]]
        elif isinstance(op, func.CallOp):
            callee = op.callee.root_reference.data
            if (
                callee not in functions
                or KERNEL_ATTR not in functions[callee].attributes
            ):
                raise CudaEmitError(f"@{ENTRY}: @{callee} is not a kernel")
            if callee not in kernel_launches:
                kernel_launches[callee] = emit_kernel(functions[callee])
            operands = tuple(buffer_of[v] for v in op.arguments)
            for kl in kernel_launches[callee]:
                launches.append(
                    Launch(
                        callee,
                        kl.function,
                        kl.grid,
                        kl.block,
                        operands,
                        kl.params,
                        kl.serial,
                    )
                )
        elif isinstance(op, memref.DeallocOp | func.ReturnOp) or (
            is_side_effect_free(op) and not op.regions
        ):
            continue
        else:
            raise CudaEmitError(
                f"@{ENTRY}: '{op.name}' is not supported by the CUDA host plan"
            )
    source = PREAMBLE + "".join(
        "\n" + kl.source + "\n" for kls in kernel_launches.values() for kl in kls
    )
    return CudaProgram(
        source, tuple(buffers), tuple(launches), tuple(inputs), tuple(outputs)
    )


def _global_data(glob: memref.GlobalOp) -> np.ndarray[Any, Any]:
    t = glob.type
    value = glob.initial_value
    if not isinstance(t, MemRefType) or not isinstance(value, DenseIntOrFPElementsAttr):
        raise CudaEmitError(
            f"memref.global @{glob.sym_name.data}: no dense initial value"
        )
    dtype = _np_dtype(t.get_element_type())
    values = np.array(list(value.get_values()), dtype=dtype)
    count = int(np.prod(t.get_shape()))
    if values.size == 1 and count != 1:
        values = np.full(count, values[0], dtype)
    return values.reshape(t.get_shape())


__all__ = ["CudaEmitError", "KernelLaunch", "c_type", "emit_kernel", "emit_program"]
