// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.sin and tg.cos (those of every unary elementwise
// op).

// CHECK: tg.sin expects float tensors, but operand #0 is tensor<4xi32>
func.func @sin_of_ints(%x: tensor<4xi32>) {
  %r = tg.sin %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.sin on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<2x2xf32>
func.func @sin_wrong_shape(%x: tensor<4xf32>) {
  %r = tg.sin %x : tensor<4xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// CHECK: tg.sin on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @sin_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.sin %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// An elementwise result is a fresh row-major tensor, never a view.
// CHECK: tg.sin on (tensor<3x2xf32, strided<[1, 3]>>) must produce tensor<3x2xf32>, but its result type is tensor<3x2xf32, strided<[1, 3]>>
func.func @sin_strided_result(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %r = tg.sin %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32, strided<[1, 3]>>
  func.return
}

// -----

// CHECK: tg.cos expects float tensors, but operand #0 is tensor<4xi32>
func.func @cos_of_ints(%x: tensor<4xi32>) {
  %r = tg.cos %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.cos on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<2x2xf32>
func.func @cos_wrong_shape(%x: tensor<4xf32>) {
  %r = tg.cos %x : tensor<4xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// CHECK: tg.cos on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @cos_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.cos %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// An elementwise result is a fresh row-major tensor, never a view.
// CHECK: tg.cos on (tensor<3x2xf32, strided<[1, 3]>>) must produce tensor<3x2xf32>, but its result type is tensor<3x2xf32, strided<[1, 3]>>
func.func @cos_strided_result(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %r = tg.cos %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32, strided<[1, 3]>>
  func.return
}
