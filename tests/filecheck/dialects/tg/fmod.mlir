// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.fmod, in custom form and (second RUN line) through the generic
// form: f32, f64, f16, broadcasting and a strided operand (the result is row-major).

// CHECK-LABEL: func.func @fmod
func.func @fmod(%x: tensor<4xf32>, %s: tensor<f32>, %d: tensor<2x3xf64>, %e: tensor<3xf64>, %h: tensor<4xf16>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %r = tg.fmod %x, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %r = tg.fmod %x, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: %r64 = tg.fmod %d, %e : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %r64 = tg.fmod %d, %e : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  // CHECK: %r16 = tg.fmod %h, %h : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %r16 = tg.fmod %h, %h : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  // CHECK: %rt = tg.fmod %t, %s : (tensor<3x2xf32, strided<[1, 3]>>, tensor<f32>) -> tensor<3x2xf32>
  %rt = tg.fmod %t, %s : (tensor<3x2xf32, strided<[1, 3]>>, tensor<f32>) -> tensor<3x2xf32>
  func.return
}
