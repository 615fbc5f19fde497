// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.matmul_bf16.

// CHECK: tg.matmul_bf16 expects bf16 operands, but the lhs is tensor<4x8xf32>
func.func @float_lhs(%a: tensor<4x8xf32>, %b: tensor<8x16xbf16>) {
  %y = tg.matmul_bf16 %a, %b : (tensor<4x8xf32>, tensor<8x16xbf16>) -> tensor<4x16xf32>
  func.return
}

// -----

// CHECK: tg.matmul_bf16 expects bf16 operands, but the rhs is tensor<8x16xf16>
func.func @half_rhs(%a: tensor<4x8xbf16>, %b: tensor<8x16xf16>) {
  %y = tg.matmul_bf16 %a, %b : (tensor<4x8xbf16>, tensor<8x16xf16>) -> tensor<4x16xf32>
  func.return
}

// -----

// CHECK: tg.matmul_bf16 expects bf16 operands, but the rhs is tensor<8x16xi16>
func.func @bits_rhs(%a: tensor<4x8xbf16>, %b: tensor<8x16xi16>) {
  %y = tg.matmul_bf16 %a, %b : (tensor<4x8xbf16>, tensor<8x16xi16>) -> tensor<4x16xf32>
  func.return
}

// -----

// CHECK: tg.matmul_bf16: contraction sizes differ: lhs [4, 8] has K = 8 but the rhs has K = 6
func.func @contraction(%a: tensor<4x8xbf16>, %b: tensor<6x16xbf16>) {
  %y = tg.matmul_bf16 %a, %b : (tensor<4x8xbf16>, tensor<6x16xbf16>) -> tensor<4x16xf32>
  func.return
}

// -----

// The K of a packed rhs is twice its second dimension: [2, 3, 32, 2] stands for
// a 6 x 64 rhs.

// CHECK: tg.matmul_bf16: contraction sizes differ: lhs [4, 8] has K = 8 but the rhs has K = 6
func.func @packed_contraction(%a: tensor<4x8xbf16>, %p: tensor<2x3x32x2xbf16>) {
  %y = tg.matmul_bf16 %a, %p rhs_layout = "vnni_panels" : (tensor<4x8xbf16>, tensor<2x3x32x2xbf16>) -> tensor<4x64xf32>
  func.return
}

// -----

// CHECK: tg.matmul_bf16 expects a lhs of rank >= 2, got [8]
func.func @vector_lhs(%a: tensor<8xbf16>, %b: tensor<8x16xbf16>) {
  %y = tg.matmul_bf16 %a, %b : (tensor<8xbf16>, tensor<8x16xbf16>) -> tensor<16xf32>
  func.return
}

// -----

// CHECK: tg.matmul_bf16 expects a rhs of rank >= 2, got [8]
func.func @vector_rhs(%a: tensor<4x8xbf16>, %b: tensor<8xbf16>) {
  %y = tg.matmul_bf16 %a, %b : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.matmul_bf16 on (tensor<4x8xbf16>, tensor<8x16xbf16>) must produce tensor<4x16xf32>, but its result type is tensor<4x16xbf16>
func.func @bf16_result(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) {
  %y = tg.matmul_bf16 %a, %b : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  func.return
}

// -----

// CHECK: tg.matmul_bf16 on (tensor<4x8xbf16>, tensor<8x16xbf16>) must produce tensor<4x16xf32>, but its result type is tensor<4x32xf32>
func.func @wrong_shape_result(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>) {
  %y = tg.matmul_bf16 %a, %b : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x32xf32>
  func.return
}

// -----

// CHECK: tg.matmul_bf16 on (tensor<4x8xbf16>, tensor<1x4x32x2xbf16>) must produce tensor<4x32xf32>, but its result type is tensor<4x4xf32>
func.func @packed_result(%a: tensor<4x8xbf16>, %p: tensor<1x4x32x2xbf16>) {
  %y = tg.matmul_bf16 %a, %p rhs_layout = "vnni_panels" : (tensor<4x8xbf16>, tensor<1x4x32x2xbf16>) -> tensor<4x4xf32>
  func.return
}

// -----

// CHECK: tg.matmul_bf16: batch dimensions [2] and [3] are not broadcastable
func.func @batch(%a: tensor<2x4x8xbf16>, %b: tensor<3x8x16xbf16>) {
  %y = tg.matmul_bf16 %a, %b : (tensor<2x4x8xbf16>, tensor<3x8x16xbf16>) -> tensor<2x4x16xf32>
  func.return
}

// -----

// A group of four rows (vpdpbusd's) is not vdpbf16ps's pair.

// CHECK: tg.matmul_bf16 with rhs_layout = "vnni_panels" expects a rhs of shape [N/w, K/2, w, 2] with w a multiple of 16, got [1, 2, 32, 4]
func.func @panels_group(%a: tensor<4x8xbf16>, %p: tensor<1x2x32x4xbf16>) {
  %y = tg.matmul_bf16 %a, %p rhs_layout = "vnni_panels" : (tensor<4x8xbf16>, tensor<1x2x32x4xbf16>) -> tensor<4x32xf32>
  func.return
}

// -----

// A panel of 8 columns is half a register.

// CHECK: tg.matmul_bf16 with rhs_layout = "vnni_panels" expects a rhs of shape [N/w, K/2, w, 2] with w a multiple of 16, got [2, 4, 8, 2]
func.func @panels_narrow(%a: tensor<4x8xbf16>, %p: tensor<2x4x8x2xbf16>) {
  %y = tg.matmul_bf16 %a, %p rhs_layout = "vnni_panels" : (tensor<4x8xbf16>, tensor<2x4x8x2xbf16>) -> tensor<4x16xf32>
  func.return
}

// -----

// The int8 layout's shape ([K/4, N, 4]) is not the panels'.

// CHECK: tg.matmul_bf16 with rhs_layout = "vnni_panels" expects a rhs of shape [N/w, K/2, w, 2] with w a multiple of 16, got [4, 16, 2]
func.func @panels_rank(%a: tensor<4x8xbf16>, %p: tensor<4x16x2xbf16>) {
  %y = tg.matmul_bf16 %a, %p rhs_layout = "vnni_panels" : (tensor<4x8xbf16>, tensor<4x16x2xbf16>) -> tensor<4x16xf32>
  func.return
}

// -----

// CHECK: tg.matmul_bf16: rhs_layout must be "vnni_panels" or omitted (K x N, the default), got "vnni"
func.func @layout(%a: tensor<4x8xbf16>, %p: tensor<1x4x16x2xbf16>) {
  %y = tg.matmul_bf16 %a, %p rhs_layout = "vnni" : (tensor<4x8xbf16>, tensor<1x4x16x2xbf16>) -> tensor<4x16xf32>
  func.return
}

// -----

// Panels of no columns (w = 0 is a multiple of 16, but no width).

// CHECK: tg.matmul_bf16 with rhs_layout = "vnni_panels" expects a rhs of shape [N/w, K/2, w, 2] with w a multiple of 16, got [0, 4, 0, 2]
func.func @panels_empty(%a: tensor<4x8xbf16>, %p: tensor<0x4x0x2xbf16>) {
  %y = tg.matmul_bf16 %a, %p rhs_layout = "vnni_panels" : (tensor<4x8xbf16>, tensor<0x4x0x2xbf16>) -> tensor<4x0xf32>
  func.return
}
