// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.grid_sample.

// CHECK: tg.grid_sample: mode 'area' is not one of nearest, linear, cubic
func.func @mode(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x2x2xf32>) {
  %r = tg.grid_sample %x, %g mode = "area" padding_mode = "zeros" align_corners = 0 : (tensor<1x1x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

// CHECK: tg.grid_sample: padding_mode 'wrap' is not one of zeros, border, reflection
func.func @padding(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x2x2xf32>) {
  %r = tg.grid_sample %x, %g mode = "linear" padding_mode = "wrap" align_corners = 0 : (tensor<1x1x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

// CHECK: tg.grid_sample: align_corners is 0 or 1, got 2
func.func @align(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x2x2xf32>) {
  %r = tg.grid_sample %x, %g mode = "linear" padding_mode = "zeros" align_corners = 2 : (tensor<1x1x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

// CHECK: tg.grid_sample expects float tensors, but operand #0 is tensor<1x1x4x4xi32>
func.func @int_input(%x: tensor<1x1x4x4xi32>, %g: tensor<1x2x2x2xf32>) {
  %r = tg.grid_sample %x, %g mode = "nearest" padding_mode = "zeros" align_corners = 0 : (tensor<1x1x4x4xi32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xi32>
  func.return
}

// -----

// CHECK: tg.grid_sample expects operands of one element type, got (tensor<1x1x4x4xf32>, tensor<1x2x2x2xf64>)
func.func @mixed(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x2x2xf64>) {
  %r = tg.grid_sample %x, %g mode = "linear" padding_mode = "zeros" align_corners = 0 : (tensor<1x1x4x4xf32>, tensor<1x2x2x2xf64>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

// CHECK: tg.grid_sample expects an input [N, C, D1, ..] of rank >= 3, got tensor<4x4xf32>
func.func @rank(%x: tensor<4x4xf32>, %g: tensor<1x2x2x2xf32>) {
  %r = tg.grid_sample %x, %g mode = "linear" padding_mode = "zeros" align_corners = 0 : (tensor<4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<4x4x2x2xf32>
  func.return
}

// -----

// CHECK: tg.grid_sample: the input [1, 1, 4, 4] has 2 spatial dimension(s), so the grid must be [1, O, O, 2], got [1, 2, 2, 3]
func.func @grid_width(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x2x3xf32>) {
  %r = tg.grid_sample %x, %g mode = "linear" padding_mode = "zeros" align_corners = 0 : (tensor<1x1x4x4xf32>, tensor<1x2x2x3xf32>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

// CHECK: tg.grid_sample: the grid's batch 2 differs from the input's 1
func.func @batch(%x: tensor<1x1x4x4xf32>, %g: tensor<2x2x2x2xf32>) {
  %r = tg.grid_sample %x, %g mode = "linear" padding_mode = "zeros" align_corners = 0 : (tensor<1x1x4x4xf32>, tensor<2x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

// CHECK: tg.grid_sample: the input [1, 1, 0, 4] has an empty spatial dimension, so its 4 result element(s) have no entry to read
func.func @empty_input(%x: tensor<1x1x0x4xf32>, %g: tensor<1x2x2x2xf32>) {
  %r = tg.grid_sample %x, %g mode = "linear" padding_mode = "zeros" align_corners = 0 : (tensor<1x1x0x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return
}

// -----

// CHECK: tg.grid_sample on (tensor<1x1x4x4xf32>, tensor<1x2x3x2xf32>) must produce tensor<1x1x2x3xf32>, but its result type is tensor<1x1x2x2xf32>
func.func @result(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x3x2xf32>) {
  %r = tg.grid_sample %x, %g mode = "linear" padding_mode = "zeros" align_corners = 0 : (tensor<1x1x4x4xf32>, tensor<1x2x3x2xf32>) -> tensor<1x1x2x2xf32>
  func.return
}
