// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.top_k_indices.

// CHECK: tg.top_k_indices: k = 5 must be in [0, 4], the size of axis 1 of tensor<3x4xf32>
func.func @top_k_too_many(%x: tensor<3x4xf32>) {
  %r = tg.top_k_indices %x axis = 1 k = 5 largest : tensor<3x4xf32> -> tensor<3x5xi64>
  func.return
}

// -----

// CHECK: tg.top_k_indices: k = -1 must be in [0, 4], the size of axis 1 of tensor<3x4xf32>
func.func @top_k_negative(%x: tensor<3x4xf32>) {
  %r = tg.top_k_indices %x axis = 1 k = -1 : tensor<3x4xf32> -> tensor<3x4xi64>
  func.return
}

// -----

// CHECK: tg.top_k_indices: axis -3 is out of range for a tensor of rank 2
func.func @top_k_axis(%x: tensor<3x4xf32>) {
  %r = tg.top_k_indices %x axis = -3 k = 1 : tensor<3x4xf32> -> tensor<3x1xi64>
  func.return
}

// -----

// CHECK: tg.top_k_indices expects an input of rank >= 1, got tensor<f32>
func.func @top_k_scalar(%x: tensor<f32>) {
  %r = tg.top_k_indices %x axis = 0 k = 1 : tensor<f32> -> tensor<1xi64>
  func.return
}

// -----

// CHECK: tg.top_k_indices expects float or integer tensors, but operand #0 is tensor<4xi1>
func.func @top_k_bool(%x: tensor<4xi1>) {
  %r = tg.top_k_indices %x axis = 0 k = 1 : tensor<4xi1> -> tensor<1xi64>
  func.return
}

// -----

// CHECK: tg.top_k_indices expects f32, f64 or integer tensors, but operand #0 is tensor<4xf16> (f16 goes through tg.cast to f32)
func.func @top_k_f16(%x: tensor<4xf16>) {
  %r = tg.top_k_indices %x axis = 0 k = 1 : tensor<4xf16> -> tensor<1xi64>
  func.return
}

// -----

// CHECK: tg.top_k_indices on (tensor<3x4xf32>) must produce tensor<3x2xi64>, but its result type is tensor<3x2xi32>
func.func @top_k_result(%x: tensor<3x4xf32>) {
  %r = tg.top_k_indices %x axis = 1 k = 2 : tensor<3x4xf32> -> tensor<3x2xi32>
  func.return
}
