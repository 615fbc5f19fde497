// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of the ops of trig.py (tan, the inverse trigonometric functions, the
// hyperbolic functions and their inverses), in custom form and (second RUN line)
// through the generic form: f32, f64, f16, a scalar tensor and a strided operand
// (the result is row-major).

// CHECK-LABEL: func.func @tan
func.func @tan(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %h: tensor<4xf16>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.tan %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.tan %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.tan %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.tan %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %y16 = tg.tan %h : tensor<4xf16> -> tensor<4xf16>
  %y16 = tg.tan %h : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %ys = tg.tan %s : tensor<f32> -> tensor<f32>
  %ys = tg.tan %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.tan %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.tan %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @asin
func.func @asin(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %h: tensor<4xf16>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.asin %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.asin %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.asin %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.asin %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %y16 = tg.asin %h : tensor<4xf16> -> tensor<4xf16>
  %y16 = tg.asin %h : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %ys = tg.asin %s : tensor<f32> -> tensor<f32>
  %ys = tg.asin %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.asin %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.asin %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @acos
func.func @acos(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %h: tensor<4xf16>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.acos %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.acos %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.acos %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.acos %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %y16 = tg.acos %h : tensor<4xf16> -> tensor<4xf16>
  %y16 = tg.acos %h : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %ys = tg.acos %s : tensor<f32> -> tensor<f32>
  %ys = tg.acos %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.acos %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.acos %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @atan
func.func @atan(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %h: tensor<4xf16>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.atan %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.atan %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.atan %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.atan %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %y16 = tg.atan %h : tensor<4xf16> -> tensor<4xf16>
  %y16 = tg.atan %h : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %ys = tg.atan %s : tensor<f32> -> tensor<f32>
  %ys = tg.atan %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.atan %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.atan %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @sinh
func.func @sinh(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %h: tensor<4xf16>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.sinh %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.sinh %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.sinh %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.sinh %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %y16 = tg.sinh %h : tensor<4xf16> -> tensor<4xf16>
  %y16 = tg.sinh %h : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %ys = tg.sinh %s : tensor<f32> -> tensor<f32>
  %ys = tg.sinh %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.sinh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.sinh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @cosh
func.func @cosh(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %h: tensor<4xf16>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.cosh %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.cosh %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.cosh %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.cosh %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %y16 = tg.cosh %h : tensor<4xf16> -> tensor<4xf16>
  %y16 = tg.cosh %h : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %ys = tg.cosh %s : tensor<f32> -> tensor<f32>
  %ys = tg.cosh %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.cosh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.cosh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @asinh
func.func @asinh(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %h: tensor<4xf16>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.asinh %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.asinh %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.asinh %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.asinh %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %y16 = tg.asinh %h : tensor<4xf16> -> tensor<4xf16>
  %y16 = tg.asinh %h : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %ys = tg.asinh %s : tensor<f32> -> tensor<f32>
  %ys = tg.asinh %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.asinh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.asinh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @acosh
func.func @acosh(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %h: tensor<4xf16>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.acosh %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.acosh %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.acosh %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.acosh %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %y16 = tg.acosh %h : tensor<4xf16> -> tensor<4xf16>
  %y16 = tg.acosh %h : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %ys = tg.acosh %s : tensor<f32> -> tensor<f32>
  %ys = tg.acosh %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.acosh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.acosh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @atanh
func.func @atanh(%x: tensor<4xf32>, %d: tensor<2x3xf64>, %h: tensor<4xf16>, %s: tensor<f32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %y = tg.atanh %x : tensor<4xf32> -> tensor<4xf32>
  %y = tg.atanh %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %y64 = tg.atanh %d : tensor<2x3xf64> -> tensor<2x3xf64>
  %y64 = tg.atanh %d : tensor<2x3xf64> -> tensor<2x3xf64>
  // CHECK: %y16 = tg.atanh %h : tensor<4xf16> -> tensor<4xf16>
  %y16 = tg.atanh %h : tensor<4xf16> -> tensor<4xf16>
  // CHECK: %ys = tg.atanh %s : tensor<f32> -> tensor<f32>
  %ys = tg.atanh %s : tensor<f32> -> tensor<f32>
  // CHECK: %yt = tg.atanh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %yt = tg.atanh %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}
