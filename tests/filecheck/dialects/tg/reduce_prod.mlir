// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.reduce_prod, in custom form and (second RUN line) through the
// generic form: floats and integers, keepdims, several and negative axes, a strided
// input.

// CHECK-LABEL: func.func @reduce_prod
func.func @reduce_prod(%x: tensor<4x8xf32>, %d: tensor<2x3x4xf64>, %i: tensor<3x5xi64>, %u: tensor<6xui32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %p = tg.reduce_prod %x axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %p = tg.reduce_prod %x axes = [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  // CHECK: %p64 = tg.reduce_prod %d axes = [0, -1] : tensor<2x3x4xf64> -> tensor<3xf64>
  %p64 = tg.reduce_prod %d axes = [0, -1] : tensor<2x3x4xf64> -> tensor<3xf64>
  // CHECK: %pi = tg.reduce_prod %i axes = [0] : tensor<3x5xi64> -> tensor<5xi64>
  %pi = tg.reduce_prod %i axes = [0] : tensor<3x5xi64> -> tensor<5xi64>
  // CHECK: %pu = tg.reduce_prod %u axes = [0] : tensor<6xui32> -> tensor<ui32>
  %pu = tg.reduce_prod %u axes = [0] : tensor<6xui32> -> tensor<ui32>
  // CHECK: %pt = tg.reduce_prod %t axes = [1] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3xf32>
  %pt = tg.reduce_prod %t axes = [1] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3xf32>
  func.return
}
