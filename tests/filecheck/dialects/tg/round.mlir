// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.round, in custom form and (second RUN line) through the generic
// form: f32, f64, f16, a scalar tensor and a strided operand (the result is
// row-major).

// CHECK-LABEL: func.func @round
func.func @round(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %h: tensor<8xf16>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.round %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.round %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.round %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.round %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %y16 = tg.round %h : tensor<8xf16> -> tensor<8xf16>
  %y16 = tg.round %h : tensor<8xf16> -> tensor<8xf16>
  // CHECK: %ys = tg.round %s : tensor<f32> -> tensor<f32>
  %ys = tg.round %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.round %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.round %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}
