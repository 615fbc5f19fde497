// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.nonzero_indices.

// CHECK: tg.nonzero_indices expects an input of rank >= 1, got tensor<f32>
func.func @nonzero_scalar(%x: tensor<f32>) {
  %r = tg.nonzero_indices %x : tensor<f32> -> tensor<0x1xi64>
  func.return
}

// -----

// CHECK: tg.nonzero_indices on (tensor<3x4xf32>) must produce tensor<2x12xi64>, but its result type is tensor<2x6xi64>
func.func @nonzero_short(%x: tensor<3x4xf32>) {
  %r = tg.nonzero_indices %x : tensor<3x4xf32> -> tensor<2x6xi64>
  func.return
}

// -----

// CHECK: tg.nonzero_indices expects f32, f64, integer or bool tensors, but operand #0 is tensor<4xf16> (f16 goes through tg.cast to f32)
func.func @nonzero_f16(%x: tensor<4xf16>) {
  %r = tg.nonzero_indices %x : tensor<4xf16> -> tensor<1x4xi64>
  func.return
}

// -----

// CHECK: tg.nonzero_indices does not compute on bf16 (operand #0 is tensor<4xbf16>): it is a storage-only element type
func.func @nonzero_bf16(%x: tensor<4xbf16>) {
  %r = tg.nonzero_indices %x : tensor<4xbf16> -> tensor<1x4xi64>
  func.return
}
