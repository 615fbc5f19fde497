// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of the bitwise ops and the shifts, in custom form and (second RUN line)
// through the generic form: signed and unsigned integers, bools, broadcasting, a
// scalar tensor and a strided operand (the result is row-major).

// CHECK-LABEL: func.func @bitwise_binary
func.func @bitwise_binary(%i: tensor<4xi32>, %u: tensor<2x4xui8>, %v: tensor<4xui8>, %b: tensor<4xi1>, %s: tensor<i64>, %l: tensor<4xi64>) {
  // CHECK: %and = tg.bitwise_and %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %and = tg.bitwise_and %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK: %or = tg.bitwise_or %u, %v : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  %or = tg.bitwise_or %u, %v : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  // CHECK: %xor = tg.bitwise_xor %l, %s : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  %xor = tg.bitwise_xor %l, %s : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  // CHECK: %band = tg.bitwise_and %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %band = tg.bitwise_and %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// CHECK-LABEL: func.func @bitwise_not
func.func @bitwise_not(%i: tensor<4xi16>, %b: tensor<4xi1>, %t: tensor<3x2xui32, strided<[1, 3]>>) {
  // CHECK: %n = tg.bitwise_not %i : tensor<4xi16> -> tensor<4xi16>
  %n = tg.bitwise_not %i : tensor<4xi16> -> tensor<4xi16>
  // CHECK: %nb = tg.bitwise_not %b : tensor<4xi1> -> tensor<4xi1>
  %nb = tg.bitwise_not %b : tensor<4xi1> -> tensor<4xi1>
  // CHECK: %nt = tg.bitwise_not %t : tensor<3x2xui32, strided<[1, 3]>> -> tensor<3x2xui32>
  %nt = tg.bitwise_not %t : tensor<3x2xui32, strided<[1, 3]>> -> tensor<3x2xui32>
  func.return
}

// CHECK-LABEL: func.func @shifts
func.func @shifts(%u: tensor<4xui8>, %w: tensor<4xui32>, %n: tensor<ui32>, %i: tensor<2x4xi8>, %j: tensor<4xi8>) {
  // CHECK: %l = tg.shift_left %u, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %l = tg.shift_left %u, %u : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  // CHECK: %r = tg.shift_right %w, %n : (tensor<4xui32>, tensor<ui32>) -> tensor<4xui32>
  %r = tg.shift_right %w, %n : (tensor<4xui32>, tensor<ui32>) -> tensor<4xui32>
  // CHECK: %a = tg.shift_right %i, %j : (tensor<2x4xi8>, tensor<4xi8>) -> tensor<2x4xi8>
  %a = tg.shift_right %i, %j : (tensor<2x4xi8>, tensor<4xi8>) -> tensor<2x4xi8>
  func.return
}
