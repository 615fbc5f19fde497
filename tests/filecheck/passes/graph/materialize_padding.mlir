// RUN: qidao-opt %s -p materialize-padding | filecheck %s
// RUN: qidao-opt %s -p materialize-padding,materialize-padding | filecheck %s

// The second RUN line checks idempotence: a rewritten convolution has no padding
// left, so a second run changes nothing.

// The docstring's example: the padding moves into a tg.pad of the input.
// CHECK-LABEL: func.func @padded_nhwc
// CHECK-NEXT:    %x_padded = tg.pad %x low = [0, 1, 1, 0] high = [0, 1, 1, 0] value = 0.000000e+00 : tensor<1x6x6x8xf32> -> tensor<1x8x8x8xf32>
// CHECK-NEXT:    %y = tg.conv2d %x_padded, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x8xf32>, tensor<3x3x8x16xf32>) -> tensor<1x6x6x16xf32>
// CHECK-NEXT:    func.return %y
func.func @padded_nhwc(%x: tensor<1x6x6x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<1x6x6x16xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x8xf32>, tensor<3x3x8x16xf32>) -> tensor<1x6x6x16xf32>
  func.return %y : tensor<1x6x6x16xf32>
}

// The transposed view that layout makes is padded in place (one copy kernel
// later); uneven padding, strides, dilation and the bias are kept.
// CHECK-LABEL: func.func @strided_view_bias
// CHECK-NEXT:    %x_nhwc = tg.transpose %x perm = [0, 2, 3, 1]
// CHECK-NEXT:    %x_nhwc_padded = tg.pad %x_nhwc low = [0, 2, 1, 0] high = [0, 0, 1, 0] value = 0.000000e+00 : tensor<1x9x7x4xf32, strided<[252, 7, 1, 63]>> -> tensor<1x11x9x4xf32>
// CHECK-NEXT:    %y = tg.conv2d %x_nhwc_padded, %w, %b strides = [2, 1] padding = [0, 0, 0, 0] dilation = [1, 2] groups = 1 layout = "NHWC" : (tensor<1x11x9x4xf32>, tensor<3x3x4x32xf32>, tensor<32xf32>) -> tensor<1x5x5x32xf32>
func.func @strided_view_bias(%x: tensor<1x4x9x7xf32>, %w: tensor<3x3x4x32xf32>, %b: tensor<32xf32>) -> tensor<1x5x5x32xf32> {
  %x_nhwc = tg.transpose %x perm = [0, 2, 3, 1] : tensor<1x4x9x7xf32> -> tensor<1x9x7x4xf32, strided<[252, 7, 1, 63]>>
  %y = tg.conv2d %x_nhwc, %w, %b strides = [2, 1] padding = [2, 1, 0, 1] dilation = [1, 2] groups = 1 layout = "NHWC" : (tensor<1x9x7x4xf32, strided<[252, 7, 1, 63]>>, tensor<3x3x4x32xf32>, tensor<32xf32>) -> tensor<1x5x5x32xf32>
  func.return %y : tensor<1x5x5x32xf32>
}

// Must not fire: NCHW (its kernel does not vectorize over channels).
// CHECK-LABEL: func.func @nchw
// CHECK-NOT:     tg.pad
// CHECK:         padding = [1, 1, 1, 1]
func.func @nchw(%x: tensor<1x8x6x6xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<1x16x6x6xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x6x6xf32>
  func.return %y : tensor<1x16x6x6xf32>
}

// Must not fire: no padding.
// CHECK-LABEL: func.func @unpadded
// CHECK-NOT:     tg.pad
// CHECK:         padding = [0, 0, 0, 0]
func.func @unpadded(%x: tensor<1x6x6x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<1x4x4x16xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x8xf32>, tensor<3x3x8x16xf32>) -> tensor<1x4x4x16xf32>
  func.return %y : tensor<1x4x4x16xf32>
}

// Must not fire: output channels that are not whole vectors (5).
// CHECK-LABEL: func.func @narrow
// CHECK-NOT:     tg.pad
// CHECK:         padding = [1, 1, 1, 1]
func.func @narrow(%x: tensor<1x6x6x3xf32>, %w: tensor<3x3x3x5xf32>) -> tensor<1x6x6x5xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x3xf32>, tensor<3x3x3x5xf32>) -> tensor<1x6x6x5xf32>
  func.return %y : tensor<1x6x6x5xf32>
}

// Grouped (RegNet's: two groups of 16 output channels, stride 2): the padding
// moves out as for a dense convolution, and the groups stay.
// CHECK-LABEL: func.func @grouped
// CHECK-NEXT:    %x_padded = tg.pad %x low = [0, 1, 1, 0] high = [0, 1, 1, 0] value = 0.000000e+00 : tensor<1x8x8x32xf32> -> tensor<1x10x10x32xf32>
// CHECK-NEXT:    %y = tg.conv2d %x_padded, %w strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 2 layout = "NHWC" : (tensor<1x10x10x32xf32>, tensor<3x3x16x32xf32>) -> tensor<1x4x4x32xf32>
func.func @grouped(%x: tensor<1x8x8x32xf32>, %w: tensor<3x3x16x32xf32>) -> tensor<1x4x4x32xf32> {
  %y = tg.conv2d %x, %w strides = [2, 2] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 2 layout = "NHWC" : (tensor<1x8x8x32xf32>, tensor<3x3x16x32xf32>) -> tensor<1x4x4x32xf32>
  func.return %y : tensor<1x4x4x32xf32>
}

