// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.matmul_blockq.

// CHECK: tg.matmul_blockq: encoding must be one of Q8_0, Q4_0, Q4_K, got "Q6_K"
func.func @k_quant(%x: tensor<1x256xf32>, %w: tensor<4x1x210xi8>) {
  %y = tg.matmul_blockq %x, %w encoding = "Q6_K" : (tensor<1x256xf32>, tensor<4x1x210xi8>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: tg.matmul_blockq: a Q4_K weight is [N, K/256, 144] bytes, got [4, 8, 18]
func.func @q4_k_in_blocks_of_32(%x: tensor<1x256xf32>, %w: tensor<4x8x18xi8>) {
  %y = tg.matmul_blockq %x, %w encoding = "Q4_K" : (tensor<1x256xf32>, tensor<4x8x18xi8>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: tg.matmul_blockq expects an f32 lhs, got f16
func.func @half_lhs(%x: tensor<1x32xf16>, %w: tensor<4x1x34xi8>) {
  %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<1x32xf16>, tensor<4x1x34xi8>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: tg.matmul_blockq expects the weight's bytes as i8, got ui8
func.func @unsigned_bytes(%x: tensor<1x32xf32>, %w: tensor<4x1x34xui8>) {
  %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<1x32xf32>, tensor<4x1x34xui8>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: tg.matmul_blockq expects a lhs of rank >= 2, got [32]
func.func @vector_lhs(%x: tensor<32xf32>, %w: tensor<4x1x34xi8>) {
  %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<32xf32>, tensor<4x1x34xi8>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.matmul_blockq: a Q4_0 weight is [N, K/32, 18] bytes, got [4, 1, 34]
func.func @wrong_block_bytes(%x: tensor<1x32xf32>, %w: tensor<4x1x34xi8>) {
  %y = tg.matmul_blockq %x, %w encoding = "Q4_0" : (tensor<1x32xf32>, tensor<4x1x34xi8>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: tg.matmul_blockq: a Q8_0 weight is [N, K/32, 34] bytes, got [4, 34]
func.func @flat_weight(%x: tensor<1x32xf32>, %w: tensor<4x34xi8>) {
  %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<1x32xf32>, tensor<4x34xi8>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: tg.matmul_blockq: contraction sizes differ: lhs [1, 48] has K = 48 but the weight's rows have 1 blocks of 32 = 32
func.func @contraction(%x: tensor<1x48xf32>, %w: tensor<4x1x34xi8>) {
  %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<1x48xf32>, tensor<4x1x34xi8>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: tg.matmul_blockq on (tensor<1x32xf32>, tensor<4x1x34xi8>) must produce tensor<1x4xf32>, but its result type is tensor<1x5xf32>
func.func @result_shape(%x: tensor<1x32xf32>, %w: tensor<4x1x34xi8>) {
  %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<1x32xf32>, tensor<4x1x34xi8>) -> tensor<1x5xf32>
  func.return
}
