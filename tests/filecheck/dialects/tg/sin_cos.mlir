// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.sin and tg.cos, in custom form and (second RUN line) through the
// generic form: f32, f64, a scalar tensor and a strided operand (the result is
// row-major).

// CHECK-LABEL: func.func @sin
func.func @sin(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.sin %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.sin %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.sin %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.sin %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %ys = tg.sin %s : tensor<f32> -> tensor<f32>
  %ys = tg.sin %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.sin %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.sin %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @cos
func.func @cos(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.cos %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.cos %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.cos %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.cos %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %ys = tg.cos %s : tensor<f32> -> tensor<f32>
  %ys = tg.cos %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.cos %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.cos %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}
