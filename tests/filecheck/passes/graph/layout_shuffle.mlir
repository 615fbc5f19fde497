// RUN: qidao-opt %s -p layout | filecheck %s
// RUN: qidao-opt %s -p layout,layout | filecheck %s

// ShuffleNet's channel shuffle between two convolutions: channels-last it is the
// transpose of the trailing [G, C/G] axes of the NHWC data, one copy, and the next
// convolution reads the row-major result. The second RUN line checks idempotence.
// CHECK-LABEL: func.func @shuffle
// CHECK:         %a_nhwc = tg.conv2d %x_nhwc, %w_hwio
// CHECK-NEXT:    %{{.*}} = tg.view %a_nhwc : tensor<1x3x3x8xf32> -> tensor<1x3x3x2x4xf32>
// CHECK-NEXT:    %{{.*}} = tg.transpose %{{.*}} perm = [0, 1, 2, 4, 3] : tensor<1x3x3x2x4xf32> -> tensor<1x3x3x4x2xf32, strided<[72, 24, 8, 1, 4]>>
// CHECK-NEXT:    %{{.*}} = tg.contiguous %{{.*}} : tensor<1x3x3x4x2xf32, strided<[72, 24, 8, 1, 4]>> -> tensor<1x3x3x4x2xf32>
// CHECK-NEXT:    %s_nhwc = tg.view %{{.*}} : tensor<1x3x3x4x2xf32> -> tensor<1x3x3x8xf32>
// CHECK-NEXT:    %y_nhwc = tg.conv2d %s_nhwc, %w2_hwio
// CHECK-NOT:     tg.reshape
func.func @shuffle(%x: tensor<1x4x3x3xf32>, %w: tensor<8x4x1x1xf32>, %w2: tensor<8x8x1x1xf32>) -> tensor<1x8x3x3xf32> {
  %a = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x4x3x3xf32>, tensor<8x4x1x1xf32>) -> tensor<1x8x3x3xf32>
  %r = tg.reshape %a : tensor<1x8x3x3xf32> -> tensor<1x2x4x3x3xf32>
  %t = tg.transpose %r perm = [0, 2, 1, 3, 4] : tensor<1x2x4x3x3xf32> -> tensor<1x4x2x3x3xf32, strided<[72, 9, 36, 3, 1]>>
  %s = tg.reshape %t : tensor<1x4x2x3x3xf32, strided<[72, 9, 36, 3, 1]>> -> tensor<1x8x3x3xf32>
  %y = tg.conv2d %s, %w2 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x3x3xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x3x3xf32>
  func.return %y : tensor<1x8x3x3xf32>
}

// Must not fire: a shuffle of NCHW data that no chain made (the graph's input), and
// one whose transpose moves other axes.
// CHECK-LABEL: func.func @not_nhwc
// CHECK-NEXT:    %r = tg.reshape %x
// CHECK-NEXT:    %t = tg.transpose %r perm = [0, 2, 1, 3, 4]
// CHECK-NEXT:    %s = tg.reshape %t
// CHECK-NEXT:    func.return %s
func.func @not_nhwc(%x: tensor<1x8x3x3xf32>) -> tensor<1x8x3x3xf32> {
  %r = tg.reshape %x : tensor<1x8x3x3xf32> -> tensor<1x2x4x3x3xf32>
  %t = tg.transpose %r perm = [0, 2, 1, 3, 4] : tensor<1x2x4x3x3xf32> -> tensor<1x4x2x3x3xf32, strided<[72, 9, 36, 3, 1]>>
  %s = tg.reshape %t : tensor<1x4x2x3x3xf32, strided<[72, 9, 36, 3, 1]>> -> tensor<1x8x3x3xf32>
  func.return %s : tensor<1x8x3x3xf32>
}
