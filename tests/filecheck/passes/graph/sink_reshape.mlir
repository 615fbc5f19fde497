// RUN: qidao-opt %s -p sink-reshape --split-input-file | filecheck %s

// An int8 product reshaped to NHWC, then requantized: the elementwise ops move
// above the reshape and compute on the product's [M, N]; a per-channel [N] and a
// scalar operand are read as they are. The reshape now follows the last op.

// CHECK-LABEL: func.func @sinks
// CHECK-NEXT:    %p = tg.matmul_integer %a, %w : (tensor<6x8xui8>, tensor<8x4xi8>) -> tensor<6x4xi32>
// CHECK-NEXT:    %x = tg.add %p, %b : (tensor<6x4xi32>, tensor<4xi32>) -> tensor<6x4xi32>
// CHECK-NEXT:    %f = tg.cast %x : tensor<6x4xi32> -> tensor<6x4xf64>
// CHECK-NEXT:    %y = tg.mul %f, %s : (tensor<6x4xf64>, tensor<f64>) -> tensor<6x4xf64>
// CHECK-NEXT:    %{{.*}} = tg.reshape %y : tensor<6x4xf64> -> tensor<1x2x3x4xf64>
// CHECK-NEXT:    func.return
func.func @sinks(%a: tensor<6x8xui8>, %w: tensor<8x4xi8>, %b: tensor<4xi32>, %s: tensor<f64>) -> tensor<1x2x3x4xf64> {
  %p = tg.matmul_integer %a, %w : (tensor<6x8xui8>, tensor<8x4xi8>) -> tensor<6x4xi32>
  %r = tg.reshape %p : tensor<6x4xi32> -> tensor<1x2x3x4xi32>
  %x = tg.add %r, %b : (tensor<1x2x3x4xi32>, tensor<4xi32>) -> tensor<1x2x3x4xi32>
  %f = tg.cast %x : tensor<1x2x3x4xi32> -> tensor<1x2x3x4xf64>
  %y = tg.mul %f, %s : (tensor<1x2x3x4xf64>, tensor<f64>) -> tensor<1x2x3x4xf64>
  func.return %y : tensor<1x2x3x4xf64>
}

// -----

// A residual block: the other operand of the add is NHWC, dequantized by its own
// elementwise chain. Its reshape to [M, N] moves above that chain too (each op of
// which has one use), down to the ui8 tensor, where it is a view. A rank-4
// per-channel operand [1, 1, 1, N] is read as [N].

// CHECK-LABEL: func.func @residual
// CHECK:         %f = tg.cast %p : tensor<6x4xi32> -> tensor<6x4xf64>
// CHECK:         %[[VIEW:.*]] = tg.reshape %res : tensor<1x2x3x4xui8> -> tensor<6x4xui8>
// CHECK:         %[[C:.*]] = tg.cast %[[VIEW]] : tensor<6x4xui8> -> tensor<6x4xf64>
// CHECK:         %[[SCALE:.*]] = tg.reshape %scale : tensor<1x1x1x4xf64> -> tensor<4xf64>
// CHECK:         %[[D:.*]] = tg.mul %[[C]], %[[SCALE]] : (tensor<6x4xf64>, tensor<4xf64>) -> tensor<6x4xf64>
// CHECK:         %y = tg.add %f, %[[D]] : (tensor<6x4xf64>, tensor<6x4xf64>) -> tensor<6x4xf64>
// CHECK-NEXT:    %{{.*}} = tg.reshape %y : tensor<6x4xf64> -> tensor<1x2x3x4xf64>
func.func @residual(%a: tensor<6x8xui8>, %w: tensor<8x4xi8>, %res: tensor<1x2x3x4xui8>, %scale: tensor<1x1x1x4xf64>) -> tensor<1x2x3x4xf64> {
  %p = tg.matmul_integer %a, %w : (tensor<6x8xui8>, tensor<8x4xi8>) -> tensor<6x4xi32>
  %r = tg.reshape %p : tensor<6x4xi32> -> tensor<1x2x3x4xi32>
  %f = tg.cast %r : tensor<1x2x3x4xi32> -> tensor<1x2x3x4xf64>
  %c = tg.cast %res : tensor<1x2x3x4xui8> -> tensor<1x2x3x4xf64>
  %d = tg.mul %c, %scale : (tensor<1x2x3x4xf64>, tensor<1x1x1x4xf64>) -> tensor<1x2x3x4xf64>
  %y = tg.add %f, %d : (tensor<1x2x3x4xf64>, tensor<1x2x3x4xf64>) -> tensor<1x2x3x4xf64>
  func.return %y : tensor<1x2x3x4xf64>
}

