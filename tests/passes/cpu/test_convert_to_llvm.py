"""CPU back end: affine-level MLIR -> llvm dialect -> LLVM IR -> JIT -> NumPy."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import affine, arith, builtin, func, llvm, math, memref
from xdsl.parser import Parser

import qidao
from qidao.compiler.pipeline import run_stages, stages
from qidao.compiler.targets.cpu.emit import llvm_ir_text
from qidao.runtime.cpu import jit_compile
from qidao.runtime.errors import ArgumentError
from qidao.runtime.executor import NativeFunction, TensorSpec


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


def build(
    source: str,
    entry: str,
    inputs: list[tuple[str, tuple[int, ...], str]],
    outputs: list[tuple[str, tuple[int, ...], str]],
) -> NativeFunction:
    module = Parser(_context(), source).parse_module()
    run_stages(module, stages("cpu", "scf", "llvm-dialect"))
    jit = jit_compile(llvm_ir_text(module))
    return NativeFunction(
        jit,
        entry,
        [TensorSpec(*spec) for spec in inputs],
        [TensorSpec(*spec) for spec in outputs],
    )


def assert_close(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any]) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


RNG = np.random.default_rng(0)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray[Any, Any]:
    return RNG.standard_normal(shape).astype(dtype)


ADD_BROADCAST = """
func.func @add(%a: memref<4x8xf32> {llvm.noalias}, %b: memref<8xf32>,
               %o: memref<4x8xf32> {llvm.noalias}) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %x = affine.load %a[%i, %j] : memref<4x8xf32>
      %y = affine.load %b[%j] : memref<8xf32>
      %s = arith.addf %x, %y : f32
      affine.store %s, %o[%i, %j] : memref<4x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}
