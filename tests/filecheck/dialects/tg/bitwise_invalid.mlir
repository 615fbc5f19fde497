// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of the bitwise ops and the shifts: their element kinds,
// one element type, broadcastable shapes, the inferred result type.

// CHECK: tg.bitwise_and expects integer or bool tensors, but operand #0 is tensor<4xf32>
func.func @and_of_floats(%x: tensor<4xf32>) {
  %r = tg.bitwise_and %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.bitwise_or expects operands of one element type, got (tensor<4xi32>, tensor<4xi64>)
func.func @or_of_mixed(%x: tensor<4xi32>, %y: tensor<4xi64>) {
  %r = tg.bitwise_or %x, %y : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.bitwise_xor: operand shapes [4] and [3] are not broadcastable (NumPy rules: trailing dimensions must be equal or 1)
func.func @xor_not_broadcastable(%x: tensor<4xi32>, %y: tensor<3xi32>) {
  %r = tg.bitwise_xor %x, %y : (tensor<4xi32>, tensor<3xi32>) -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.bitwise_and on (tensor<4xi32>, tensor<4xi32>) must produce tensor<4xi32>, but its result type is tensor<4xi1>
func.func @and_wrong_result(%x: tensor<4xi32>) {
  %r = tg.bitwise_and %x, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.bitwise_not expects integer or bool tensors, but operand #0 is tensor<4xf64>
func.func @not_of_floats(%x: tensor<4xf64>) {
  %r = tg.bitwise_not %x : tensor<4xf64> -> tensor<4xf64>
  func.return
}

// -----

// CHECK: tg.bitwise_not on (tensor<4xi8>) must produce tensor<4xi8>, but its result type is tensor<2x2xi8>
func.func @not_wrong_shape(%x: tensor<4xi8>) {
  %r = tg.bitwise_not %x : tensor<4xi8> -> tensor<2x2xi8>
  func.return
}

// -----

// A bool has no bits to shift.
// CHECK: tg.shift_left expects integer tensors, but operand #0 is tensor<4xi1>
func.func @shift_bools(%x: tensor<4xi1>) {
  %r = tg.shift_left %x, %x : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.shift_right expects integer tensors, but operand #0 is tensor<4xf32>
func.func @shift_floats(%x: tensor<4xf32>) {
  %r = tg.shift_right %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// The amount has the shifted value's element type.
// CHECK: tg.shift_right expects operands of one element type, got (tensor<4xui8>, tensor<4xi64>)
func.func @shift_by_other_type(%x: tensor<4xui8>, %s: tensor<4xi64>) {
  %r = tg.shift_right %x, %s : (tensor<4xui8>, tensor<4xi64>) -> tensor<4xui8>
  func.return
}

// -----

// CHECK: tg.shift_left on (tensor<2x4xui16>, tensor<4xui16>) must produce tensor<2x4xui16>, but its result type is tensor<4xui16>
func.func @shift_wrong_shape(%x: tensor<2x4xui16>, %s: tensor<4xui16>) {
  %r = tg.shift_left %x, %s : (tensor<2x4xui16>, tensor<4xui16>) -> tensor<4xui16>
  func.return
}
