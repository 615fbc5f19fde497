// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of the ops of trig.py (those of every unary elementwise
// op on floats), for each op.

// CHECK: tg.tan expects float tensors, but operand #0 is tensor<4xi32>
func.func @tan_of_ints(%x: tensor<4xi32>) {
  %r = tg.tan %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.tan on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @tan_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.tan %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// CHECK: tg.asin expects float tensors, but operand #0 is tensor<4xi32>
func.func @asin_of_ints(%x: tensor<4xi32>) {
  %r = tg.asin %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.asin on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @asin_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.asin %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// CHECK: tg.acos expects float tensors, but operand #0 is tensor<4xi32>
func.func @acos_of_ints(%x: tensor<4xi32>) {
  %r = tg.acos %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.acos on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @acos_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.acos %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// CHECK: tg.atan expects float tensors, but operand #0 is tensor<4xi32>
func.func @atan_of_ints(%x: tensor<4xi32>) {
  %r = tg.atan %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.atan on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @atan_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.atan %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// CHECK: tg.sinh expects float tensors, but operand #0 is tensor<4xi32>
func.func @sinh_of_ints(%x: tensor<4xi32>) {
  %r = tg.sinh %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.sinh on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @sinh_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.sinh %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// CHECK: tg.cosh expects float tensors, but operand #0 is tensor<4xi32>
func.func @cosh_of_ints(%x: tensor<4xi32>) {
  %r = tg.cosh %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.cosh on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @cosh_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.cosh %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// CHECK: tg.asinh expects float tensors, but operand #0 is tensor<4xi32>
func.func @asinh_of_ints(%x: tensor<4xi32>) {
  %r = tg.asinh %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.asinh on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @asinh_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.asinh %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// CHECK: tg.acosh expects float tensors, but operand #0 is tensor<4xi32>
func.func @acosh_of_ints(%x: tensor<4xi32>) {
  %r = tg.acosh %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.acosh on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @acosh_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.acosh %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// CHECK: tg.atanh expects float tensors, but operand #0 is tensor<4xi32>
func.func @atanh_of_ints(%x: tensor<4xi32>) {
  %r = tg.atanh %x : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.atanh on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<4xf64>
func.func @atanh_wrong_dtype(%x: tensor<4xf32>) {
  %r = tg.atanh %x : tensor<4xf32> -> tensor<4xf64>
  func.return
}

// -----

// CHECK: tg.tan on (tensor<4xf32>) must produce tensor<4xf32>, but its result type is tensor<2x2xf32>
func.func @tan_wrong_shape(%x: tensor<4xf32>) {
  %r = tg.tan %x : tensor<4xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// An elementwise result is a fresh row-major tensor, never a view.
// CHECK: tg.atanh on (tensor<3x2xf32, strided<[1, 3]>>) must produce tensor<3x2xf32>, but its result type is tensor<3x2xf32, strided<[1, 3]>>
func.func @atanh_strided_result(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %r = tg.atanh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32, strided<[1, 3]>>
  func.return
}
