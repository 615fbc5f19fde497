// RUN: qidao-opt %s -p bf16-matmul --split-input-file | filecheck %s

// A float32 matmul of a widened bfloat16 lhs by a constant float32 rhs whose every
// value is a bfloat16 becomes tg.matmul_bf16 on the bfloat16 lhs and the weight
// in bfloat16, packed in column panels of w columns, two rows at a time:
// packed[n // w, k // 2, n % w, k % 2] = B[k, n]. B is 2 x 16 (row 0 holds 0..15,
// row 1 16..31) and N = 16 makes one panel of 16 columns, so
// packed[0, 0, c] = [c, 16 + c].

// The unpacked constant goes with its last use; the cast stays for dce.

// CHECK-LABEL: func.func @packs
// CHECK-NEXT:    %a32 = tg.cast %a : tensor<3x2xbf16> -> tensor<3x2xf32>
// CHECK-NOT:     tensor<2x16xf32>
// CHECK-NEXT:    %w_bf16 = tg.constant dense<{{\[\[\[\[}}0.000000e+00, 1.600000e+01], [1.000000e+00, 1.700000e+01], [2.000000e+00, 1.800000e+01], {{.*}}, [1.500000e+01, 3.100000e+01]]]]> : tensor<1x1x16x2xbf16>
// CHECK-NEXT:    %y = tg.matmul_bf16 %a, %w_bf16 rhs_layout = "vnni_panels" : (tensor<3x2xbf16>, tensor<1x1x16x2xbf16>) -> tensor<3x16xf32>
// CHECK-NEXT:    func.return %y
func.func @packs(%a: tensor<3x2xbf16>) -> tensor<3x16xf32> {
  %a32 = tg.cast %a : tensor<3x2xbf16> -> tensor<3x2xf32>
  %w = tg.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]> : tensor<2x16xf32>
  %y = tg.matmul %a32, %w : (tensor<3x2xf32>, tensor<2x16xf32>) -> tensor<3x16xf32>
  func.return %y : tensor<3x16xf32>
}

// -----

// N = 64, a multiple of 32: panels of 32 columns (the register tile's two
// registers), [64 / 32, 8 / 2, 32, 2].

// CHECK-LABEL: func.func @panels_of_32
// CHECK:         %w_bf16 = tg.constant dense<-1.250000e+00> : tensor<2x4x32x2xbf16>
// CHECK-NEXT:    %y = tg.matmul_bf16 %a, %w_bf16 rhs_layout = "vnni_panels" : (tensor<5x8xbf16>, tensor<2x4x32x2xbf16>) -> tensor<5x64xf32>
func.func @panels_of_32(%a: tensor<5x8xbf16>) -> tensor<5x64xf32> {
  %a32 = tg.cast %a : tensor<5x8xbf16> -> tensor<5x8xf32>
  %w = tg.constant dense<-1.25> : tensor<8x64xf32>
  %y = tg.matmul %a32, %w : (tensor<5x8xf32>, tensor<8x64xf32>) -> tensor<5x64xf32>
  func.return %y : tensor<5x64xf32>
}

// -----

// N = 48, a multiple of 16 but not of 32: three panels of 16 columns.

// CHECK-LABEL: func.func @panels_of_16
// CHECK:         %w_bf16 = tg.constant dense<5.000000e-01> : tensor<3x2x16x2xbf16>
// CHECK-NEXT:    %y = tg.matmul_bf16 %a, %w_bf16 rhs_layout = "vnni_panels" : (tensor<5x4xbf16>, tensor<3x2x16x2xbf16>) -> tensor<5x48xf32>
func.func @panels_of_16(%a: tensor<5x4xbf16>) -> tensor<5x48xf32> {
  %a32 = tg.cast %a : tensor<5x4xbf16> -> tensor<5x4xf32>
  %w = tg.constant dense<0.5> : tensor<4x48xf32>
  %y = tg.matmul %a32, %w : (tensor<5x4xf32>, tensor<4x48xf32>) -> tensor<5x48xf32>
  func.return %y : tensor<5x48xf32>
}

// -----

// A batched lhs by a matrix: the rhs has no batch dimensions, so it packs.

// CHECK-LABEL: func.func @batched_lhs
// CHECK:         %y = tg.matmul_bf16 %a, %w_bf16 rhs_layout = "vnni_panels" : (tensor<2x3x4xbf16>, tensor<1x2x32x2xbf16>) -> tensor<2x3x32xf32>
func.func @batched_lhs(%a: tensor<2x3x4xbf16>) -> tensor<2x3x32xf32> {
  %a32 = tg.cast %a : tensor<2x3x4xbf16> -> tensor<2x3x4xf32>
  %w = tg.constant dense<2.0> : tensor<4x32xf32>
  %y = tg.matmul %a32, %w : (tensor<2x3x4xf32>, tensor<4x32xf32>) -> tensor<2x3x32xf32>
  func.return %y : tensor<2x3x32xf32>
}

