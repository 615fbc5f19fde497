// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of the ops on dtypes beyond float32: which element
// kinds each op takes, the i1 results of comparisons, tg.select's condition and
// values, tg.cast's result.

// CHECK: tg.add expects float or integer tensors, but operand #0 is tensor<4xi1>
func.func @add_of_bools(%x: tensor<4xi1>) {
  %r = tg.add %x, %x : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.div expects operands of one element type, got (tensor<4xi32>, tensor<4xi64>)
func.func @div_mixed_ints(%x: tensor<4xi32>, %y: tensor<4xi64>) {
  %r = tg.div %x, %y : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.pow expects float tensors, but operand #0 is tensor<4xi64>
func.func @pow_of_ints(%x: tensor<4xi64>) {
  %r = tg.pow %x, %x : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  func.return
}

// -----

// CHECK: tg.abs expects float or integer tensors, but operand #0 is tensor<4xi1>
func.func @abs_of_bools(%x: tensor<4xi1>) {
  %r = tg.abs %x : tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.sqrt expects float tensors, but operand #0 is tensor<4xi32>
func.func @sqrt_of_ints(%x: tensor<4xi32>) {
  %r = tg.sqrt %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.less on (tensor<4xf32>, tensor<4xf32>) must produce tensor<4xi1>, but its result type is tensor<4xf32>
func.func @less_not_bool(%x: tensor<4xf32>) {
  %r = tg.less %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.greater expects float or integer tensors, but operand #0 is tensor<4xi1>
func.func @greater_of_bools(%x: tensor<4xi1>) {
  %r = tg.greater %x, %x : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.equal expects operands of one element type, got (tensor<4xf32>, tensor<4xi32>)
func.func @equal_mixed(%x: tensor<4xf32>, %y: tensor<4xi32>) {
  %r = tg.equal %x, %y : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.less_equal: operand shapes [2, 3] and [4] are not broadcastable (NumPy rules: trailing dimensions must be equal or 1)
func.func @less_equal_not_broadcastable(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  %r = tg.less_equal %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xi1>
  func.return
}

// -----

// CHECK: tg.logical_and expects bool (i1) tensors, but operand #0 is tensor<4xf32>
func.func @and_of_floats(%x: tensor<4xf32>) {
  %r = tg.logical_and %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.logical_not expects bool (i1) tensors, but operand #0 is tensor<4xi32>
func.func @not_of_ints(%x: tensor<4xi32>) {
  %r = tg.logical_not %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.select expects a bool (i1) condition, but operand #0 is tensor<4xf32>
func.func @select_float_condition(%c: tensor<4xf32>, %x: tensor<4xf32>) {
  %r = tg.select %c, %x, %x : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.select expects true and false values of one element type, got (tensor<4xf32>, tensor<4xf64>)
func.func @select_mixed_values(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf64>) {
  %r = tg.select %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.select: operand shapes [2], [3] and [] are not broadcastable (NumPy rules: trailing dimensions must be equal or 1)
func.func @select_not_broadcastable(%c: tensor<2xi1>, %x: tensor<3xf32>, %s: tensor<f32>) {
  %r = tg.select %c, %x, %s : (tensor<2xi1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return
}

// -----

// CHECK: tg.select on (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) must produce tensor<2x3xf32>, but its result type is tensor<3xf32>
func.func @select_wrong_shape(%c: tensor<2x1xi1>, %x: tensor<3xf32>, %s: tensor<f32>) {
  %r = tg.select %c, %x, %s : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return
}

// -----

// CHECK: tg.cast on (tensor<2x3xf32>) must produce tensor<2x3xi32>, but its result type is tensor<6xi32>
func.func @cast_wrong_shape(%x: tensor<2x3xf32>) {
  %r = tg.cast %x : tensor<2x3xf32> -> tensor<6xi32>
  func.return
}

// -----

// CHECK: tg.cast result #0 has element type f80, which qidao does not support (supported: f32, f64, f16, i8, i16, i32, i64, ui8, ui16, ui32, ui64, i1, bf16, f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f4E2M1FN, i4, ui4, i2, ui2)
func.func @cast_to_f80(%x: tensor<4xf32>) {
  %r = tg.cast %x : tensor<4xf32> -> tensor<4xf80>
  func.return
}
