// RUN: qidao-opt %s -p layout | filecheck %s
// RUN: qidao-opt %s -p layout,layout | filecheck %s

// Chains pass through rank-4 tg.concat and tg.slice: their axis and bounds move to
// their NHWC places. The second RUN line checks idempotence.

// SqueezeNet's fire module: two expansions concatenated along the channels, then a
// pool. The concat joins along NHWC axis 3 and the pool reads it directly; before,
// the concat stayed NCHW and the pool read it through a transposed view.
// CHECK-LABEL: func.func @fire
// CHECK:         %a_nhwc = tg.conv2d %s_nhwc, %w1_hwio
// CHECK-NEXT:    %b_nhwc = tg.conv2d %s_nhwc, %w3_hwio
// CHECK-NEXT:    %c_nhwc = tg.concat %a_nhwc, %b_nhwc axis = 3 : (tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>) -> tensor<1x6x6x16xf32>
// CHECK-NEXT:    %p_nhwc = tg.max_pool2d %c_nhwc
// CHECK-NOT:     tg.concat
func.func @fire(%x: tensor<1x4x6x6xf32>, %w: tensor<4x4x1x1xf32>, %w1: tensor<8x4x1x1xf32>, %w3: tensor<8x4x3x3xf32>) -> tensor<1x16x3x3xf32> {
  %s = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %a = tg.conv2d %s, %w1 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x4x6x6xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x6x6xf32>
  %b = tg.conv2d %s, %w3 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  %c = tg.concat %a, %b axis = 1 : (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x16x6x6xf32>
  %p = tg.max_pool2d %c kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] : tensor<1x16x6x6xf32> -> tensor<1x16x3x3xf32>
  func.return %p : tensor<1x16x3x3xf32>
}

// ShuffleNet's split: a slice of the channels (start/stop/step on NHWC axis 3)
// feeds the next convolution in NHWC, a strided view, no copy.
// CHECK-LABEL: func.func @split
// CHECK:         %h_nhwc = tg.slice %c_nhwc start = [0, 0, 0, 4] stop = [1, 6, 6, 8] step = [1, 1, 1, 1]
// CHECK-NEXT:    %y_nhwc = tg.conv2d %h_nhwc, %w2_hwio
func.func @split(%x: tensor<1x4x6x6xf32>, %w: tensor<8x4x1x1xf32>, %w2: tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32> {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x4x6x6xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x6x6xf32>
  %h = tg.slice %c start = [0, 4, 0, 0] stop = [1, 8, 6, 6] step = [1, 1, 1, 1] : tensor<1x8x6x6xf32> -> tensor<1x4x6x6xf32, strided<[288, 36, 6, 1], offset: 144>>
  %y = tg.conv2d %h, %w2 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x4x6x6xf32, strided<[288, 36, 6, 1], offset: 144>>, tensor<4x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  func.return %y : tensor<1x4x6x6xf32>
}

// Must not fire: a concat of rank 3 stops nothing and joins nothing, and a concat
// of NCHW values with no convolution in its chain stays as it is (the boundary
// transposes would cost more than they save).
// CHECK-LABEL: func.func @not_in_a_chain
// CHECK-NEXT:    %c = tg.concat %a, %b axis = 1 : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:    %r = tg.concat %u, %v axis = 2 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT:    func.return
func.func @not_in_a_chain(%a: tensor<1x2x3x3xf32>, %b: tensor<1x2x3x3xf32>, %u: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>) -> (tensor<1x4x3x3xf32>, tensor<2x3x8xf32>) {
  %c = tg.concat %a, %b axis = 1 : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  %r = tg.concat %u, %v axis = 2 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  func.return %c, %r : tensor<1x4x3x3xf32>, tensor<2x3x8xf32>
}
