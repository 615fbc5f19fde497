// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.matmul_bf16 (bfloat16 operands, float32 result), in custom
// form and (second RUN line) through the generic form: a plain K x N rhs,
// broadcast batch dimensions, and a rhs packed in column panels for vdpbf16ps
// ([N/w, K/2, w, 2]) of 32 and of 16 columns.

// CHECK-LABEL: func.func @matmul_bf16
func.func @matmul_bf16(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>, %c: tensor<2x4x8xbf16>, %d: tensor<3x1x8x5xbf16>, %p: tensor<2x4x32x2xbf16>, %q: tensor<3x4x16x2xbf16>) {
  // CHECK: %y = tg.matmul_bf16 %a, %b : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xf32>
  %y = tg.matmul_bf16 %a, %b : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xf32>
  // CHECK: %z = tg.matmul_bf16 %c, %d : (tensor<2x4x8xbf16>, tensor<3x1x8x5xbf16>) -> tensor<3x2x4x5xf32>
  %z = tg.matmul_bf16 %c, %d : (tensor<2x4x8xbf16>, tensor<3x1x8x5xbf16>) -> tensor<3x2x4x5xf32>
  // CHECK: %v = tg.matmul_bf16 %a, %p rhs_layout = "vnni_panels" : (tensor<4x8xbf16>, tensor<2x4x32x2xbf16>) -> tensor<4x64xf32>
  %v = tg.matmul_bf16 %a, %p rhs_layout = "vnni_panels" : (tensor<4x8xbf16>, tensor<2x4x32x2xbf16>) -> tensor<4x64xf32>
  // CHECK: %w = tg.matmul_bf16 %c, %q rhs_layout = "vnni_panels" : (tensor<2x4x8xbf16>, tensor<3x4x16x2xbf16>) -> tensor<2x4x48xf32>
  %w = tg.matmul_bf16 %c, %q rhs_layout = "vnni_panels" : (tensor<2x4x8xbf16>, tensor<3x4x16x2xbf16>) -> tensor<2x4x48xf32>
  func.return
}
