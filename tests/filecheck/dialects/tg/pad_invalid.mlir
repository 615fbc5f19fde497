// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.pad.

// CHECK: tg.pad: low must have one amount per dimension of the input tensor<2x3xf32> (2), got [1]
func.func @low_rank(%x: tensor<2x3xf32>) {
  %p = tg.pad %x low = [1] high = [0, 0] value = 0.000000e+00 : tensor<2x3xf32> -> tensor<3x3xf32>
  func.return
}

// -----

// CHECK: tg.pad: high amounts must be >= 0, got [0, -1]
func.func @negative(%x: tensor<2x3xf32>) {
  %p = tg.pad %x low = [0, 0] high = [0, -1] value = 0.000000e+00 : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// CHECK: tg.pad on (tensor<2x3xf32>) must produce tensor<4x3xf32>, but its result type is tensor<4x4xf32>
func.func @wrong_result(%x: tensor<2x3xf32>) {
  %p = tg.pad %x low = [1, 0] high = [1, 0] value = 0.000000e+00 : tensor<2x3xf32> -> tensor<4x4xf32>
  func.return
}

// -----

// CHECK: tg.pad on (tensor<3x2xf32, strided<[1, 3]>>) must produce tensor<4x2xf32>, but its result type is tensor<4x2xf32, strided<[1, 4]>>
func.func @strided_result(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %p = tg.pad %t low = [1, 0] high = [0, 0] value = 0.000000e+00 : tensor<3x2xf32, strided<[1, 3]>> -> tensor<4x2xf32, strided<[1, 4]>>
  func.return
}

// -----

// CHECK: tg.pad expects float tensors, but operand #0 is tensor<2xi1>
func.func @bool(%x: tensor<2xi1>) {
  %p = tg.pad %x low = [1] high = [1] value = 0.000000e+00 : tensor<2xi1> -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.pad: value 0.5 is not an integer of i32 (from -2147483648 to 2147483647)
func.func @fraction(%x: tensor<2xi32>) {
  %p = tg.pad %x low = [1] high = [1] value = 5.000000e-01 : tensor<2xi32> -> tensor<4xi32>
  func.return
}

// -----

// CHECK: tg.pad: value 256.0 is not an integer of ui8 (from 0 to 255)
func.func @out_of_range(%x: tensor<2xui8>) {
  %p = tg.pad %x low = [1] high = [1] value = 2.560000e+02 : tensor<2xui8> -> tensor<4xui8>
  func.return
}

// -----

// CHECK: tg.pad: value must be a finite float, got -inf
func.func @infinite(%x: tensor<2xf32>) {
  %p = "tg.pad"(%x) <{low = array<i64: 1>, high = array<i64: 1>, value = 0xFFF0000000000000 : f64}> : (tensor<2xf32>) -> tensor<4xf32>
  func.return
}
