// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.top_k_indices (the positions of the k largest or smallest
// entries of every row), in custom form and (second RUN line) through the generic
// form: largest or not, a negative axis, k = 0 and k = n, integer inputs, a strided
// input.

// CHECK-LABEL: func.func @top_k_indices
func.func @top_k_indices(%x: tensor<3x4xf32>, %i: tensor<6xui64>, %t: tensor<4x3xf64, strided<[1, 4]>>) {
  // CHECK: %a = tg.top_k_indices %x axis = 1 k = 2 largest : tensor<3x4xf32> -> tensor<3x2xi64>
  %a = tg.top_k_indices %x axis = 1 k = 2 largest : tensor<3x4xf32> -> tensor<3x2xi64>
  // CHECK: %b = tg.top_k_indices %x axis = -2 k = 1 : tensor<3x4xf32> -> tensor<1x4xi64>
  %b = tg.top_k_indices %x axis = -2 k = 1 : tensor<3x4xf32> -> tensor<1x4xi64>
  // CHECK: %c = tg.top_k_indices %i axis = 0 k = 6 largest : tensor<6xui64> -> tensor<6xi64>
  %c = tg.top_k_indices %i axis = 0 k = 6 largest : tensor<6xui64> -> tensor<6xi64>
  // CHECK: %d = tg.top_k_indices %x axis = 1 k = 0 : tensor<3x4xf32> -> tensor<3x0xi64>
  %d = tg.top_k_indices %x axis = 1 k = 0 : tensor<3x4xf32> -> tensor<3x0xi64>
  // CHECK: %e = tg.top_k_indices %t axis = 0 k = 3 : tensor<4x3xf64, strided<[1, 4]>> -> tensor<3x3xi64>
  %e = tg.top_k_indices %t axis = 0 k = 3 : tensor<4x3xf64, strided<[1, 4]>> -> tensor<3x3xi64>
  func.return
}