// -----

// A view of a constant (a transposed weight, as ONNX's Gemm with transB makes) is
// a constant too: its values are packed, the view is left to dce.

// CHECK-LABEL: func.func @transposed_weight
// CHECK:         %t_bf16 = tg.constant dense<5.000000e-01> : tensor<1x2x32x2xbf16>
// CHECK-NEXT:    %y = tg.matmul_bf16 %a, %t_bf16 rhs_layout = "vnni_panels" : (tensor<3x4xbf16>, tensor<1x2x32x2xbf16>) -> tensor<3x32xf32>
func.func @transposed_weight(%a: tensor<3x4xbf16>) -> tensor<3x32xf32> {
  %a32 = tg.cast %a : tensor<3x4xbf16> -> tensor<3x4xf32>
  %w = tg.constant dense<0.5> : tensor<32x4xf32>
  %t = tg.transpose %w perm = [1, 0] : tensor<32x4xf32> -> tensor<4x32xf32, strided<[1, 4]>>
  %y = tg.matmul %a32, %t : (tensor<3x4xf32>, tensor<4x32xf32, strided<[1, 4]>>) -> tensor<3x32xf32>
  func.return %y : tensor<3x32xf32>
}

// -----

// A constant used elsewhere too stays for that use.

// CHECK-LABEL: func.func @shared_weight
// CHECK:         %w = tg.constant dense<5.000000e-01> : tensor<4x16xf32>
// CHECK:         tg.matmul_bf16 %a, %w_bf16 rhs_layout = "vnni_panels"
// CHECK:         tg.add %w, %w
func.func @shared_weight(%a: tensor<3x4xbf16>) -> (tensor<3x16xf32>, tensor<4x16xf32>) {
  %a32 = tg.cast %a : tensor<3x4xbf16> -> tensor<3x4xf32>
  %w = tg.constant dense<0.5> : tensor<4x16xf32>
  %y = tg.matmul %a32, %w : (tensor<3x4xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
  %z = tg.add %w, %w : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %y, %z : tensor<3x16xf32>, tensor<4x16xf32>
}

// -----

// Must not fire: one value of the weight, 1 + 2^-8 = 1.00390625, is no bfloat16
// (8 significant bits: a float32 model keeps its float32 product).

// CHECK-LABEL: func.func @not_bf16_weight
// CHECK-NOT:     tg.matmul_bf16
// CHECK:         %y = tg.matmul %a32, %w : (tensor<3x2xf32>, tensor<2x16xf32>) -> tensor<3x16xf32>
func.func @not_bf16_weight(%a: tensor<3x2xbf16>) -> tensor<3x16xf32> {
  %a32 = tg.cast %a : tensor<3x2xbf16> -> tensor<3x2xf32>
  %w = tg.constant dense<[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.00390625]]> : tensor<2x16xf32>
  %y = tg.matmul %a32, %w : (tensor<3x2xf32>, tensor<2x16xf32>) -> tensor<3x16xf32>
  func.return %y : tensor<3x16xf32>
}

// -----

// Must not fire: a float32 lhs (no widened bfloat16).

