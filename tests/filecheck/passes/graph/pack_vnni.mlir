// RUN: qidao-opt %s -p pack-vnni --split-input-file | filecheck %s

// A constant i8 rhs of a ui8 x i8 matmul_integer is packed four rows at a time:
// packed[q, n, r] = B[4q + r, n]. B is 8x2 (rows 0..7 of columns 0 and 1: column
// 0 holds 0..7, column 1 holds 10..17), so packed[0] = [[0,1,2,3],[10,11,12,13]].

// The unpacked constant goes with its last use.

// CHECK-LABEL: func.func @packs
// CHECK-NOT:     tensor<8x2xi8>
// CHECK:         %b_vnni = tg.constant dense<{{\[\[\[}}0, 1, 2, 3], [10, 11, 12, 13]], {{\[\[}}4, 5, 6, 7], [14, 15, 16, 17]]]> : tensor<2x2x4xi8>
// CHECK-NEXT:    %y = tg.matmul_integer %a, %b_vnni rhs_layout = "vnni" : (tensor<3x8xui8>, tensor<2x2x4xi8>) -> tensor<3x2xi32>
// CHECK-NEXT:    func.return %y
func.func @packs(%a: tensor<3x8xui8>) -> tensor<3x2xi32> {
  %b = tg.constant dense<[[0, 10], [1, 11], [2, 12], [3, 13], [4, 14], [5, 15], [6, 16], [7, 17]]> : tensor<8x2xi8>
  %y = tg.matmul_integer %a, %b : (tensor<3x8xui8>, tensor<8x2xi8>) -> tensor<3x2xi32>
  func.return %y : tensor<3x2xi32>
}

// -----

// Must not fire: a rhs computed at run time (an argument) stays as it is.

// CHECK-LABEL: func.func @runtime_rhs
// CHECK-NEXT:    %y = tg.matmul_integer %a, %b : (tensor<3x8xui8>, tensor<8x2xi8>) -> tensor<3x2xi32>
func.func @runtime_rhs(%a: tensor<3x8xui8>, %b: tensor<8x2xi8>) -> tensor<3x2xi32> {
  %y = tg.matmul_integer %a, %b : (tensor<3x8xui8>, tensor<8x2xi8>) -> tensor<3x2xi32>
  func.return %y : tensor<3x2xi32>
}

// -----

// Must not fire: a signed lhs (vpdpbusd multiplies unsigned by signed bytes).

// CHECK-LABEL: func.func @signed_lhs
// CHECK:         %y = tg.matmul_integer %a, %b : (tensor<3x8xi8>, tensor<8x2xi8>) -> tensor<3x2xi32>
func.func @signed_lhs(%a: tensor<3x8xi8>) -> tensor<3x2xi32> {
  %b = tg.constant dense<1> : tensor<8x2xi8>
  %y = tg.matmul_integer %a, %b : (tensor<3x8xi8>, tensor<8x2xi8>) -> tensor<3x2xi32>
  func.return %y : tensor<3x2xi32>
}

// -----

// Must not fire: an unsigned rhs.

// CHECK-LABEL: func.func @unsigned_rhs
// CHECK:         %y = tg.matmul_integer %a, %b : (tensor<3x8xui8>, tensor<8x2xui8>) -> tensor<3x2xi32>
func.func @unsigned_rhs(%a: tensor<3x8xui8>) -> tensor<3x2xi32> {
  %b = tg.constant dense<1> : tensor<8x2xui8>
  %y = tg.matmul_integer %a, %b : (tensor<3x8xui8>, tensor<8x2xui8>) -> tensor<3x2xi32>
  func.return %y : tensor<3x2xi32>
}

// -----

// Must not fire: K = 6 is not a multiple of 4 (the last group would read A past
// its rows).

// CHECK-LABEL: func.func @ragged_k
// CHECK:         %y = tg.matmul_integer %a, %b : (tensor<3x6xui8>, tensor<6x2xi8>) -> tensor<3x2xi32>
func.func @ragged_k(%a: tensor<3x6xui8>) -> tensor<3x2xi32> {
  %b = tg.constant dense<1> : tensor<6x2xi8>
  %y = tg.matmul_integer %a, %b : (tensor<3x6xui8>, tensor<6x2xi8>) -> tensor<3x2xi32>
  func.return %y : tensor<3x2xi32>
}

// -----

// Must not fire: a batched rhs.

// CHECK-LABEL: func.func @batched_rhs
// CHECK:         %y = tg.matmul_integer %a, %b : (tensor<2x3x8xui8>, tensor<2x8x2xi8>) -> tensor<2x3x2xi32>
func.func @batched_rhs(%a: tensor<2x3x8xui8>) -> tensor<2x3x2xi32> {
  %b = tg.constant dense<1> : tensor<2x8x2xi8>
  %y = tg.matmul_integer %a, %b : (tensor<2x3x8xui8>, tensor<2x8x2xi8>) -> tensor<2x3x2xi32>
  func.return %y : tensor<2x3x2xi32>
}
