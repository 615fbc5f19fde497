// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.round (those of every unary elementwise op).

// Integers are already integral: tg.round takes floats only.
// CHECK: tg.round expects float tensors, but operand #0 is tensor<4xi32>
func.func @round_of_ints(%x: tensor<4xi32>) {
  %r = tg.round %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.round on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<2x2xf32>
func.func @round_wrong_shape(%x: tensor<4xf32>) {
  %r = tg.round %x : tensor<4xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// The result is a float of the operand's type, not an integer.
// CHECK: tg.round on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xi32>
func.func @round_to_int(%x: tensor<4xf32>) {
  %r = tg.round %x : tensor<4xf32> -> tensor<4xi32>
  func.return
}

// -----

// An elementwise result is a fresh row-major tensor, never a view.
// CHECK: tg.round on (tensor<3x2xf32, strided<[1, 3]>>) must produce tensor<3x2xf32>, but its result type is tensor<3x2xf32, strided<[1, 3]>>
func.func @round_strided_result(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %r = tg.round %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32, strided<[1, 3]>>
  func.return
}
