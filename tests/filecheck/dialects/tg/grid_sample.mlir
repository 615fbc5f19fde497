// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.grid_sample (sampling at runtime coordinates), in custom form and
// (second RUN line) through the generic form: every mode and padding mode, both
// align_corners, an image and a volume, f32 and f64.

// CHECK-LABEL: func.func @image
func.func @image(%x: tensor<1x3x8x8xf32>, %g: tensor<1x4x5x2xf32>) {
  // CHECK: %lin = tg.grid_sample %x, %g mode = "linear" padding_mode = "zeros" align_corners = 0 : (tensor<1x3x8x8xf32>, tensor<1x4x5x2xf32>) -> tensor<1x3x4x5xf32>
  %lin = tg.grid_sample %x, %g mode = "linear" padding_mode = "zeros" align_corners = 0 : (tensor<1x3x8x8xf32>, tensor<1x4x5x2xf32>) -> tensor<1x3x4x5xf32>
  // CHECK: %near = tg.grid_sample %x, %g mode = "nearest" padding_mode = "border" align_corners = 1 : (tensor<1x3x8x8xf32>, tensor<1x4x5x2xf32>) -> tensor<1x3x4x5xf32>
  %near = tg.grid_sample %x, %g mode = "nearest" padding_mode = "border" align_corners = 1 : (tensor<1x3x8x8xf32>, tensor<1x4x5x2xf32>) -> tensor<1x3x4x5xf32>
  // CHECK: %cub = tg.grid_sample %x, %g mode = "cubic" padding_mode = "reflection" align_corners = 0 : (tensor<1x3x8x8xf32>, tensor<1x4x5x2xf32>) -> tensor<1x3x4x5xf32>
  %cub = tg.grid_sample %x, %g mode = "cubic" padding_mode = "reflection" align_corners = 0 : (tensor<1x3x8x8xf32>, tensor<1x4x5x2xf32>) -> tensor<1x3x4x5xf32>
  func.return
}

// CHECK-LABEL: func.func @volume
func.func @volume(%x: tensor<2x1x3x4x5xf64>, %g: tensor<2x2x2x2x3xf64>) {
  // CHECK: %v = tg.grid_sample %x, %g mode = "linear" padding_mode = "border" align_corners = 0 : (tensor<2x1x3x4x5xf64>, tensor<2x2x2x2x3xf64>) -> tensor<2x1x2x2x2xf64>
  %v = tg.grid_sample %x, %g mode = "linear" padding_mode = "border" align_corners = 0 : (tensor<2x1x3x4x5xf64>, tensor<2x2x2x2x3xf64>) -> tensor<2x1x2x2x2xf64>
  func.return
}