// -----

// Must not fire: the reshape changes the last dimension ([6, 4] -> [2, 12]), so a
// per-channel operand would broadcast along another axis.

// CHECK-LABEL: func.func @last_dim_changes
// CHECK-NEXT:    %p = tg.matmul_integer
// CHECK-NEXT:    %r = tg.reshape %p : tensor<6x4xi32> -> tensor<2x12xi32>
// CHECK-NEXT:    %x = tg.add %r, %b : (tensor<2x12xi32>, tensor<12xi32>) -> tensor<2x12xi32>
func.func @last_dim_changes(%a: tensor<6x8xui8>, %w: tensor<8x4xi8>, %b: tensor<12xi32>) -> tensor<2x12xi32> {
  %p = tg.matmul_integer %a, %w : (tensor<6x8xui8>, tensor<8x4xi8>) -> tensor<6x4xi32>
  %r = tg.reshape %p : tensor<6x4xi32> -> tensor<2x12xi32>
  %x = tg.add %r, %b : (tensor<2x12xi32>, tensor<12xi32>) -> tensor<2x12xi32>
  func.return %x : tensor<2x12xi32>
}

// -----

// Must not fire: a float matmul's reshape stays (the pass is for int8 products).

// CHECK-LABEL: func.func @float_matmul
// CHECK-NEXT:    %p = tg.matmul
// CHECK-NEXT:    %r = tg.reshape %p : tensor<6x4xf32> -> tensor<1x2x3x4xf32>
// CHECK-NEXT:    %x = tg.add %r, %b : (tensor<1x2x3x4xf32>, tensor<4xf32>) -> tensor<1x2x3x4xf32>
func.func @float_matmul(%a: tensor<6x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<1x2x3x4xf32> {
  %p = tg.matmul %a, %w : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
  %r = tg.reshape %p : tensor<6x4xf32> -> tensor<1x2x3x4xf32>
  %x = tg.add %r, %b : (tensor<1x2x3x4xf32>, tensor<4xf32>) -> tensor<1x2x3x4xf32>
  func.return %x : tensor<1x2x3x4xf32>
}

// -----

// Must not fire: an operand that broadcasts along a leading dimension ([2, 1, 1]:
// one value per image row) has no equivalent on the product's [M, N].

// CHECK-LABEL: func.func @leading_broadcast
// CHECK-NEXT:    %p = tg.matmul_integer
// CHECK-NEXT:    %r = tg.reshape %p
// CHECK-NEXT:    %x = tg.add %r, %b : (tensor<1x2x3x4xi32>, tensor<2x1x1xi32>) -> tensor<1x2x3x4xi32>
func.func @leading_broadcast(%a: tensor<6x8xui8>, %w: tensor<8x4xi8>, %b: tensor<2x1x1xi32>) -> tensor<1x2x3x4xi32> {
  %p = tg.matmul_integer %a, %w : (tensor<6x8xui8>, tensor<8x4xi8>) -> tensor<6x4xi32>
  %r = tg.reshape %p : tensor<6x4xi32> -> tensor<1x2x3x4xi32>
  %x = tg.add %r, %b : (tensor<1x2x3x4xi32>, tensor<2x1x1xi32>) -> tensor<1x2x3x4xi32>
  func.return %x : tensor<1x2x3x4xi32>
}

// -----

// Must not fire: a full-shape operand that is a strided view (a transpose) would
// need a copy to be read as [M, N].

// CHECK-LABEL: func.func @strided_operand
// CHECK:         %r = tg.reshape %p
// CHECK:         %x = tg.add %r, %t : (tensor<1x2x3x4xi32>, tensor<1x2x3x4xi32, strided<[24, 3, 1, 6]>>) -> tensor<1x2x3x4xi32>
func.func @strided_operand(%a: tensor<6x8xui8>, %w: tensor<8x4xi8>, %v: tensor<1x4x2x3xi32>) -> tensor<1x2x3x4xi32> {
  %p = tg.matmul_integer %a, %w : (tensor<6x8xui8>, tensor<8x4xi8>) -> tensor<6x4xi32>
  %r = tg.reshape %p : tensor<6x4xi32> -> tensor<1x2x3x4xi32>
  %t = tg.transpose %v perm = [0, 2, 3, 1] : tensor<1x4x2x3xi32> -> tensor<1x2x3x4xi32, strided<[24, 3, 1, 6]>>
  %x = tg.add %r, %t : (tensor<1x2x3x4xi32>, tensor<1x2x3x4xi32, strided<[24, 3, 1, 6]>>) -> tensor<1x2x3x4xi32>
  func.return %x : tensor<1x2x3x4xi32>
}
