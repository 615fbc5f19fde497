// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s

// convert-tg-to-affine on the narrow and unsigned element types. Memrefs and arith
// are signless: a tensor<4xui8> becomes a memref<4xi8>, and the tg operand's type
// picks the unsigned op where the bits read differently (divui, cmpi ult, maxui,
// minui, extui, uitofp, fptoui). f16 computes in f32: extf, the op, truncf.
// (qidao/passes/kernels/lowering/scalar.py has the table.)

// Unsigned division: the divisor is made 1 where it is 0 and the result selected
// (x / 0 = 0); no MIN / -1 case.
// CHECK-LABEL: func.func private @udiv_k0_div(%a: memref<4xi8> {llvm.noalias}, %b: memref<4xi8> {llvm.noalias}, %out: memref<4xi8> {llvm.noalias}) attributes {qd.kernel = "tg.div"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : i8
// CHECK-NEXT:    affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[A:.*]] = affine.load %a[%i0] : memref<4xi8>
// CHECK-NEXT:      %[[B:.*]] = affine.load %b[%i0] : memref<4xi8>
// CHECK-NEXT:      %[[BY_ZERO:.*]] = arith.cmpi eq, %[[B]], %[[ZERO]] : i8
// CHECK-NEXT:      %[[SAFE:.*]] = arith.select %[[BY_ZERO]], %[[ONE]], %[[B]] : i8
// CHECK-NEXT:      %[[Q:.*]] = arith.divui %[[A]], %[[SAFE]] : i8
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[BY_ZERO]], %[[ZERO]], %[[Q]] : i8
// CHECK-NEXT:      affine.store %[[R]], %out[%i0] : memref<4xi8>
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-LABEL: func.func @udiv(%a: memref<4xi8>, %b: memref<4xi8>, %out0: memref<4xi8>)
func.func @udiv(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %q = tg.div %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  func.return %q : tensor<4xui8>
}

// Unsigned comparisons and max.
// CHECK-LABEL: func.func private @ucmp_k0_less(
// CHECK:           %{{.*}} = arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK-LABEL: func.func private @ucmp_k1_max(
// CHECK:           %{{.*}} = arith.maxui %{{.*}}, %{{.*}} : i32
func.func @ucmp(%a: tensor<4xui32>, %b: tensor<4xui32>) -> (tensor<4xi1>, tensor<4xui32>) {
  %lt = tg.less %a, %b : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
  %mx = tg.max %a, %b : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xui32>
  func.return %lt, %mx : tensor<4xi1>, tensor<4xui32>
}

// Unsigned abs is the value itself; neg wraps (0 - x), as NumPy's.
// CHECK-LABEL: func.func private @uunary_k0_abs(
// CHECK-NEXT:    affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[X:.*]] = affine.load %a[%i0] : memref<4xi16>
// CHECK-NEXT:      affine.store %[[X]], %out[%i0] : memref<4xi16>
// CHECK-LABEL: func.func private @uunary_k1_neg(
// CHECK:           %{{.*}} = arith.subi %{{.*}}, %{{.*}} : i16
func.func @uunary(%a: tensor<4xui16>) -> (tensor<4xui16>, tensor<4xui16>) {
  %abs = tg.abs %a : tensor<4xui16> -> tensor<4xui16>
  %neg = tg.neg %a : tensor<4xui16> -> tensor<4xui16>
  func.return %abs, %neg : tensor<4xui16>, tensor<4xui16>
}

