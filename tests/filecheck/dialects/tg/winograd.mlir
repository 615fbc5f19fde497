// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.winograd_input and tg.winograd_output (Winograd F(4x4, 3x3),
// and F(2x2, 3x3) with size = 2),
// in custom form and (second RUN line) through the generic form: batch 2, partial
// tiles (a 10x14 input holds 2x3 tiles), with and without a bias, f64.

// CHECK-LABEL: func.func @winograd
func.func @winograd(%x: tensor<2x10x14x8xf32>, %m: tensor<36x12x16xf32>, %b: tensor<16xf32>, %d: tensor<1x6x6x3xf64>, %md: tensor<36x1x5xf64>, %m2: tensor<16x48x16xf32>) {
  // CHECK: %v = tg.winograd_input %x tiles = [2, 3] : tensor<2x10x14x8xf32> -> tensor<12x36x8xf32>
  %v = tg.winograd_input %x tiles = [2, 3] : tensor<2x10x14x8xf32> -> tensor<12x36x8xf32>
  // CHECK: %y = tg.winograd_output %m, %b tiles = [2, 2, 3] : (tensor<36x12x16xf32>, tensor<16xf32>) -> tensor<2x8x12x16xf32>
  %y = tg.winograd_output %m, %b tiles = [2, 2, 3] : (tensor<36x12x16xf32>, tensor<16xf32>) -> tensor<2x8x12x16xf32>
  // CHECK: %vd = tg.winograd_input %d tiles = [1, 1] : tensor<1x6x6x3xf64> -> tensor<1x36x3xf64>
  %vd = tg.winograd_input %d tiles = [1, 1] : tensor<1x6x6x3xf64> -> tensor<1x36x3xf64>
  // CHECK: %yd = tg.winograd_output %md tiles = [1, 1, 1] : (tensor<36x1x5xf64>) -> tensor<1x4x4x5xf64>
  %yd = tg.winograd_output %md tiles = [1, 1, 1] : (tensor<36x1x5xf64>) -> tensor<1x4x4x5xf64>
  // CHECK: %v2 = tg.winograd_input %x tiles = [4, 6] size = 2 : tensor<2x10x14x8xf32> -> tensor<48x16x8xf32>
  %v2 = tg.winograd_input %x tiles = [4, 6] size = 2 : tensor<2x10x14x8xf32> -> tensor<48x16x8xf32>
  // CHECK: %y2 = tg.winograd_output %m2, %b tiles = [2, 4, 6] size = 2 : (tensor<16x48x16xf32>, tensor<16xf32>) -> tensor<2x8x12x16xf32>
  %y2 = tg.winograd_output %m2, %b tiles = [2, 4, 6] size = 2 : (tensor<16x48x16xf32>, tensor<16xf32>) -> tensor<2x8x12x16xf32>
  func.return
}
