// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.cumsum and tg.cumprod.

// CHECK: tg.cumsum: axis 2 is out of range for a tensor of rank 2
func.func @cumsum_axis(%x: tensor<4x3xf32>) {
  %r = tg.cumsum %x axis = 2 : tensor<4x3xf32> -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: tg.cumsum expects an input of rank >= 1, got tensor<f32>
func.func @cumsum_scalar(%x: tensor<f32>) {
  %r = tg.cumsum %x axis = 0 : tensor<f32> -> tensor<f32>
  func.return
}

// -----

// CHECK: tg.cumsum expects float or integer tensors, but operand #0 is tensor<4xi1>
func.func @cumsum_bool(%x: tensor<4xi1>) {
  %r = tg.cumsum %x axis = 0 : tensor<4xi1> -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.cumprod expects f32, f64 or integer tensors, but operand #0 is tensor<4xf16> (f16 goes through tg.cast to f32 and back)
func.func @cumprod_f16(%x: tensor<4xf16>) {
  %r = tg.cumprod %x axis = 0 : tensor<4xf16> -> tensor<4xf16>
  func.return
}

// -----

// CHECK: tg.cumprod on (tensor<4x3xf32>) must produce tensor<4x3xf32>, but its result type is tensor<4x3xf64>
func.func @cumprod_result(%x: tensor<4x3xf32>) {
  %r = tg.cumprod %x axis = 1 : tensor<4x3xf32> -> tensor<4x3xf64>
  func.return
}
