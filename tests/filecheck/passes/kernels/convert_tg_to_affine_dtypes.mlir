// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s

// convert-tg-to-affine on dtypes beyond float32: integer arithmetic becomes the
// arith integer ops, comparisons cmpf/cmpi with an i1 result, tg.select
// arith.select, tg.cast the arith conversion for its pair of types
// (qidao/passes/kernels/lowering/scalar.py has the table). Memrefs of i1 are NumPy's bool
// arrays (the bytes are convert-to-llvm's business).

// Integer division truncates; the divisor is made 1 where it is 0 or -1 (which
// trap on x86) and the result selected: x / 0 = 0, x / -1 = 0 - x.
// CHECK-LABEL: func.func private @int_div_k0_div(%a: memref<4xi64> {llvm.noalias}, %b: memref<4xi64> {llvm.noalias}, %out: memref<4xi64> {llvm.noalias}) attributes {qd.kernel = "tg.div"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-NEXT:    %[[MINUS_ONE:.*]] = arith.constant -1 : i64
// CHECK-NEXT:    affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[A:.*]] = affine.load %a[%i0] : memref<4xi64>
// CHECK-NEXT:      %[[B:.*]] = affine.load %b[%i0] : memref<4xi64>
// CHECK-NEXT:      %[[BY_ZERO:.*]] = arith.cmpi eq, %[[B]], %[[ZERO]] : i64
// CHECK-NEXT:      %[[BY_MINUS_ONE:.*]] = arith.cmpi eq, %[[B]], %[[MINUS_ONE]] : i64
// CHECK-NEXT:      %[[SPECIAL:.*]] = arith.ori %[[BY_ZERO]], %[[BY_MINUS_ONE]] : i1
// CHECK-NEXT:      %[[SAFE:.*]] = arith.select %[[SPECIAL]], %[[ONE]], %[[B]] : i64
// CHECK-NEXT:      %[[Q:.*]] = arith.divsi %[[A]], %[[SAFE]] : i64
// CHECK-NEXT:      %[[NEG:.*]] = arith.subi %[[ZERO]], %[[A]] : i64
// CHECK-NEXT:      %[[Q1:.*]] = arith.select %[[BY_MINUS_ONE]], %[[NEG]], %[[Q]] : i64
// CHECK-NEXT:      %[[Q2:.*]] = arith.select %[[BY_ZERO]], %[[ZERO]], %[[Q1]] : i64
// CHECK-NEXT:      affine.store %[[Q2]], %out[%i0] : memref<4xi64>
// CHECK-NEXT:    } {qd.loop = "i0"}
func.func @int_div(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %q = tg.div %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  func.return %q : tensor<4xi64>
}

// An integer splat folds into the kernel as an integer arith.constant.
// CHECK-LABEL: func.func private @int_splat_k0_max(
// CHECK-NEXT:    %[[THREE:.*]] = arith.constant 3 : i64
// CHECK-NEXT:    affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[N:.*]] = affine.load %n[%i0] : memref<4xi64>
// CHECK-NEXT:      %{{.*}} = arith.maxsi %[[N]], %[[THREE]] : i64
func.func @int_splat(%n: tensor<4xi64>) -> tensor<4xi64> {
  %three = tg.constant dense<3> : tensor<i64>
  %r = tg.max %n, %three : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  func.return %r : tensor<4xi64>
}

// neg is 0 - x, abs selects it where x < 0.
// CHECK-LABEL: func.func private @int_unary_k0_abs(
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:           %[[X:.*]] = affine.load %n[%i0] : memref<4xi32>
// CHECK-NEXT:      %[[LT:.*]] = arith.cmpi slt, %[[X]], %[[ZERO]] : i32
// CHECK-NEXT:      %[[NEG:.*]] = arith.subi %[[ZERO]], %[[X]] : i32
// CHECK-NEXT:      %{{.*}} = arith.select %[[LT]], %[[NEG]], %[[X]] : i32
// CHECK-LABEL: func.func private @int_unary_k1_neg(
// CHECK:           %{{.*}} = arith.subi %{{.*}}, %{{.*}} : i32
func.func @int_unary(%n: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %abs = tg.abs %n : tensor<4xi32> -> tensor<4xi32>
  %neg = tg.neg %n : tensor<4xi32> -> tensor<4xi32>
  func.return %abs, %neg : tensor<4xi32>, tensor<4xi32>
}

