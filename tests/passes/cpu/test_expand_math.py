"""``expand-math`` numerics: each expansion compiled, run and compared with NumPy.

A kernel ``y[i] = op(x[i])`` over 2^20 floats is written at the affine level, rewritten
by ``expand-math``, lowered and JIT-compiled as the pipeline does. Its results on about
10^6 points spanning the whole float32 domain (random points, a sweep of bit patterns,
and the special values) are compared with NumPy in float64:

- a normal result within a relative error of 2e-7 (about 2 ulp);
- a denormal result within one unit of the smallest denormal, 2^-149 (exp's gradual
  underflow; a denormal has fewer significant bits, so its relative error is larger);
- every other result (0, +-inf, NaN, -0) exactly what float64 NumPy rounded to
  float32 gives, sign included.
"""

from __future__ import annotations

import functools
import math as pymath
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import affine, arith, builtin, func, llvm, math, memref
from xdsl.parser import Parser

from qidao.compiler.pipeline import run_stages, stages, without
from qidao.compiler.targets.cpu.emit import llvm_ir_text
from qidao.runtime.cpu import JitModule, host_cpu, host_has, jit_compile
from qidao.runtime.executor import NativeFunction, TensorSpec

N = 1 << 20
MAX_RELATIVE_ERROR = 2e-7
SMALLEST_DENORMAL = 2.0**-149
SMALLEST_NORMAL = 2.0**-126
Array = np.ndarray[Any, Any]

REFERENCES = {
    "math.exp": np.exp,
    "math.log": np.log,
    "math.tanh": np.tanh,
    "math.erf": np.vectorize(pymath.erf, otypes=[np.float64]),  # NumPy has no erf
}
SPECIALS = np.array(
    [
        *(0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 2.0, 0.5),
        *(1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38, -1.1754944e-38),  # denormals
        *(3.4028235e38, -3.4028235e38, 88.72283, 88.72284, 89.0, 100.0),  # overflow
        *(-87.33654, -87.3366, -103.27893, -103.97, -104.0, -150.0),  # underflow
        *(0.625, -0.625, 0.62499994, 9.0, 9.02, -9.02, 1e-4, -1e-4),  # tanh branches
        *(0.921875, -0.921875, 0.92187494, 3.9, 3.92, 4.0, -4.0, 4.01),  # erf branches
    ],
    np.float32,
)


def _context() -> Context:
    ctx = Context()
    for dialect in (
        affine.Affine,
        arith.Arith,
        builtin.Builtin,
        func.Func,
        llvm.LLVM,
        math.Math,
        memref.MemRef,
    ):
        ctx.load_dialect(dialect)
    return ctx


def kernel_source(op: str, n: int, element: str = "f32") -> str:
    t = f"memref<{n}x{element}>"
    return f"""
    func.func @kernel(%a: {t} {{llvm.noalias}}, %o: {t} {{llvm.noalias}}) {{
      affine.for %i = 0 to {n} {{
        %x = affine.load %a[%i] : {t}
        %y = {op} %x : {element}
        affine.store %y, %o[%i] : {t}
      }} {{qd.loop = "i"}}
      func.return
    }}
    """


def compile_kernel(
    op: str, n: int = N, expand: bool = True, ldexp: bool = False
) -> NativeFunction:
    ctx = _context()
    module = Parser(ctx, kernel_source(op, n)).parse_module()
    lowering = stages("cpu", "scf", "llvm-dialect")
    run_stages(
        module,
        lowering if expand else without(lowering, "expand-math"),
        settings={"ldexp": ldexp},
    )
    jit = jit_compile(llvm_ir_text(module))
    spec = [TensorSpec("x", (n,), "float32")]
    return NativeFunction(jit, "kernel", spec, [TensorSpec("y", (n,), "float32")])


@functools.cache
def expanded(op: str, ldexp: bool) -> NativeFunction:
    return compile_kernel(op, ldexp=ldexp)


SCALINGS = [False, True]
"""exp's scaling by 2^n: two factors from exponent bits, or ``llvm.ldexp``
(``expand-math{ldexp=true}``; ``vscalefps`` on AVX-512, a libm call elsewhere)."""


def run(op: str, x: Array, ldexp: bool = False) -> Array:
    """op(x) through the expanded kernel, in chunks of N."""
    fn = expanded(op, ldexp)
    out = np.empty_like(x)
    for start in range(0, x.size, N):
        chunk = np.zeros(N, np.float32)
        part = x[start : start + N]
        chunk[: part.size] = part
        out[start : start + N] = fn(chunk)[0][: part.size]
    return out