// Casts from unsigned zero-extend / convert unsigned; to unsigned, fptoui (from f16
// through f32); from signed i16, extsi.
// CHECK-LABEL: func.func private @ucast_k0_cast(
// CHECK:           %{{.*}} = arith.uitofp %{{.*}} : i8 to f32
// CHECK-LABEL: func.func private @ucast_k1_cast(
// CHECK:           %{{.*}} = arith.extui %{{.*}} : i8 to i64
// CHECK-LABEL: func.func private @ucast_k2_cast(
// CHECK:           %[[H:.*]] = affine.load %h[%i0] : memref<4xf16>
// CHECK-NEXT:      %[[F:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK-NEXT:      %{{.*}} = arith.fptoui %[[F]] : f32 to i32
// CHECK-LABEL: func.func private @ucast_k3_cast(
// CHECK:           %{{.*}} = arith.extsi %{{.*}} : i16 to i64
func.func @ucast(%a: tensor<4xui8>, %h: tensor<4xf16>, %i: tensor<4xi16>) -> (tensor<4xf32>, tensor<4xi64>, tensor<4xui32>, tensor<4xi64>) {
  %f = tg.cast %a : tensor<4xui8> -> tensor<4xf32>
  %w = tg.cast %a : tensor<4xui8> -> tensor<4xi64>
  %u = tg.cast %h : tensor<4xf16> -> tensor<4xui32>
  %s = tg.cast %i : tensor<4xi16> -> tensor<4xi64>
  func.return %f, %w, %u, %s : tensor<4xf32>, tensor<4xi64>, tensor<4xui32>, tensor<4xi64>
}

// f16 arithmetic: both operands extended, the f32 op, the result rounded to f16.
// CHECK-LABEL: func.func private @half_k0_add(
// CHECK:           %[[X:.*]] = affine.load %x[%i0] : memref<4xf16>
// CHECK-NEXT:      %[[Y:.*]] = affine.load %y[%i0] : memref<4xf16>
// CHECK-NEXT:      %[[XW:.*]] = arith.extf %[[X]] : f16 to f32
// CHECK-NEXT:      %[[YW:.*]] = arith.extf %[[Y]] : f16 to f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[XW]], %[[YW]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.truncf %[[S]] : f32 to f16
// CHECK-NEXT:      affine.store %[[R]], %out[%i0] : memref<4xf16>
func.func @half(%x: tensor<4xf16>, %y: tensor<4xf16>) -> tensor<4xf16> {
  %s = tg.add %x, %y : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  func.return %s : tensor<4xf16>
}

// f64 -> f16 rounds to f32 *to odd* (an inexact f32 with an even last bit steps one
// bit toward the f64 value), then to f16: one correct rounding overall.
// CHECK-LABEL: func.func private @d2h_k0_cast(
// CHECK:           %[[D:.*]] = affine.load %x[%i0] : memref<4xf64>
// CHECK-NEXT:      %[[R:.*]] = arith.truncf %[[D]] : f64 to f32
// CHECK-NEXT:      %[[BACK:.*]] = arith.extf %[[R]] : f32 to f64
// CHECK-NEXT:      %[[INEXACT:.*]] = arith.cmpf one, %[[BACK]], %[[D]] : f64
// CHECK:           %[[BITS:.*]] = arith.bitcast %[[R]] : f32 to i32
// CHECK:           %[[ODD:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT:      %[[H:.*]] = arith.truncf %[[ODD]] : f32 to f16
// CHECK-NEXT:      affine.store %[[H]], %out[%i0] : memref<4xf16>
func.func @d2h(%x: tensor<4xf64>) -> tensor<4xf16> {
  %s = tg.cast %x : tensor<4xf64> -> tensor<4xf16>
  func.return %s : tensor<4xf16>
}

// Unsigned constants: a global of the same bytes, signless (200 and 255 print as
// -56 and -1 in i8); a splat folds as an i8 constant that minui reads unsigned.
// CHECK:         "memref.global"() <{sym_name = "uconst_cst0", type = memref<3xi8>, initial_value = dense<[1, -56, -1]> : tensor<3xi8>, sym_visibility = "private", constant, alignment = 64 : i64}> : () -> ()
// CHECK-LABEL: func.func private @uconst_k1_min(
// CHECK-NEXT:    %[[K:.*]] = arith.constant -6 : i8
// CHECK:           %{{.*}} = arith.minui %{{.*}}, %[[K]] : i8
func.func @uconst(%x: tensor<3xui8>) -> tensor<3xui8> {
  %c = tg.constant dense<[1, 200, 255]> : tensor<3xui8>
  %k = tg.constant dense<250> : tensor<ui8>
  %s = tg.add %x, %c : (tensor<3xui8>, tensor<3xui8>) -> tensor<3xui8>
  %t = tg.min %s, %k : (tensor<3xui8>, tensor<ui8>) -> tensor<3xui8>
  func.return %t : tensor<3xui8>
}
