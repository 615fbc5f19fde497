// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.matmul_integer.

// CHECK: tg.matmul_integer expects i8 or ui8 operands, but the lhs is tensor<4x8xf32>
func.func @float_lhs(%a: tensor<4x8xf32>, %b: tensor<8x16xi8>) {
  %y = tg.matmul_integer %a, %b : (tensor<4x8xf32>, tensor<8x16xi8>) -> tensor<4x16xi32>
  func.return
}

// -----

// CHECK: tg.matmul_integer expects i8 or ui8 operands, but the rhs is tensor<8x16xi16>
func.func @wide_rhs(%a: tensor<4x8xui8>, %b: tensor<8x16xi16>) {
  %y = tg.matmul_integer %a, %b : (tensor<4x8xui8>, tensor<8x16xi16>) -> tensor<4x16xi32>
  func.return
}

// -----

// CHECK: tg.matmul_integer: contraction sizes differ: lhs [4, 8] has K = 8 but the rhs has K = 7
func.func @contraction(%a: tensor<4x8xui8>, %b: tensor<7x16xi8>) {
  %y = tg.matmul_integer %a, %b : (tensor<4x8xui8>, tensor<7x16xi8>) -> tensor<4x16xi32>
  func.return
}

// -----

// CHECK: tg.matmul_integer expects a lhs of rank >= 2, got [8]
func.func @vector_lhs(%a: tensor<8xui8>, %b: tensor<8x16xi8>) {
  %y = tg.matmul_integer %a, %b : (tensor<8xui8>, tensor<8x16xi8>) -> tensor<16xi32>
  func.return
}

// -----

// CHECK: tg.matmul_integer on (tensor<4x8xui8>, tensor<8x16xi8>) must produce tensor<4x16xi32>, but its result type is tensor<4x16xf32>
func.func @float_result(%a: tensor<4x8xui8>, %b: tensor<8x16xi8>) {
  %y = tg.matmul_integer %a, %b : (tensor<4x8xui8>, tensor<8x16xi8>) -> tensor<4x16xf32>
  func.return
}

// -----

// CHECK: tg.matmul_integer: batch dimensions [2] and [3] are not broadcastable
func.func @batch(%a: tensor<2x4x8xui8>, %b: tensor<3x8x16xi8>) {
  %y = tg.matmul_integer %a, %b : (tensor<2x4x8xui8>, tensor<3x8x16xi8>) -> tensor<2x4x16xi32>
  func.return
}

// -----

// CHECK: tg.matmul_integer with rhs_layout = "vnni" expects a rhs of shape [K/4, N, 4], got [2, 16, 2]
func.func @vnni_group(%a: tensor<4x8xui8>, %p: tensor<2x16x2xi8>) {
  %y = tg.matmul_integer %a, %p rhs_layout = "vnni" : (tensor<4x8xui8>, tensor<2x16x2xi8>) -> tensor<4x16xi32>
  func.return
}

// -----

// CHECK: tg.matmul_integer with rhs_layout = "vnni" multiplies a ui8 lhs by an i8 rhs (vpdpbusd's operands), got tensor<4x8xi8> and tensor<2x16x4xi8>
func.func @vnni_signed_lhs(%a: tensor<4x8xi8>, %p: tensor<2x16x4xi8>) {
  %y = tg.matmul_integer %a, %p rhs_layout = "vnni" : (tensor<4x8xi8>, tensor<2x16x4xi8>) -> tensor<4x16xi32>
  func.return
}

// -----

// CHECK: tg.matmul_integer: rhs_layout must be "vnni" or omitted (K x N, the default), got "nk"
func.func @layout(%a: tensor<4x8xui8>, %p: tensor<2x16x4xi8>) {
  %y = tg.matmul_integer %a, %p rhs_layout = "nk" : (tensor<4x8xui8>, tensor<2x16x4xi8>) -> tensor<4x16xi32>
  func.return
}
