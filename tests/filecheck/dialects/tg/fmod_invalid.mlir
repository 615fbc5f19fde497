// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.fmod: floats only, one element type,
// broadcastable shapes, the inferred result type.

// The integer remainder is composed from tg.div by the frontends.
// CHECK: tg.fmod expects float tensors, but operand #0 is tensor<4xi32>
func.func @fmod_of_ints(%x: tensor<4xi32>) {
  %r = tg.fmod %x, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.fmod expects operands of one element type, got (tensor<4xf32>, tensor<4xf64>)
func.func @fmod_mixed(%x: tensor<4xf32>, %y: tensor<4xf64>) {
  %r = tg.fmod %x, %y : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.fmod: operand shapes [4] and [3] are not broadcastable (NumPy rules: trailing dimensions must be equal or 1)
func.func @fmod_not_broadcastable(%x: tensor<4xf32>, %y: tensor<3xf32>) {
  %r = tg.fmod %x, %y : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.fmod on (tensor<2x4xf32>, tensor<4xf32>) must produce tensor<2x4xf32>, but its result type is tensor<4xf32>
func.func @fmod_wrong_shape(%x: tensor<2x4xf32>, %y: tensor<4xf32>) {
  %r = tg.fmod %x, %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}
