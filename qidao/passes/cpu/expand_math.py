"""``expand-math``: ``math.exp``/``log``/``tanh``/``erf`` on f32 -> straight-line arith.

    math.exp %x : f32   ==>   clamp; n = roundeven(x log2 e); r = x - n ln2;
                              p = 1 + r + r^2 P(r); p * 2^(n - n/2) * 2^(n/2)

Why: the back end lowers ``math.exp`` to ``llvm.exp.f32``, and with no vector math
library wired into LLVM, the loop vectorizer turns that into one libm call per lane.
Softmax, sigmoid, tanh and GELU kernels then run at libm's scalar speed. Written out as
``arith`` (plus ``math.fma``, ``math.roundeven``, ``math.absf``, ``math.copysign``,
which lower to LLVM intrinsics with vector forms), the same loop becomes
``<16 x float>`` code on AVX-512. Over 4M floats (one thread, this project's
machine): exp 5.6 -> 0.65 ms, log 22.9 -> 1.1 ms, tanh 47.9 -> 1.1 ms, erf 48.4 ->
1.6 ms (``torch.erf``, one thread: 4.1 ms).

The algorithms are in ``_expand_math_f32.py``: exp by Cody-Waite range reduction and
a degree-7 polynomial; log by splitting exponent and mantissa and a degree-11
polynomial; tanh by an odd polynomial near 0 and ``1 - 2/(exp(2|x|) + 1)`` beyond;
erf by an odd polynomial near 0 and ``1 - exp(Q(|x|))`` beyond, Q a fitted polynomial
for ``log(erfc)``. Maximum relative error below 2e-7 (about 2 ulp; erf at most 1.19
ulp over every float32) against NumPy in float64 on normal results; ``inf``, ``-inf``,
``NaN``, ``-0``, denormals, overflow and underflow follow IEEE as libm does (checked in
``tests/passes/cpu/test_expand_math.py``).

``ldexp`` (a pass option; the CPU target's ``ldexp`` turns it on where the host has
AVX-512F): exp scales ``exp(r)`` by ``2^n`` with one ``llvm.ldexp`` call, which LLVM
vectorizes and lowers to ``vscalefps``, instead of two factors built from exponent
bits (ten integer and float steps of about thirty); the results are the same, every
float32 (``test_expand_math.py`` runs both). Elsewhere LLVM would make ``llvm.ldexp``
a libm call per element, so it stays off there. Measured (AMD EPYC Zen 5, one thread,
medians of three runs side by side with ONNX Runtime): exp over 1 x 197 x 768 27.0
-> 22.6 µs (ORT 17.1), erf 60.4 -> 53.8 (48.7), GELU with erf 78.0 -> 68.9 (61.9),
softmax over 1 x 3 x 197 x 197 39.1 -> 35.0 (33.3), 1 x 4 x 128 x 128 22.7 -> 21.0
(17.1).

Rewritten: ``math.exp``, ``math.log``, ``math.tanh`` and ``math.erf`` whose result
type is ``f32`` (every math op the tg lowering emits, apart from ``math.sqrt``, which
LLVM vectorizes as it is). Left alone: the same ops on ``f64`` and on vector or tensor
types, every other math op (``math.sqrt``, ``math.sin``, ...), and the ops' fastmath
flags (the expansion keeps the accuracy above whatever they allow).

Preconditions: none; run it after ``convert-tg-to-affine`` and before
``convert-to-llvm`` (the math ops appear in the affine stage, the back end consumes
them).

Before:
```mlir
%y = math.exp %x : f32
```
After (the five Horner steps and the second scale factor elided):
```mlir
%c = arith.constant 8.900000e+01 : f32
%t = arith.cmpf ogt, %x, %c : f32
%t_1 = arith.select %t, %c, %x : f32
%c_1 = arith.constant -1.040000e+02 : f32
%t_2 = arith.cmpf olt, %t_1, %c_1 : f32
%xc = arith.select %t_2, %c_1, %t_1 : f32
%c_2 = arith.constant 1.44269502 : f32
%t_3 = arith.mulf %xc, %c_2 : f32
%n = math.roundeven %t_3 : f32
%c_3 = arith.constant -0.693147182 : f32
%t_4 = math.fma %n, %c_3, %xc : f32
%c_4 = arith.constant 1.90465421e-09 : f32
%r = math.fma %n, %c_4, %t_4 : f32
...
%p = math.fma %t_8, %r, %c_10 : f32
%t_9 = arith.mulf %r, %r : f32
%t_10 = math.fma %p, %t_9, %r : f32
%c_11 = arith.constant 1.000000e+00 : f32
%exp_r = arith.addf %t_10, %c_11 : f32
%c_12 = arith.constant 0x4B400000 : f32
%t_11 = arith.addf %n, %c_12 : f32
%t_12 = arith.bitcast %t_11 : f32 to i32
%c_13 = arith.constant 1262485504 : i32
%k = arith.subi %t_12, %c_13 : i32
%c_14 = arith.constant 1 : i32
%t_13 = arith.shrsi %k, %c_14 : i32
%t_14 = arith.subi %k, %t_13 : i32
%c_15 = arith.constant 127 : i32
%t_15 = arith.addi %t_14, %c_15 : i32
%c_16 = arith.constant 23 : i32
%t_16 = arith.shli %t_15, %c_16 : i32
%scale_hi = arith.bitcast %t_16 : i32 to f32
%t_17 = arith.mulf %exp_r, %scale_hi : f32
...
%y = arith.mulf %t_17, %scale_lo : f32
```
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, math
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from qidao.passes.cpu._expand_math_f32 import (
    F32Emitter,
    erf_f32,
    exp_f32,
    log_f32,
    tanh_f32,
)

EXPANSIONS: dict[type[Operation], Callable[[F32Emitter, SSAValue], SSAValue]] = {
    math.ExpOp: exp_f32,
    math.LogOp: log_f32,
    math.TanhOp: tanh_f32,
    math.ErfOp: erf_f32,
}
"""The math ops this pass rewrites on f32, and the function that writes each out."""


def scalar_only_math(op: Operation) -> str | None:
    """The name of the first op in or under ``op`` that this pass writes out on
    scalars only (an ``EXPANSIONS`` op), if any. A schedule that puts such an op on
    vectors (``vectorize``) leaves it to LLVM, which makes a vector ``math.exp`` one
    libm call per lane; left on scalars in a loop, its expansion is what LLVM's loop
    vectorizer widens."""
    for inner in op.walk():
        if type(inner) in EXPANSIONS:
            return inner.name
    return None


class ExpandMathF32(RewritePattern):
    """One f32 math op in ``EXPANSIONS`` -> its arith expansion, inserted in place."""

    def __init__(self, ldexp: bool) -> None:
        self.ldexp = ldexp

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        expand = EXPANSIONS.get(type(op))
        if expand is None or not isinstance(op.results[0].type, Float32Type):
            return
        em = F32Emitter(ldexp=self.ldexp)
        result = expand(em, op.operands[0])
        for new_op in em.ops:  # unnamed steps print as %t, %t_1, ...
            for value in new_op.results:
                value.name_hint = value.name_hint or "t"
        result.name_hint = op.results[0].name_hint or "t"
        rewriter.replace(op, em.ops, [result])


@dataclass(frozen=True)
class ExpandMathPass(ModulePass):
    """Rewrite f32 ``math.exp``/``log``/``tanh``/``erf`` into vectorizable arith."""

    name = "expand-math"

    ldexp: bool = False
    """Scale exp's ``exp(r)`` by ``2^n`` with ``llvm.ldexp`` (one ``vscalefps`` on
    AVX-512) instead of two factors built from exponent bits; the CPU target turns
    it on where the host has AVX-512F (its ``ldexp`` option)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        walker = PatternRewriteWalker(
            ExpandMathF32(self.ldexp), apply_recursively=False
        )
        walker.rewrite_module(op)