// CHECK-LABEL: func.func @float_lhs
// CHECK-NEXT:    %w = tg.constant
// CHECK-NEXT:    %y = tg.matmul %a, %w : (tensor<3x4xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
func.func @float_lhs(%a: tensor<3x4xf32>) -> tensor<3x16xf32> {
  %w = tg.constant dense<0.5> : tensor<4x16xf32>
  %y = tg.matmul %a, %w : (tensor<3x4xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
  func.return %y : tensor<3x16xf32>
}

// -----

// Must not fire: an lhs widened from float16, not bfloat16.

// CHECK-LABEL: func.func @half_lhs
// CHECK-NOT:     tg.matmul_bf16
// CHECK:         %y = tg.matmul %a32, %w : (tensor<3x4xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
func.func @half_lhs(%a: tensor<3x4xf16>) -> tensor<3x16xf32> {
  %a32 = tg.cast %a : tensor<3x4xf16> -> tensor<3x4xf32>
  %w = tg.constant dense<0.5> : tensor<4x16xf32>
  %y = tg.matmul %a32, %w : (tensor<3x4xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
  func.return %y : tensor<3x16xf32>
}

// -----

// Must not fire: K = 3 is odd (vdpbf16ps multiplies pairs of rows).

// CHECK-LABEL: func.func @odd_k
// CHECK-NOT:     tg.matmul_bf16
// CHECK:         %y = tg.matmul %a32, %w : (tensor<3x3xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
func.func @odd_k(%a: tensor<3x3xbf16>) -> tensor<3x16xf32> {
  %a32 = tg.cast %a : tensor<3x3xbf16> -> tensor<3x3xf32>
  %w = tg.constant dense<0.5> : tensor<3x16xf32>
  %y = tg.matmul %a32, %w : (tensor<3x3xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
  func.return %y : tensor<3x16xf32>
}

// -----

// Must not fire: N = 24 is not a multiple of 16 (whole registers).

// CHECK-LABEL: func.func @ragged_n
// CHECK-NOT:     tg.matmul_bf16
// CHECK:         %y = tg.matmul %a32, %w : (tensor<3x4xf32>, tensor<4x24xf32>) -> tensor<3x24xf32>
func.func @ragged_n(%a: tensor<3x4xbf16>) -> tensor<3x24xf32> {
  %a32 = tg.cast %a : tensor<3x4xbf16> -> tensor<3x4xf32>
  %w = tg.constant dense<0.5> : tensor<4x24xf32>
  %y = tg.matmul %a32, %w : (tensor<3x4xf32>, tensor<4x24xf32>) -> tensor<3x24xf32>
  func.return %y : tensor<3x24xf32>
}

// -----

// Must not fire: a rhs computed at run time (attention's products stay
// float32), even a widened bfloat16 one.

// CHECK-LABEL: func.func @runtime_rhs
// CHECK-NOT:     tg.matmul_bf16
// CHECK:         %y = tg.matmul %a32, %b32 : (tensor<3x4xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
func.func @runtime_rhs(%a: tensor<3x4xbf16>, %b: tensor<4x16xbf16>) -> tensor<3x16xf32> {
  %a32 = tg.cast %a : tensor<3x4xbf16> -> tensor<3x4xf32>
  %b32 = tg.cast %b : tensor<4x16xbf16> -> tensor<4x16xf32>
  %y = tg.matmul %a32, %b32 : (tensor<3x4xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
  func.return %y : tensor<3x16xf32>
}

// -----

// Must not fire: a rhs already packed (pack-panels' float32 column panels).

// CHECK-LABEL: func.func @packed_rhs
// CHECK-NOT:     tg.matmul_bf16
// CHECK:         %y = tg.matmul %a32, %w_panels rhs_layout = "panels" : (tensor<16x32xf32>, tensor<2x32x32xf32>) -> tensor<16x64xf32>
func.func @packed_rhs(%a: tensor<16x32xbf16>) -> tensor<16x64xf32> {
  %a32 = tg.cast %a : tensor<16x32xbf16> -> tensor<16x32xf32>
  %w_panels = tg.constant dense<0.5> : tensor<2x32x32xf32>
  %y = tg.matmul %a32, %w_panels rhs_layout = "panels" : (tensor<16x32xf32>, tensor<2x32x32xf32>) -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}

// -----

// Must not fire: a batched rhs (the panels are of one matrix).

// CHECK-LABEL: func.func @batched_rhs
// CHECK-NOT:     tg.matmul_bf16
// CHECK:         %y = tg.matmul %a32, %w : (tensor<2x3x4xf32>, tensor<2x4x16xf32>) -> tensor<2x3x16xf32>
func.func @batched_rhs(%a: tensor<2x3x4xbf16>) -> tensor<2x3x16xf32> {
  %a32 = tg.cast %a : tensor<2x3x4xbf16> -> tensor<2x3x4xf32>
  %w = tg.constant dense<0.5> : tensor<2x4x16xf32>
  %y = tg.matmul %a32, %w : (tensor<2x3x4xf32>, tensor<2x4x16xf32>) -> tensor<2x3x16xf32>
  func.return %y : tensor<2x3x16xf32>
}

// -----

// Must not fire: an lhs whose bfloat16 rows are not contiguous (a transposed view:
// the tile reads a row's pairs as one 32-bit word).

// CHECK-LABEL: func.func @transposed_lhs
// CHECK-NOT:     tg.matmul_bf16
// CHECK:         %y = tg.matmul %a32, %w : (tensor<3x4xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
func.func @transposed_lhs(%a: tensor<4x3xbf16>) -> tensor<3x16xf32> {
  %t = tg.transpose %a perm = [1, 0] : tensor<4x3xbf16> -> tensor<3x4xbf16, strided<[1, 3]>>
  %a32 = tg.cast %t : tensor<3x4xbf16, strided<[1, 3]>> -> tensor<3x4xf32>
  %w = tg.constant dense<0.5> : tensor<4x16xf32>
  %y = tg.matmul %a32, %w : (tensor<3x4xf32>, tensor<4x16xf32>) -> tensor<3x16xf32>
  func.return %y : tensor<3x16xf32>
}
