// RUN: qidao-opt %s -p layout | filecheck %s
// RUN: qidao-opt %s -p layout,layout | filecheck %s

// Chains pass through tg.pad and spatial reductions: both compute the same in NHWC
// once their dims are permuted. The second RUN line checks idempotence.

// The TF-style padding of an ONNX export before a depthwise convolution: the pad
// joins the chain (its amounts on the NHWC dims, H and W at 1 and 2) and the
// depthwise conv reads it directly; no transposes between the convolutions.
// CHECK-LABEL: func.func @pad_before_depthwise
// CHECK:         %r_nhwc = tg.relu %e_nhwc : tensor<1x6x6x32xf32> -> tensor<1x6x6x32xf32>
// CHECK-NEXT:    %p_nhwc = tg.pad %r_nhwc low = [0, 0, 0, 0] high = [0, 1, 1, 0] value = 0.000000e+00 : tensor<1x6x6x32xf32> -> tensor<1x7x7x32xf32>
// CHECK-NEXT:    %d_nhwc = tg.conv2d %p_nhwc, %wd_hwio, %bd strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 32 layout = "NHWC" : (tensor<1x7x7x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x3x3x32xf32>
// CHECK-NEXT:    %d = tg.transpose %d_nhwc perm = [0, 3, 1, 2]
func.func @pad_before_depthwise(%x: tensor<1x16x6x6xf32>, %w1: tensor<32x16x1x1xf32>, %wd: tensor<32x1x3x3xf32>, %bd: tensor<32xf32>) -> tensor<1x32x3x3xf32> {
  %e = tg.conv2d %x, %w1 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x6x6xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x6x6xf32>
  %r = tg.relu %e : tensor<1x32x6x6xf32> -> tensor<1x32x6x6xf32>
  %p = tg.pad %r low = [0, 0, 0, 0] high = [0, 0, 1, 1] value = 0.000000e+00 : tensor<1x32x6x6xf32> -> tensor<1x32x7x7xf32>
  %d = tg.conv2d %p, %wd, %bd strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 32 : (tensor<1x32x7x7xf32>, tensor<32x1x3x3xf32>, tensor<32xf32>) -> tensor<1x32x3x3xf32>
  func.return %d : tensor<1x32x3x3xf32>
}

// Any value and any dims: padding commutes with the transpose, so a pad of 1.5
// that also pads the channels is one NHWC pad (channels last: low[3] = 2). The
// NCHW alternative would read the chain's output through a transposed view and
// feed the next conv through another: two strided passes instead of one.
// CHECK-LABEL: func.func @pad_value_and_channels
// CHECK:         %c_nhwc = tg.conv2d %x_nhwc, %w_hwio
// CHECK-NEXT:    %p_nhwc = tg.pad %c_nhwc low = [0, 1, 1, 2] high = [0, 1, 1, 0] value = 1.500000e+00 : tensor<1x4x4x8xf32> -> tensor<1x6x6x10xf32>
// CHECK-NEXT:    %y_nhwc = tg.conv2d %p_nhwc, %w2_hwio
func.func @pad_value_and_channels(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>, %w2: tensor<8x10x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %p = tg.pad %c low = [0, 2, 1, 1] high = [0, 0, 1, 1] value = 1.500000e+00 : tensor<1x8x4x4xf32> -> tensor<1x10x6x6xf32>
  %y = tg.conv2d %p, %w2 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x10x6x6xf32>, tensor<8x10x3x3xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// Global pools (reduce over the spatial axes, keepdims; negative axes count) join
// the chain as reductions over the NHWC axes [1, 2]; their results leave it.
// CHECK-LABEL: func.func @global_pools
// CHECK:         %s_nhwc = tg.reduce_sum %c_nhwc axes = [1, 2] keepdims : tensor<1x4x4x8xf32> -> tensor<1x1x1x8xf32>
// CHECK-NEXT:    %m_nhwc = tg.reduce_max %c_nhwc axes = [1, 2] keepdims : tensor<1x4x4x8xf32> -> tensor<1x1x1x8xf32>
// CHECK:         %r_nhwc = tg.relu %s_nhwc : tensor<1x1x1x8xf32> -> tensor<1x1x1x8xf32>
func.func @global_pools(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>) -> (tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>) {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %s = tg.reduce_sum %c axes = [2, 3] keepdims : tensor<1x8x4x4xf32> -> tensor<1x8x1x1xf32>
  %m = tg.reduce_max %c axes = [-1, -2] keepdims : tensor<1x8x4x4xf32> -> tensor<1x8x1x1xf32>
  %r = tg.relu %s : tensor<1x8x1x1xf32> -> tensor<1x8x1x1xf32>
  func.return %r, %m : tensor<1x8x1x1xf32>, tensor<1x8x1x1xf32>
}

// Joins: any keepdims reduction, its axes moved to their NHWC places: over the
// channels [1] -> [3] (a contiguous row in NHWC), training batch norm's statistics
// [0, 2, 3] -> [0, 1, 2]. Must not join: a global pool without keepdims (a rank-2
// result): it stays NCHW and reads the chain's output transpose.
// CHECK-LABEL: func.func @other_reductions
// CHECK:         %c = tg.transpose %c_nhwc perm = [0, 3, 1, 2]
// CHECK-NEXT:    %k_nhwc = tg.reduce_mean %c_nhwc axes = [3] keepdims : tensor<1x4x4x8xf32> -> tensor<1x4x4x1xf32>
// CHECK:         %b_nhwc = tg.reduce_mean %c_nhwc axes = [0, 1, 2] keepdims : tensor<1x4x4x8xf32> -> tensor<1x1x1x8xf32>
// CHECK:         %f = tg.reduce_mean %c axes = [2, 3] : tensor<1x8x4x4xf32, strided<[128, 1, 32, 8]>> -> tensor<1x8xf32>
func.func @other_reductions(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x8x1x1xf32>, tensor<1x8xf32>) {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %k = tg.reduce_mean %c axes = [1] keepdims : tensor<1x8x4x4xf32> -> tensor<1x1x4x4xf32>
  %b = tg.reduce_mean %c axes = [0, 2, 3] keepdims : tensor<1x8x4x4xf32> -> tensor<1x8x1x1xf32>
  %f = tg.reduce_mean %c axes = [2, 3] : tensor<1x8x4x4xf32> -> tensor<1x8xf32>
  func.return %k, %b, %f : tensor<1x1x4x4xf32>, tensor<1x8x1x1xf32>, tensor<1x8xf32>
}

// Must not fire: a pad and a relu without a convolution gain less than the two
// boundary transposes cost.
// CHECK-LABEL: func.func @pad_alone
// CHECK-NOT:     tg.transpose
// CHECK:         %p = tg.pad %x low = [0, 0, 1, 1] high = [0, 0, 1, 1]
// CHECK-NEXT:    %r = tg.relu %p
func.func @pad_alone(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x6x6xf32> {
  %p = tg.pad %x low = [0, 0, 1, 1] high = [0, 0, 1, 1] value = 0.000000e+00 : tensor<1x16x4x4xf32> -> tensor<1x16x6x6xf32>
  %r = tg.relu %p : tensor<1x16x6x6xf32> -> tensor<1x16x6x6xf32>
  func.return %r : tensor<1x16x6x6xf32>
}
