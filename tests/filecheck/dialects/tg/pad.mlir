// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.pad, in custom form and (second RUN line) through the generic
// form: row-major and strided inputs, a value other than zero, no padding at all.

// CHECK-LABEL: func.func @pad
func.func @pad(%x: tensor<1x6x6x8xf32>, %t: tensor<3x2xf32, strided<[1, 3]>>, %d: tensor<4xf64>, %q: tensor<3xui8>) {
  // CHECK: %p = tg.pad %x low = [0, 1, 1, 0] high = [0, 1, 2, 0] value = 0.000000e+00 : tensor<1x6x6x8xf32> -> tensor<1x8x9x8xf32>
  %p = tg.pad %x low = [0, 1, 1, 0] high = [0, 1, 2, 0] value = 0.000000e+00 : tensor<1x6x6x8xf32> -> tensor<1x8x9x8xf32>
  // CHECK: %s = tg.pad %t low = [2, 0] high = [0, 1] value = -1.500000e+00 : tensor<3x2xf32, strided<[1, 3]>> -> tensor<5x3xf32>
  %s = tg.pad %t low = [2, 0] high = [0, 1] value = -1.500000e+00 : tensor<3x2xf32, strided<[1, 3]>> -> tensor<5x3xf32>
  // CHECK: %u = tg.pad %q low = [1] high = [2] value = 1.280000e+02 : tensor<3xui8> -> tensor<6xui8>
  %u = tg.pad %q low = [1] high = [2] value = 1.280000e+02 : tensor<3xui8> -> tensor<6xui8>
  // CHECK: %n = tg.pad %d low = [0] high = [0] value = 2.500000e-01 : tensor<4xf64> -> tensor<4xf64>
  %n = tg.pad %d low = [0] high = [0] value = 2.500000e-01 : tensor<4xf64> -> tensor<4xf64>
  func.return
}
