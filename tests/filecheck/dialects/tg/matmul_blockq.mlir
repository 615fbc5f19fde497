// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.matmul_blockq (a float32 matrix times a weight in GGUF blocks,
// its bytes [N, K/32, block bytes] i8), in custom form and (second RUN line)
// through the generic form: Q8_0 (34-byte blocks), Q4_0 (18-byte blocks), a lhs
// with a batch dimension, Q4_K (144-byte super-blocks of 256).

// CHECK-LABEL: func.func @matmul_blockq
func.func @matmul_blockq(%x: tensor<2x64xf32>, %w: tensor<16x2x34xi8>, %b: tensor<3x1x32xf32>, %v: tensor<8x1x18xi8>, %c: tensor<1x512xf32>, %k: tensor<4x2x144xi8>) {
  // CHECK: %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<2x64xf32>, tensor<16x2x34xi8>) -> tensor<2x16xf32>
  %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<2x64xf32>, tensor<16x2x34xi8>) -> tensor<2x16xf32>
  // CHECK: %z = tg.matmul_blockq %b, %v encoding = "Q4_0" : (tensor<3x1x32xf32>, tensor<8x1x18xi8>) -> tensor<3x1x8xf32>
  %z = tg.matmul_blockq %b, %v encoding = "Q4_0" : (tensor<3x1x32xf32>, tensor<8x1x18xi8>) -> tensor<3x1x8xf32>
  // CHECK: %u = tg.matmul_blockq %c, %k encoding = "Q4_K" : (tensor<1x512xf32>, tensor<4x2x144xi8>) -> tensor<1x4xf32>
  %u = tg.matmul_blockq %c, %k encoding = "Q4_K" : (tensor<1x512xf32>, tensor<4x2x144xi8>) -> tensor<1x4xf32>
  func.return
}
