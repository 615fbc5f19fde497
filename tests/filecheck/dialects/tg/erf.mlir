// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.erf, in custom form and (second RUN line) through the generic
// form: f32, f64, a scalar tensor and a strided operand (the result is row-major).

// CHECK-LABEL: func.func @erf
func.func @erf(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %e = tg.erf %x : tensor<4xf32> -> tensor<4xf32>
  %e = tg.erf %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %e64 = tg.erf %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %e64 = tg.erf %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %es = tg.erf %s : tensor<f32> -> tensor<f32>
  %es = tg.erf %s : tensor<f32> -> tensor<f32>
  // CHECK: %et = tg.erf %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %et = tg.erf %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}