"""


def test_add_with_broadcast() -> None:
    fn = build(
        ADD_BROADCAST,
        "add",
        [("a", (4, 8), "float32"), ("b", (8,), "float32")],
        [("out", (4, 8), "float32")],
    )
    a, b = rand(4, 8), rand(8)
    (out,) = fn(a, b)
    assert_close(out, a + b)


def test_zero_stride_view_broadcast() -> None:
    # b is read through a stride-0 view: row i of the view is the same vector
    source = """
    func.func @add(%a: memref<4x8xf32>, %b: memref<8xf32>, %o: memref<4x8xf32>) {
      %bv = memref.reinterpret_cast %b to offset: [0], sizes: [4, 8], strides: [0, 1]
          : memref<8xf32> to memref<4x8xf32, strided<[0, 1]>>
      affine.for %i = 0 to 4 {
        affine.for %j = 0 to 8 {
          %x = affine.load %a[%i, %j] : memref<4x8xf32>
          %y = affine.load %bv[%i, %j] : memref<4x8xf32, strided<[0, 1]>>
          %z = affine.load %b[0 * %i + %j] : memref<8xf32>
          %s = arith.addf %x, %y : f32
          %t = arith.addf %s, %z : f32
          affine.store %t, %o[%i, %j] : memref<4x8xf32>
        } {qd.loop = "j"}
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(
        source,
        "add",
        [("a", (4, 8), "float32"), ("b", (8,), "float32")],
        [("out", (4, 8), "float32")],
    )
    a, b = rand(4, 8), rand(8)
    assert_close(fn(a, b)[0], a + 2 * b)


def test_transposed_strided_read() -> None:
    # %t views the 8x4 input as its 4x8 transpose, offset 0, strides [1, 4]
    source = """
    func.func @tr(%a: memref<8x4xf32>, %o: memref<4x8xf32>) {
      %t = memref.reinterpret_cast %a to offset: [0], sizes: [4, 8], strides: [1, 4]
          : memref<8x4xf32> to memref<4x8xf32, strided<[1, 4]>>
      affine.for %i = 0 to 4 {
        affine.for %j = 0 to 8 {
          %x = affine.load %t[%i, %j] : memref<4x8xf32, strided<[1, 4]>>
          affine.store %x, %o[%i, %j] : memref<4x8xf32>
        } {qd.loop = "j"}
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(source, "tr", [("a", (8, 4), "float32")], [("o", (4, 8), "float32")])
    a = rand(8, 4)
    assert_close(fn(a)[0], a.T)


def test_strided_offset_view_and_mod_floordiv() -> None:
    # out[i] = a[(i floordiv 3), (i mod 3) + 1] through a view with offset 1
    source = """
    func.func @g(%a: memref<4x4xf32>, %o: memref<12xf32>) {
      %v = memref.reinterpret_cast %a to offset: [1], sizes: [4, 3], strides: [4, 1]
          : memref<4x4xf32> to memref<4x3xf32, strided<[4, 1], offset: 1>>
      affine.for %i = 0 to 12 {
        %x = affine.load %v[%i floordiv 3, %i mod 3]
            : memref<4x3xf32, strided<[4, 1], offset: 1>>
        affine.store %x, %o[%i] : memref<12xf32>
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(source, "g", [("a", (4, 4), "float32")], [("o", (12,), "float32")])
    a = rand(4, 4)
    assert_close(fn(a)[0], a[:, 1:].reshape(12))


def test_reduction_with_iter_args() -> None:
    source = """
    func.func @rowsum(%a: memref<5x100xf32>, %o: memref<5xf32>) {
      %zero = arith.constant 0.0 : f32
      affine.for %i = 0 to 5 {
        %r = affine.for %j = 0 to 100 iter_args(%acc = %zero) -> (f32) {
          %x = affine.load %a[%i, %j] : memref<5x100xf32>
          %s = arith.addf %acc, %x fastmath<reassoc, contract> : f32
          affine.yield %s : f32
        } {qd.loop = "j"}
        affine.store %r, %o[%i] : memref<5xf32>
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(source, "rowsum", [("a", (5, 100), "float32")], [("o", (5,), "float32")])
    a = rand(5, 100)
    np.testing.assert_allclose(fn(a)[0], a.sum(axis=1), rtol=1e-4, atol=1e-4)


def test_affine_if_and_min() -> None:
    # out[i] = i >= 3 and i <= 6 ? a[i] : -a[min(i, 2)]
    source = """
    func.func @f(%a: memref<10xf32>, %o: memref<10xf32>) {
      affine.for %i = 0 to 10 {
        %v = "affine.if"(%i) <{condition = affine_set<(d0) : (d0 - 3 >= 0, -d0 + 6 >= 0)>}> ({
          %x = affine.load %a[%i] : memref<10xf32>
          affine.yield %x : f32
        }, {
          %m = affine.min affine_map<(d0) -> (d0, 2)> (%i)
          %y = affine.load %a[%m] : memref<10xf32>
          %n = arith.negf %y : f32
          affine.yield %n : f32
        }) : (index) -> f32
        affine.store %v, %o[%i] : memref<10xf32>
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(source, "f", [("a", (10,), "float32")], [("o", (10,), "float32")])
    a = rand(10)
    i = np.arange(10)
    want = np.where((i >= 3) & (i <= 6), a, -a[np.minimum(i, 2)])
    assert_close(fn(a)[0], want)


UNARY = """
func.func @u(%a: memref<64xf32>, %o: memref<4x64xf32>) {
  affine.for %i = 0 to 64 {
    %x = affine.load %a[%i] : memref<64xf32>
    %ax = math.absf %x : f32
    %e = math.exp %x : f32
    %l = math.log %ax : f32
    %s = math.sqrt %ax : f32
    %t = math.tanh %x : f32
    affine.store %e, %o[0, %i] : memref<4x64xf32>
    affine.store %l, %o[1, %i] : memref<4x64xf32>
    affine.store %s, %o[2, %i] : memref<4x64xf32>
    affine.store %t, %o[3, %i] : memref<4x64xf32>
  } {qd.loop = "i"}
  func.return
}
"""


def test_exp_log_sqrt_tanh() -> None:
    fn = build(UNARY, "u", [("a", (64,), "float32")], [("o", (4, 64), "float32")])
    a = rand(64) + np.float32(0.01)
    out = fn(a)[0]
    want = np.stack([np.exp(a), np.log(np.abs(a)), np.sqrt(np.abs(a)), np.tanh(a)])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_max_min_nan_propagation_and_math_ops() -> None:
    source = """
    func.func @m(%a: memref<6xf32>, %b: memref<6xf32>, %o: memref<5x6xf32>) {
      affine.for %i = 0 to 6 {
        %x = affine.load %a[%i] : memref<6xf32>
        %y = affine.load %b[%i] : memref<6xf32>
        %mx = arith.maximumf %x, %y : f32
        %mn = arith.minimumf %x, %y : f32
        %f = math.fma %x, %y, %x : f32
        %ax = math.absf %x : f32
        %p = math.powf %ax, %y : f32
        %r = math.rsqrt %ax : f32
        affine.store %mx, %o[0, %i] : memref<5x6xf32>
        affine.store %mn, %o[1, %i] : memref<5x6xf32>
        affine.store %f, %o[2, %i] : memref<5x6xf32>
        affine.store %p, %o[3, %i] : memref<5x6xf32>
        affine.store %r, %o[4, %i] : memref<5x6xf32>
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(
        source,
        "m",
        [("a", (6,), "float32"), ("b", (6,), "float32")],
        [("o", (5, 6), "float32")],
    )
    a = np.array([1.0, -2.0, np.nan, 4.0, 0.5, 3.0], np.float32)
    b = np.array([0.5, 3.0, 1.0, np.nan, -1.0, 2.0], np.float32)
    out = fn(a, b)[0]
    with np.errstate(all="ignore"):
        want = np.stack(
            [
                np.maximum(a, b),
                np.minimum(a, b),
                a * b + a,
                np.abs(a) ** b,
                1 / np.sqrt(np.abs(a)),
            ]
        )
    np.testing.assert_allclose(out, want, rtol=1e-5, equal_nan=True)


MATMUL = """
func.func @matmul(%a: memref<16x32xf32> {llvm.noalias}, %b: memref<32x24xf32> {llvm.noalias},
                  %c: memref<16x24xf32> {llvm.noalias}) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 24 {
      %r = affine.for %k = 0 to 32 iter_args(%acc = %zero) -> (f32) {
        %x = affine.load %a[%i, %k] : memref<16x32xf32>
        %y = affine.load %b[%k, %j] : memref<32x24xf32>
        %p = arith.mulf %x, %y fastmath<contract> : f32
        %s = arith.addf %acc, %p fastmath<reassoc, contract> : f32
        affine.yield %s : f32
      } {qd.loop = "k"}
      affine.store %r, %c[%i, %j] : memref<16x24xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}
"""


def test_matmul() -> None:
    fn = build(
        MATMUL,
        "matmul",
        [("a", (16, 32), "float32"), ("b", (32, 24), "float32")],
        [("c", (16, 24), "float32")],
    )
    a, b = rand(16, 32), rand(32, 24)
    np.testing.assert_allclose(fn(a, b)[0], a @ b, rtol=1e-4, atol=1e-4)


HOST = """
func.func @k_scale(%a: memref<8xf32>, %o: memref<8xf32>) {
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %two : f32
    affine.store %y, %o[%i] : memref<8xf32>
  } {qd.loop = "i"}
  func.return
}
func.func @k_add(%a: memref<8xf32>, %b: memref<2x4xf32>, %o: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %x = affine.load %a[%i] : memref<8xf32>
    %y = affine.load %b[%i floordiv 4, %i mod 4] : memref<2x4xf32>
    %s = arith.addf %x, %y : f32
    affine.store %s, %o[%i] : memref<8xf32>
  } {qd.loop = "i"}
  func.return
}
func.func @main(%in0: memref<8xf32>, %out0: memref<8xf32>) {
  %t = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @k_scale(%in0, %t) : (memref<8xf32>, memref<8xf32>) -> ()
  %v = memref.reinterpret_cast %t to offset: [0], sizes: [2, 4], strides: [4, 1]
      : memref<8xf32> to memref<2x4xf32>
  func.call @k_add(%in0, %v, %out0) : (memref<8xf32>, memref<2x4xf32>, memref<8xf32>) -> ()
  memref.dealloc %t : memref<8xf32>
  func.return
}
"""


def test_host_main_with_alloc_and_dealloc() -> None:
    fn = build(HOST, "main", [("x", (8,), "float32")], [("y", (8,), "float32")])
    x = rand(8)
    assert_close(fn(x)[0], 3 * x)
    # the kernels stay callable on their own
    kernel = NativeFunction(
        fn.jit,
        "k_scale",
        [TensorSpec("a", (8,), "float32")],
        [TensorSpec("o", (8,), "float32")],
    )
    assert_close(kernel(x)[0], 2 * x)


def test_f64_buffers() -> None:
    source = """
    func.func @f(%a: memref<3x5xf64>, %o: memref<3x5xf64>) {
      %h = arith.constant 0.5 : f64
      affine.for %i = 0 to 3 {
        affine.for %j = 0 to 5 {
          %x = affine.load %a[%i, %j] : memref<3x5xf64>
          %e = math.exp %x : f64
          %y = arith.mulf %e, %h : f64
          affine.store %y, %o[%i, %j] : memref<3x5xf64>
        } {qd.loop = "j"}
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(source, "f", [("a", (3, 5), "float64")], [("o", (3, 5), "float64")])
    a = rand(3, 5, dtype="float64")
    np.testing.assert_allclose(fn(a)[0], 0.5 * np.exp(a), rtol=1e-12)


def test_i32_i64_i1_buffers_and_casts() -> None:
    source = """
    func.func @f(%a: memref<6xi32>, %o: memref<6xi64>, %m: memref<6xi1>,
                 %q: memref<6xf32>) {
      %c3 = arith.constant 3 : i32
      affine.for %i = 0 to 6 {
        %x = affine.load %a[%i] : memref<6xi32>
        %d = arith.floordivsi %x, %c3 : i32
        %r = arith.remsi %x, %c3 : i32
        %s = arith.addi %d, %r : i32
        %w = arith.extsi %s : i32 to i64
        %idx = arith.index_cast %i : index to i64
        %z = arith.muli %w, %idx : i64
        %neg = arith.cmpi slt, %x, %c3 : i32
        %f = arith.sitofp %x : i32 to f32
        %u = arith.uitofp %neg : i1 to f32
        %g = arith.addf %f, %u : f32
        affine.store %z, %o[%i] : memref<6xi64>
        affine.store %neg, %m[%i] : memref<6xi1>
        affine.store %g, %q[%i] : memref<6xf32>
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(
        source,
        "f",
        [("a", (6,), "int32")],
        [("o", (6,), "int64"), ("m", (6,), "bool"), ("q", (6,), "float32")],
    )
    a = np.array([-7, -3, 0, 2, 5, 11], np.int32)
    o, m, q = fn(a)
    i = np.arange(6)
    np.testing.assert_array_equal(o, (a // 3 + np.fmod(a, 3)).astype(np.int64) * i)
    np.testing.assert_array_equal(m, a < 3)
    np.testing.assert_allclose(q, a.astype(np.float32) + (a < 3))


def test_fptosi_and_select() -> None:
    source = """
    func.func @f(%a: memref<5xf32>, %o: memref<5xi32>) {
      %zero = arith.constant 0.0 : f32
      affine.for %i = 0 to 5 {
        %x = affine.load %a[%i] : memref<5xf32>
        %pos = arith.cmpf ogt, %x, %zero : f32
        %y = arith.select %pos, %x, %zero : f32
        %n = arith.fptosi %y : f32 to i32
        affine.store %n, %o[%i] : memref<5xi32>
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(source, "f", [("a", (5,), "float32")], [("o", (5,), "int32")])
    a = np.array([-2.5, 0.0, 1.9, 7.2, 100.0], np.float32)
    np.testing.assert_array_equal(fn(a)[0], np.maximum(a, 0).astype(np.int32))


def test_memref_copy_dense_and_strided() -> None:
    source = """
    func.func @c(%a: memref<3x4xf32>, %o: memref<3x4xf32>, %t: memref<4x3xf32>) {
      "memref.copy"(%a, %o) : (memref<3x4xf32>, memref<3x4xf32>) -> ()
      %v = memref.reinterpret_cast %a to offset: [0], sizes: [4, 3], strides: [1, 4]
          : memref<3x4xf32> to memref<4x3xf32, strided<[1, 4]>>
      "memref.copy"(%v, %t) : (memref<4x3xf32, strided<[1, 4]>>, memref<4x3xf32>) -> ()
      func.return
    }
    """
    fn = build(
        source,
        "c",
        [("a", (3, 4), "float32")],
        [("o", (3, 4), "float32"), ("t", (4, 3), "float32")],
    )
    a = rand(3, 4)
    o, t = fn(a)
    assert_close(o, a)
    assert_close(t, a.T)


def test_memref_global_constant() -> None:
    source = """
    "memref.global"() <{sym_name = "cst", sym_visibility = "private",
        type = memref<2x3xf32>, initial_value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]>
        : tensor<2x3xf32>, constant, alignment = 64 : i64}> : () -> ()
    func.func @g(%a: memref<2x3xf32>, %o: memref<2x3xf32>) {
      %c = memref.get_global @cst : memref<2x3xf32>
      affine.for %i = 0 to 2 {
        affine.for %j = 0 to 3 {
          %x = affine.load %a[%i, %j] : memref<2x3xf32>
          %y = affine.load %c[%i, %j] : memref<2x3xf32>
          %s = arith.mulf %x, %y : f32
          affine.store %s, %o[%i, %j] : memref<2x3xf32>
        } {qd.loop = "j"}
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(source, "g", [("a", (2, 3), "float32")], [("o", (2, 3), "float32")])
    a = rand(2, 3)
    assert_close(fn(a)[0], a * np.arange(1, 7, dtype=np.float32).reshape(2, 3))


# -- the runtime's argument checks ----------------------------------------------------


@pytest.fixture(scope="module")
def add_fn() -> NativeFunction:
    return build(
        ADD_BROADCAST,
        "add",
        [("a", (4, 8), "float32"), ("b", (8,), "float32")],
        [("out", (4, 8), "float32")],
    )


def test_wrong_argument_count(add_fn: NativeFunction) -> None:
    with pytest.raises(ArgumentError, match=r"takes 2 input\(s\) \('a', 'b'\), got 1"):
        add_fn(rand(4, 8))


def test_wrong_dtype(add_fn: NativeFunction) -> None:
    with pytest.raises(
        ArgumentError,
        match=r"input 'b' \(#1\): expected .*dtype float32, got dtype float64",
    ):
        add_fn(rand(4, 8), rand(8, dtype="float64"))


def test_wrong_shape(add_fn: NativeFunction) -> None:
    with pytest.raises(
        ArgumentError,
        match=re.escape("input 'a' (#0): expected ndarray of shape (4, 8)")
        + r".*got shape \(8, 4\)",
    ):
        add_fn(rand(8, 4), rand(8))


def test_non_ndarray(add_fn: NativeFunction) -> None:
    with pytest.raises(
        ArgumentError,
        match=r"input 'a' \(#0\): expected ndarray.*got an object of type list",
    ):
        add_fn([[0.0] * 8] * 4, rand(8))
    with pytest.raises(ValueError):  # ArgumentError is a ValueError too
        add_fn(1.0, rand(8))
    with pytest.raises(TypeError):  # ... and a TypeError
        add_fn(rand(4, 8), None)


def test_non_contiguous_inputs(add_fn: NativeFunction) -> None:
    big = rand(8, 4)
    a = big.T  # (4, 8), Fortran order
    b = rand(16)[::2]  # (8,), stride 2
    assert not a.flags.c_contiguous and not b.flags.c_contiguous
    assert_close(add_fn(a, b)[0], a + b)
    readonly = np.broadcast_to(rand(8), (4, 8))  # stride-0, read-only
    assert_close(add_fn(readonly, b)[0], readonly + b)


def test_raw_call(add_fn: NativeFunction) -> None:
    a, b = rand(4, 8), rand(8)
    out = np.empty((4, 8), np.float32)
    add_fn.raw(a, b, out)
    assert_close(out, a + b)


def test_elementwise_loop_uses_host_vectors() -> None:
    source = """
    func.func @add(%a: memref<1024xf32> {llvm.noalias}, %b: memref<1024xf32> {llvm.noalias},
                   %o: memref<1024xf32> {llvm.noalias}) {
      affine.for %i = 0 to 1024 {
        %x = affine.load %a[%i] : memref<1024xf32>
        %y = affine.load %b[%i] : memref<1024xf32>
        %s = arith.addf %x, %y : f32
        affine.store %s, %o[%i] : memref<1024xf32>
      } {qd.loop = "i"}
      func.return
    }
    """
    fn = build(
        source,
        "add",
        [("a", (1024,), "float32"), ("b", (1024,), "float32")],
        [("o", (1024,), "float32")],
    )
    asm = fn.jit.assembly()
    assert "vaddps" in asm or "addps" in asm, "the elementwise loop is not vectorized"
    from qidao.runtime.cpu import host_cpu

    if "+avx512f" in host_cpu()[1]:
        assert "zmm" in asm
    assert (
        "<16 x float>" in fn.jit.optimized_ir() or "x float>" in fn.jit.optimized_ir()
    )


def test_outputs_of_a_page_or_more_are_64_byte_aligned() -> None:
    from qidao.frontend.builder import Graph

    for n in (1024, 1 << 18):  # an aligned fresh array, then a pooled one
        g = Graph("main")
        x = g.input("x", (n,))
        g.output(x * 2.0)
        compiled = qidao.compile(g)
        data = np.arange(n, dtype=np.float32)
        for _ in range(3):
            (y,) = compiled(data)
            assert y.ctypes.data % 64 == 0 and y.flags.c_contiguous
            np.testing.assert_array_equal(y, data * 2)