// Must not fire: grouped with 8 output channels per group (not whole vectors),
// though 16 in all.
// CHECK-LABEL: func.func @grouped_narrow
// CHECK-NOT:     tg.pad
// CHECK:         groups = 2
func.func @grouped_narrow(%x: tensor<1x6x6x8xf32>, %w: tensor<3x3x4x16xf32>) -> tensor<1x6x6x16xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 2 layout = "NHWC" : (tensor<1x6x6x8xf32>, tensor<3x3x4x16xf32>) -> tensor<1x6x6x16xf32>
  func.return %y : tensor<1x6x6x16xf32>
}

// Must not fire: grouped with 3 output pixels per row, which no tile width
// (4 to 8) divides: the kernel would stay untiled and the copy be lost.
// CHECK-LABEL: func.func @grouped_short_rows
// CHECK-NOT:     tg.pad
// CHECK:         groups = 2
func.func @grouped_short_rows(%x: tensor<1x5x5x32xf32>, %w: tensor<3x3x16x32xf32>) -> tensor<1x3x3x32xf32> {
  %y = tg.conv2d %x, %w strides = [2, 2] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 2 layout = "NHWC" : (tensor<1x5x5x32xf32>, tensor<3x3x16x32xf32>) -> tensor<1x3x3x32xf32>
  func.return %y : tensor<1x3x3x32xf32>
}

// Must not fire: grouped and memory-bound, a padded 1x1 convolution at stride 2
// does 16 * 4 * 4 / (8 * 8) = 4 multiply-adds per copied element (< 16).
// CHECK-LABEL: func.func @grouped_pointwise
// CHECK-NOT:     tg.pad
// CHECK:         groups = 2
func.func @grouped_pointwise(%x: tensor<1x6x6x32xf32>, %w: tensor<1x1x16x32xf32>) -> tensor<1x4x4x32xf32> {
  %y = tg.conv2d %x, %w strides = [2, 2] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 2 layout = "NHWC" : (tensor<1x6x6x32xf32>, tensor<1x1x16x32xf32>) -> tensor<1x4x4x32xf32>
  func.return %y : tensor<1x4x4x32xf32>
}

// Must not fire: memory-bound, a padded 1x1 convolution to 16 channels does 16
// multiply-adds per copied element (< 64).
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT:     tg.pad
// CHECK:         padding = [1, 1, 1, 1]
func.func @pointwise(%x: tensor<1x6x6x8xf32>, %w: tensor<1x1x8x16xf32>) -> tensor<1x8x8x16xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x8xf32>, tensor<1x1x8x16xf32>) -> tensor<1x8x8x16xf32>
  func.return %y : tensor<1x8x8x16xf32>
}

// Must not fire: a depthwise convolution keeps its padding test (the copy costs
// about what the tests do at stride 1, more at stride 2), whatever its channels.
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT:     tg.pad
// CHECK:         padding = [1, 1, 1, 1] {{.*}} groups = 16
// CHECK:         strides = [2, 2] padding = [0, 0, 1, 1] {{.*}} groups = 64
func.func @depthwise(%x: tensor<1x6x6x16xf32>, %w: tensor<3x3x1x16xf32>, %x2: tensor<1x8x8x64xf32>, %w2: tensor<3x3x1x64xf32>) -> (tensor<1x6x6x16xf32>, tensor<1x4x4x64xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 16 layout = "NHWC" : (tensor<1x6x6x16xf32>, tensor<3x3x1x16xf32>) -> tensor<1x6x6x16xf32>
  %z = tg.conv2d %x2, %w2 strides = [2, 2] padding = [0, 0, 1, 1] dilation = [1, 1] groups = 64 layout = "NHWC" : (tensor<1x8x8x64xf32>, tensor<3x3x1x64xf32>) -> tensor<1x4x4x64xf32>
  func.return %y, %z : tensor<1x6x6x16xf32>, tensor<1x4x4x64xf32>
}

// A stem: 3 -> 24 channels (whole <8 x float> vectors), 3x3 at stride 2, 34.6
// multiply-adds per copied element (at least 32): the padding moves out, so the
// register tile applies (504 -> 264 us on 224x224).
// CHECK-LABEL: func.func @stem
// CHECK-NEXT:    %x_padded = tg.pad %x low = [0, 1, 1, 0] high = [0, 1, 1, 0]
// CHECK-NEXT:    %y = tg.conv2d %x_padded, %w strides = [2, 2] padding = [0, 0, 0, 0]
func.func @stem(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x24xf32>) -> tensor<1x4x4x24xf32> {
  %y = tg.conv2d %x, %w strides = [2, 2] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x3xf32>, tensor<3x3x3x24xf32>) -> tensor<1x4x4x24xf32>
  func.return %y : tensor<1x4x4x24xf32>
}

// Must not fire: 12 output channels, neither whole <8 x float> vectors nor one
// <16 x float> with a peeled rest: no tile takes them.
// CHECK-LABEL: func.func @twelve
// CHECK-NOT:     tg.pad
// CHECK:         padding = [1, 1, 1, 1]
func.func @twelve(%x: tensor<1x8x8x16xf32>, %w: tensor<3x3x16x12xf32>) -> tensor<1x8x8x12xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x16xf32>, tensor<3x3x16x12xf32>) -> tensor<1x8x8x12xf32>
  func.return %y : tensor<1x8x8x12xf32>
}