def domain(op: str, rng: np.random.Generator) -> Array:
    """About 10^6 float32 points over the op's whole domain, and the special values."""
    if op == "math.exp":
        uniform = rng.uniform(-110.0, 95.0, 600_000)
    elif op == "math.log":
        uniform = rng.uniform(0.0, 4.0, 600_000)
    elif op == "math.erf":
        uniform = rng.uniform(-5.0, 5.0, 600_000)
    else:
        uniform = rng.uniform(-12.0, 12.0, 600_000)
    magnitudes = 10.0 ** rng.uniform(-45.0, 38.5, 200_000)
    signs = rng.choice([-1.0, 1.0], magnitudes.size)
    # every 10,000th bit pattern, positive and negative: all exponents, all signs
    bits = np.arange(0, 0x7F800000, 10_000, dtype=np.uint32)
    sweep = np.concatenate([bits, bits | np.uint32(0x80000000)]).view(np.float32)
    with np.errstate(over="ignore"):
        points = [uniform, magnitudes * signs, sweep.astype(np.float64)]
        return np.concatenate([*(p.astype(np.float32) for p in points), SPECIALS])


def mismatches(x: Array, got: Array, op: str) -> list[str]:
    """The points where ``got`` breaks the accuracy contract, described."""
    with np.errstate(all="ignore"):
        exact = REFERENCES[op](x.astype(np.float64))
        rounded = exact.astype(np.float32)
        magnitude = np.abs(exact)
        normal = np.isfinite(rounded) & (magnitude >= SMALLEST_NORMAL)
        denormal = (magnitude > 0) & (magnitude < SMALLEST_NORMAL)
        error = np.abs(got.astype(np.float64) - exact)
        relative = np.where(normal, error / np.where(normal, magnitude, 1.0), 0.0)
    bad = normal & ~(relative <= MAX_RELATIVE_ERROR)
    bad |= denormal & ~(error <= SMALLEST_DENORMAL)
    other = ~normal & ~denormal
    same = (got == rounded) & (np.signbit(got) == np.signbit(rounded))
    bad |= other & ~(same | (np.isnan(got) & np.isnan(rounded)))
    return [
        f"{op}({x[i]!r}) = {got[i]!r}, expected {rounded[i]!r} "
        f"(float64 {exact[i]!r}, relative error {relative[i]:.3g})"
        for i in np.flatnonzero(bad)[:10]
    ]


CASES = [
    pytest.param(op, ldexp, id=f"{op}-{'ldexp' if ldexp else 'bits'}")
    for op in sorted(REFERENCES)
    for ldexp in SCALINGS
    if not (ldexp and op == "math.log")  # log has no exp inside
]


@pytest.mark.parametrize(("op", "ldexp"), CASES)
def test_expansion_matches_numpy_over_the_domain(op: str, ldexp: bool) -> None:
    x = domain(op, np.random.default_rng(0))
    assert x.size > 1_000_000
    got = run(op, x, ldexp)
    assert mismatches(x, got, op) == []


@pytest.mark.parametrize(("op", "ldexp"), CASES)
def test_special_values(op: str, ldexp: bool) -> None:
    got = run(op, SPECIALS, ldexp)
    assert mismatches(SPECIALS, got, op) == []


def test_the_accuracy_check_catches_an_error() -> None:
    x = np.array([1.0, 0.0, -1.0], np.float32)
    wrong = np.exp(x) * np.float32(1 + 4e-7)  # 4e-7 too large everywhere
    assert len(mismatches(x, wrong, "math.exp")) == 3
    assert mismatches(x, np.exp(x), "math.exp") == []


def optimized_ir(fn: NativeFunction) -> str:
    jit = fn.jit
    assert isinstance(jit, JitModule)
    return jit.optimized_ir()


@pytest.mark.parametrize("op", sorted(REFERENCES))
def test_expanded_loop_vectorizes_without_calls(op: str) -> None:
    ir = optimized_ir(compile_kernel(op, 1024, ldexp=host_has("avx512f")))
    assert "call float @" not in ir and "@llvm.exp" not in ir and "@llvm.log" not in ir
    assert "@erff" not in ir and "@ldexp" not in ir
    _, features = host_cpu()
    width = "<16 x float>" if "+avx512f" in features else "x float>"
    assert width in ir, f"the {op} loop did not vectorize:\n{ir}"


def test_ldexp_scales_on_vscalefps_where_the_host_has_avx512() -> None:
    """With ``ldexp`` on, the vectorized exp scales by ``llvm.ldexp`` on
    ``<16 x float>``, which the back end makes one ``vscalefps`` per vector."""
    if not host_has("avx512f"):
        pytest.skip("no AVX-512F here: the CPU target leaves ldexp off")
    fn = compile_kernel("math.exp", 1024, ldexp=True)
    assert "@llvm.ldexp.v16f32.v16i32" in optimized_ir(fn)
    jit = fn.jit
    assert isinstance(jit, JitModule)
    assert "vscalefps" in jit.assembly()


def test_without_the_pass_exp_is_a_call_per_element() -> None:
    # what the pass removes: llvm.exp, which LLVM turns into libm calls
    ir = optimized_ir(compile_kernel("math.exp", 1024, expand=False))
    assert "@llvm.exp.v16f32" in ir or "@expf" in ir
