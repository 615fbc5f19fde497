// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.nonzero_indices (the positions of the non-zero entries, in a
// [rank, numel] tensor), in custom form and (second RUN line) through the generic
// form: float, integer and bool inputs, rank 1 and 3, an empty input, a strided
// input.

// CHECK-LABEL: func.func @nonzero_indices
func.func @nonzero_indices(%x: tensor<3x4xf32>, %i: tensor<6xui8>, %b: tensor<2x1x3xi1>, %e: tensor<0x5xf64>, %t: tensor<4x3xf32, strided<[1, 4]>>) {
  // CHECK: %a = tg.nonzero_indices %x : tensor<3x4xf32> -> tensor<2x12xi64>
  %a = tg.nonzero_indices %x : tensor<3x4xf32> -> tensor<2x12xi64>
  // CHECK: %c = tg.nonzero_indices %i : tensor<6xui8> -> tensor<1x6xi64>
  %c = tg.nonzero_indices %i : tensor<6xui8> -> tensor<1x6xi64>
  // CHECK: %d = tg.nonzero_indices %b : tensor<2x1x3xi1> -> tensor<3x6xi64>
  %d = tg.nonzero_indices %b : tensor<2x1x3xi1> -> tensor<3x6xi64>
  // CHECK: %f = tg.nonzero_indices %e : tensor<0x5xf64> -> tensor<2x0xi64>
  %f = tg.nonzero_indices %e : tensor<0x5xf64> -> tensor<2x0xi64>
  // CHECK: %g = tg.nonzero_indices %t : tensor<4x3xf32, strided<[1, 4]>> -> tensor<2x12xi64>
  %g = tg.nonzero_indices %t : tensor<4x3xf32, strided<[1, 4]>> -> tensor<2x12xi64>
  func.return
}