// One kernel per op: the comparison stores i1, the logical ops read and write
// it, tg.select picks by it.
// CHECK-LABEL: func.func private @bools_k0_less(%x: memref<4xf32> {llvm.noalias}, %out: memref<4xi1> {llvm.noalias}) attributes {qd.kernel = "tg.less"} {
// CHECK:           %[[LT:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      affine.store %[[LT]], %out[%i0] : memref<4xi1>
// CHECK-LABEL: func.func private @bools_k1_logical_and(
// CHECK:           %{{.*}} = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-LABEL: func.func private @bools_k2_select(
// CHECK:           %[[C:.*]] = affine.load %keep[%i0] : memref<4xi1>
// CHECK-NEXT:      %[[T:.*]] = affine.load %x[%i0] : memref<4xf32>
// CHECK-NEXT:      %[[F:.*]] = affine.load %y[%i0] : memref<4xf32>
// CHECK-NEXT:      %{{.*}} = arith.select %[[C]], %[[T]], %[[F]] : f32
// CHECK-LABEL: func.func private @bools_k3_logical_not(
// CHECK:         %[[TRUE:.*]] = arith.constant true
// CHECK:           %{{.*}} = arith.xori %{{.*}}, %[[TRUE]] : i1
// CHECK-LABEL: func.func private @bools_k4_less(
// CHECK:           %{{.*}} = arith.cmpi slt, %{{.*}}, %{{.*}} : i32
func.func @bools(%x: tensor<4xf32>, %y: tensor<4xf32>, %m: tensor<4xi1>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi1>, tensor<4xi1>) {
  %zero = tg.constant dense<0.0> : tensor<f32>
  %lt = tg.less %x, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
  %keep = tg.logical_and %lt, %m : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %r = tg.select %keep, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n = tg.logical_not %m : tensor<4xi1> -> tensor<4xi1>
  %ilt = tg.less %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  func.return %r, %n, %ilt : tensor<4xf32>, tensor<4xi1>, tensor<4xi1>
}

// Casts: float to int fptosi (truncation), to bool a comparison with 0 (NaN is
// true), bool to int zero-extends (true is 1), f64 to f32 truncf, int to float
// sitofp.
// CHECK-LABEL: func.func private @casts_k0_cast(
// CHECK:           %{{.*}} = arith.fptosi %{{.*}} : f64 to i32
// CHECK-LABEL: func.func private @casts_k1_cast(
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK:           %{{.*}} = arith.cmpf une, %{{.*}}, %[[ZERO]] : f64
// CHECK-LABEL: func.func private @casts_k2_cast(
// CHECK:           %{{.*}} = arith.extui %{{.*}} : i1 to i64
// CHECK-LABEL: func.func private @casts_k3_cast(
// CHECK:           %{{.*}} = arith.truncf %{{.*}} : f64 to f32
// CHECK-LABEL: func.func private @casts_k4_cast(
// CHECK:           %{{.*}} = arith.sitofp %{{.*}} : i64 to f32
func.func @casts(%x: tensor<4xf64>, %b: tensor<4xi1>, %i: tensor<4xi64>) -> (tensor<4xi32>, tensor<4xi1>, tensor<4xi64>, tensor<4xf32>, tensor<4xf32>) {
  %to_i32 = tg.cast %x : tensor<4xf64> -> tensor<4xi32>
  %to_bool = tg.cast %x : tensor<4xf64> -> tensor<4xi1>
  %to_i64 = tg.cast %b : tensor<4xi1> -> tensor<4xi64>
  %to_f32 = tg.cast %x : tensor<4xf64> -> tensor<4xf32>
  %from_i64 = tg.cast %i : tensor<4xi64> -> tensor<4xf32>
  func.return %to_i32, %to_bool, %to_i64, %to_f32, %from_i64 : tensor<4xi32>, tensor<4xi1>, tensor<4xi64>, tensor<4xf32>, tensor<4xf32>
}

// tg.pow is math.powf.
// CHECK-LABEL: func.func private @pow_k0_pow(
// CHECK:           %{{.*}} = math.powf %{{.*}}, %{{.*}} : f32
func.func @pow(%x: tensor<4xf32>, %e: tensor<f32>) -> tensor<4xf32> {
  %p = tg.pow %x, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %p : tensor<4xf32>
}

// A fused where: comparison, logic, math and select in one nest, the bools in
// registers; the bool mask input is read like any other.
// CHECK-LABEL: func.func private @fused_where_k0_fused(%x: memref<4xf32> {llvm.noalias}, %m: memref<4xi1> {llvm.noalias}, %out: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.greater+tg.logical_and+tg.exp+tg.select"} {
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:    affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[X:.*]] = affine.load %x[%i0] : memref<4xf32>
// CHECK-NEXT:      %[[POS:.*]] = arith.cmpf ogt, %[[X]], %[[HALF]] : f32
// CHECK-NEXT:      %[[M:.*]] = affine.load %m[%i0] : memref<4xi1>
// CHECK-NEXT:      %[[BOTH:.*]] = arith.andi %[[POS]], %[[M]] : i1
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[BOTH]], %[[E]], %[[X]] : f32
// CHECK-NEXT:      affine.store %[[R]], %out[%i0] : memref<4xf32>
// CHECK-NEXT:    } {qd.loop = "i0"}
func.func @fused_where(%x: tensor<4xf32>, %m: tensor<4xi1>) -> tensor<4xf32> {
  %half = tg.constant dense<0.5> : tensor<f32>
  %y = tg.fused %x, %half, %m : (tensor<4xf32>, tensor<f32>, tensor<4xi1>) -> tensor<4xf32> {
  ^bb0(%xa: tensor<4xf32>, %h: tensor<f32>, %ma: tensor<4xi1>):
    %pos = tg.greater %xa, %h : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
    %both = tg.logical_and %pos, %ma : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
    %e = tg.exp %xa : tensor<4xf32> -> tensor<4xf32>
    %r = tg.select %both, %e, %xa : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    tg.yield %r : tensor<4xf32>
  }
  func.return %y : tensor<4xf32>
}
