// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.cumsum and tg.cumprod (running totals along one axis), in
// custom form and (second RUN line) through the generic form: the flags, a negative
// axis, float and integer element types, a strided input.

// CHECK-LABEL: func.func @cumsum
func.func @cumsum(%x: tensor<2x5xi64>, %f: tensor<4x3xf32>, %t: tensor<3x4xf32, strided<[1, 3]>>, %u: tensor<6xui32>) {
  // CHECK: %a = tg.cumsum %x axis = 1 : tensor<2x5xi64> -> tensor<2x5xi64>
  %a = tg.cumsum %x axis = 1 : tensor<2x5xi64> -> tensor<2x5xi64>
  // CHECK: %b = tg.cumsum %x axis = 1 exclusive : tensor<2x5xi64> -> tensor<2x5xi64>
  %b = tg.cumsum %x axis = 1 exclusive : tensor<2x5xi64> -> tensor<2x5xi64>
  // CHECK: %c = tg.cumsum %f axis = -2 reverse : tensor<4x3xf32> -> tensor<4x3xf32>
  %c = tg.cumsum %f axis = -2 reverse : tensor<4x3xf32> -> tensor<4x3xf32>
  // CHECK: %d = tg.cumsum %f axis = 0 exclusive reverse : tensor<4x3xf32> -> tensor<4x3xf32>
  %d = tg.cumsum %f axis = 0 exclusive reverse : tensor<4x3xf32> -> tensor<4x3xf32>
  // CHECK: %e = tg.cumsum %t axis = 1 : tensor<3x4xf32, strided<[1, 3]>> -> tensor<3x4xf32>
  %e = tg.cumsum %t axis = 1 : tensor<3x4xf32, strided<[1, 3]>> -> tensor<3x4xf32>
  // CHECK: %g = tg.cumsum %u axis = 0 : tensor<6xui32> -> tensor<6xui32>
  %g = tg.cumsum %u axis = 0 : tensor<6xui32> -> tensor<6xui32>
  func.return
}

// CHECK-LABEL: func.func @cumprod
func.func @cumprod(%x: tensor<4x3xf64>, %i: tensor<5xi32>) {
  // CHECK: %a = tg.cumprod %x axis = 0 reverse : tensor<4x3xf64> -> tensor<4x3xf64>
  %a = tg.cumprod %x axis = 0 reverse : tensor<4x3xf64> -> tensor<4x3xf64>
  // CHECK: %b = tg.cumprod %i axis = 0 exclusive : tensor<5xi32> -> tensor<5xi32>
  %b = tg.cumprod %i axis = 0 exclusive : tensor<5xi32> -> tensor<5xi32>
  func.return
}
