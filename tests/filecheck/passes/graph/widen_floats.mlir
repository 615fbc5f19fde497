// RUN: qidao-opt %s -p widen-floats | filecheck %s

// f32 values, constants and the signature become f64; a strided view keeps its
// layout; a cast to f32 becomes a cast to f64.
// CHECK-LABEL: func.func @floats(%x: tensor<2x3xf64>) -> tensor<3x2xf64>
// CHECK-NEXT:    %c = tg.constant dense<5.000000e-01> : tensor<f64>
// CHECK-NEXT:    %y = tg.mul %x, %c : (tensor<2x3xf64>, tensor<f64>) -> tensor<2x3xf64>
// CHECK-NEXT:    %t = tg.transpose %y perm = [1, 0] : tensor<2x3xf64> -> tensor<3x2xf64, strided<[1, 3]>>
// CHECK-NEXT:    %r = tg.contiguous %t : tensor<3x2xf64, strided<[1, 3]>> -> tensor<3x2xf64>
func.func @floats(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %c = tg.constant dense<5.000000e-01> : tensor<f32>
  %y = tg.mul %x, %c : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %t = tg.transpose %y perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %r = tg.contiguous %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}

// Integer, bool and f64 tensors are unchanged (the signature here); the cast
// from i64 to f32 now gives f64, and the cast from f32 to f64 is f64 -> f64.
// CHECK-LABEL: func.func @others(%i: tensor<3xi64>, %d: tensor<3xf64>) -> tensor<3xi1>
// CHECK-NEXT:    %f = tg.cast %i : tensor<3xi64> -> tensor<3xf64>
// CHECK-NEXT:    %g = tg.cast %f : tensor<3xf64> -> tensor<3xf64>
// CHECK-NEXT:    %b = tg.greater %g, %d : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>
func.func @others(%i: tensor<3xi64>, %d: tensor<3xf64>) -> tensor<3xi1> {
  %f = tg.cast %i : tensor<3xi64> -> tensor<3xf32>
  %g = tg.cast %f : tensor<3xf32> -> tensor<3xf64>
  %b = tg.greater %g, %d : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>
  func.return %b : tensor<3xi1>
}
