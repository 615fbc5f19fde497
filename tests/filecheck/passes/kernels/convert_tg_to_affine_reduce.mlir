// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s

// convert-tg-to-affine of tg.reduce_*: which nest a reduction gets depends on where
// the contiguous axis of its input is (``lowering/reduce.py``).

// The squeeze-and-excitation pool of an NHWC tensor (mean over H and W) keeps the
// channel axis, contiguous, innermost: an init nest, then the kept batch loop, the
// reduced r0 (H), r1 (W) and the channels i1 accumulating into the output (no
// iter_args), then a norm nest that divides by H * W.
// CHECK-LABEL: func.func private @se_pool_k0_reduce_mean(%x: memref<1x4x4x32xf32> {llvm.noalias}, %out: memref<1x1x1x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_mean"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[COUNT:.*]] = arith.constant 1.600000e+01 : f32
// CHECK-NEXT:    affine.for %i0_init = 0 to 1 {
// CHECK-NEXT:      affine.for %i1_init = 0 to 32 {
// CHECK-NEXT:        affine.store %[[ZERO]], %out[%i0_init, 0, 0, %i1_init] : memref<1x1x1x32xf32>
// CHECK-NEXT:      } {qd.loop = "i1_init"}
// CHECK-NEXT:    } {qd.loop = "i0_init"}
// CHECK-NEXT:    affine.for %i0 = 0 to 1 {
// CHECK-NEXT:      affine.for %r0 = 0 to 4 {
// CHECK-NEXT:        affine.for %r1 = 0 to 4 {
// CHECK-NEXT:          affine.for %i1 = 0 to 32 {
// CHECK-NEXT:            %[[ACC:.*]] = affine.load %out[%i0, 0, 0, %i1] : memref<1x1x1x32xf32>
// CHECK-NEXT:            %[[X:.*]] = affine.load %x[%i0, %r0, %r1, %i1] : memref<1x4x4x32xf32>
// CHECK-NEXT:            %[[SUM:.*]] = arith.addf %[[ACC]], %[[X]] : f32
// CHECK-NEXT:            affine.store %[[SUM]], %out[%i0, 0, 0, %i1] : memref<1x1x1x32xf32>
// CHECK-NEXT:          } {qd.loop = "i1"}
// CHECK-NEXT:        } {qd.loop = "r1"}
// CHECK-NEXT:      } {qd.loop = "r0"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    affine.for %i0_norm = 0 to 1 {
// CHECK-NEXT:      affine.for %i1_norm = 0 to 32 {
// CHECK-NEXT:        %[[TOTAL:.*]] = affine.load %out[%i0_norm, 0, 0, %i1_norm] : memref<1x1x1x32xf32>
// CHECK-NEXT:        %[[MEAN:.*]] = arith.divf %[[TOTAL]], %[[COUNT]] : f32
// CHECK-NEXT:        affine.store %[[MEAN]], %out[%i0_norm, 0, 0, %i1_norm] : memref<1x1x1x32xf32>
// CHECK-NEXT:      } {qd.loop = "i1_norm"}
// CHECK-NEXT:    } {qd.loop = "i0_norm"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @se_pool(%x: tensor<1x4x4x32xf32>) -> tensor<1x1x1x32xf32> {
  %m = tg.reduce_mean %x axes = [1, 2] keepdims : tensor<1x4x4x32xf32> -> tensor<1x1x1x32xf32>
  func.return %m : tensor<1x1x1x32xf32>
}

// A max over H alone keeps W and C: the kept loops but the last (i0: N, i1: W) are
// outermost, then the reduced r0 (H), then the channels i2; the init is -inf and
// there is no norm nest.
// CHECK-LABEL: func.func private @max_over_h_k0_reduce_max(%x: memref<2x4x3x8xf32> {llvm.noalias}, %out: memref<2x3x8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_max"} {
// CHECK-NEXT:    %[[NEG_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK:         affine.store %[[NEG_INF]], %out[%i0_init, %i1_init, %i2_init] : memref<2x3x8xf32>
// CHECK:         affine.for %i0 = 0 to 2 {
// CHECK-NEXT:      affine.for %i1 = 0 to 3 {
// CHECK-NEXT:        affine.for %r0 = 0 to 4 {
// CHECK-NEXT:          affine.for %i2 = 0 to 8 {
// CHECK-NEXT:            %[[ACC:.*]] = affine.load %out[%i0, %i1, %i2] : memref<2x3x8xf32>
// CHECK-NEXT:            %[[X:.*]] = affine.load %x[%i0, %r0, %i1, %i2] : memref<2x4x3x8xf32>
// CHECK-NEXT:            %[[MAX:.*]] = arith.maximumf %[[ACC]], %[[X]] : f32
// CHECK-NEXT:            affine.store %[[MAX]], %out[%i0, %i1, %i2] : memref<2x3x8xf32>
// CHECK-NEXT:          } {qd.loop = "i2"}
// CHECK-NEXT:        } {qd.loop = "r0"}
// CHECK-NEXT:      } {qd.loop = "i1"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @max_over_h(%x: tensor<2x4x3x8xf32>) -> tensor<2x3x8xf32> {
  %m = tg.reduce_max %x axes = [1] : tensor<2x4x3x8xf32> -> tensor<2x3x8xf32>
  func.return %m : tensor<2x3x8xf32>
}

// Must not change: a reduction over the last axis (a row) keeps the row nest, the
// kept i0 around the reduced r0 carrying the sum in iter_args.
// CHECK-LABEL: func.func private @row_sum_k0_reduce_sum(%x: memref<4x8xf32> {llvm.noalias}, %out: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_sum"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[SUM:.*]] = affine.for %r0 = 0 to 8 iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:        %[[X:.*]] = affine.load %x[%i0, %r0] : memref<4x8xf32>
// CHECK-NEXT:        %[[NEXT:.*]] = arith.addf %[[ACC]], %[[X]] : f32
// CHECK-NEXT:        affine.yield %[[NEXT]] : f32
// CHECK-NEXT:      } {qd.loop = "r0"}
// CHECK-NEXT:      affine.store %[[SUM]], %out[%i0] : memref<4xf32>
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @row_sum(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %s = tg.reduce_sum %x axes = [-1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// Must not change either: the last axis is kept but not contiguous (a transpose,
// stride 8), while the reduced axis has stride 1; the row nest reads along it.
// CHECK-LABEL: func.func private @columns_of_transpose_k0_reduce_sum(%t: memref<8x4xf32, strided<[1, 8]>> {llvm.noalias}, %out: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_sum"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[SUM:.*]] = affine.for %r0 = 0 to 8 iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:        %[[X:.*]] = affine.load %t[%r0, %i0] : memref<8x4xf32, strided<[1, 8]>>
func.func @columns_of_transpose(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  %t = tg.transpose %a perm = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32, strided<[1, 8]>>
  %s = tg.reduce_sum %t axes = [0] : tensor<8x4xf32, strided<[1, 8]>> -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
