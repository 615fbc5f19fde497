// RUN: qidao-opt %s -p layout | filecheck %s
// RUN: qidao-opt %s -p layout,layout | filecheck %s

// The second RUN line checks idempotence: a second run changes nothing.

// The docstring's example: conv -> relu -> conv runs in NHWC, with one transpose
// at the chain's input, one back at its output, and none in between.
// CHECK-LABEL: func.func @conv_relu_conv
// CHECK-NEXT:    %x_nhwc = tg.transpose %x perm = [0, 2, 3, 1] : tensor<1x8x6x6xf32> -> tensor<1x6x6x8xf32, strided<[288, 6, 1, 36]>>
// CHECK-NEXT:    %w1_hwio_view = tg.transpose %w1 perm = [2, 3, 1, 0] : tensor<8x8x3x3xf32> -> tensor<3x3x8x8xf32, strided<[3, 1, 9, 72]>>
// CHECK-NEXT:    %w1_hwio = tg.contiguous %w1_hwio_view : tensor<3x3x8x8xf32, strided<[3, 1, 9, 72]>> -> tensor<3x3x8x8xf32>
// CHECK-NEXT:    %w2_hwio_view = tg.transpose %w2 perm = [2, 3, 1, 0]
// CHECK-NEXT:    %w2_hwio = tg.contiguous %w2_hwio_view
// CHECK-NEXT:    %[[C1:.*]] = tg.conv2d %x_nhwc, %w1_hwio, %b1 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x8xf32, strided<[288, 6, 1, 36]>>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<1x6x6x8xf32>
// CHECK-NEXT:    %[[R:.*]] = tg.relu %[[C1]] : tensor<1x6x6x8xf32> -> tensor<1x6x6x8xf32>
// CHECK-NEXT:    %[[C2:.*]] = tg.conv2d %[[R]], %w2_hwio strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x8xf32>, tensor<3x3x8x8xf32>) -> tensor<1x6x6x8xf32>
// CHECK-NEXT:    %[[T:.*]] = tg.transpose %[[C2]] perm = [0, 3, 1, 2] : tensor<1x6x6x8xf32> -> tensor<1x8x6x6xf32, strided<[288, 1, 48, 8]>>
// CHECK-NEXT:    %[[Y:.*]] = tg.contiguous %[[T]] : tensor<1x8x6x6xf32, strided<[288, 1, 48, 8]>> -> tensor<1x8x6x6xf32>
// CHECK-NEXT:    func.return %[[Y]] : tensor<1x8x6x6xf32>
func.func @conv_relu_conv(%x: tensor<1x8x6x6xf32>, %w1: tensor<8x8x3x3xf32>, %b1: tensor<8xf32>, %w2: tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %0 = tg.conv2d %x, %w1, %b1 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
  %1 = tg.relu %0 : tensor<1x8x6x6xf32> -> tensor<1x8x6x6xf32>
  %2 = tg.conv2d %1, %w2 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return %2 : tensor<1x8x6x6xf32>
}

// A constant weight is re-laid-out at compile time: a new HWIO constant, no
// transpose, and the FCHW constant is gone.
// CHECK-LABEL: func.func @constant_weight
// CHECK-NOT:     tensor<4x1x1x1xf32>
// CHECK:         %w_hwio = tg.constant dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]]]]> : tensor<1x1x1x4xf32>
// CHECK:         %y_nhwc = tg.conv2d %x_nhwc, %w_hwio {{.*}} layout = "NHWC"
// CHECK-NOT:     tensor<4x1x1x1xf32>
// CHECK:         func.return
func.func @constant_weight(%x: tensor<1x1x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %w = tg.constant dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]]]> : tensor<4x1x1x1xf32>
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x1x3x3xf32>, tensor<4x1x1x1xf32>) -> tensor<1x4x3x3xf32>
  func.return %y : tensor<1x4x3x3xf32>
}

// Layout-agnostic ops join the chain: a [C, 1, 1] bias becomes a [C] view, a
// scalar stays, and the residual input %x enters through the same transpose as the
// conv's input.
// CHECK-LABEL: func.func @bias_and_residual
// CHECK:         %x_nhwc = tg.transpose %x perm = [0, 2, 3, 1]
// CHECK:         %b_c = tg.view %b : tensor<8x1x1xf32> -> tensor<8xf32>
// CHECK:         %c_nhwc = tg.conv2d %x_nhwc, %w_hwio {{.*}} layout = "NHWC"
// CHECK-NEXT:    %cb_nhwc = tg.add %c_nhwc, %b_c : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    %cs_nhwc = tg.mul %cb_nhwc, %s : (tensor<1x4x4x8xf32>, tensor<1xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    %r_nhwc = tg.add %cs_nhwc, %x_nhwc
// CHECK-NEXT:    %r = tg.transpose %r_nhwc perm = [0, 3, 1, 2]
// CHECK-NEXT:    %r_1 = tg.contiguous %r
// CHECK-NEXT:    func.return %r_1
func.func @bias_and_residual(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>, %b: tensor<8x1x1xf32>, %s: tensor<1xf32>) -> tensor<1x8x4x4xf32> {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %cb = tg.add %c, %b : (tensor<1x8x4x4xf32>, tensor<8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %cs = tg.mul %cb, %s : (tensor<1x8x4x4xf32>, tensor<1xf32>) -> tensor<1x8x4x4xf32>
  %r = tg.add %cs, %x : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  func.return %r : tensor<1x8x4x4xf32>
}

// Batch norm (channels last) and a pool (C = 8) join the conv's chain.
// CHECK-LABEL: func.func @batch_norm_and_pool
// CHECK:         %c_nhwc = tg.conv2d {{.*}} layout = "NHWC"
// CHECK-NEXT:    %n_nhwc = tg.batch_norm %c_nhwc, %p, %p, %p, %p epsilon = 1.000000e-05 layout = "NHWC" : tensor<1x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    %m_nhwc = tg.max_pool2d %n_nhwc kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] layout = "NHWC" : tensor<1x4x4x8xf32> -> tensor<1x2x2x8xf32>
// CHECK-NEXT:    %m = tg.transpose %m_nhwc perm = [0, 3, 1, 2]
func.func @batch_norm_and_pool(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>, %p: tensor<8xf32>) -> tensor<1x8x2x2xf32> {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %n = tg.batch_norm %c, %p, %p, %p, %p epsilon = 1.000000e-05 : tensor<1x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<1x8x4x4xf32>
  %m = tg.max_pool2d %n kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] : tensor<1x8x4x4xf32> -> tensor<1x8x2x2xf32>
  func.return %m : tensor<1x8x2x2xf32>
}

// An op the pass does not understand (softmax) stops the chain: two chains, each
// with its own boundary transposes; they share the HWIO copy of %w.
// CHECK-LABEL: func.func @softmax_splits
// CHECK:         %w_hwio = tg.contiguous
// CHECK-NOT:     tg.contiguous
// CHECK:         %a_nhwc = tg.conv2d %x_nhwc, %w_hwio {{.*}} layout = "NHWC"
// CHECK-NEXT:    %a = tg.transpose %a_nhwc perm = [0, 3, 1, 2]
// CHECK-NEXT:    %s = tg.softmax %a axis = 1 : tensor<1x8x4x4xf32, strided<[128, 1, 32, 8]>> -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %s_nhwc = tg.transpose %s perm = [0, 2, 3, 1]
// CHECK-NEXT:    %b_nhwc = tg.conv2d %s_nhwc, %w_hwio {{.*}} layout = "NHWC"
// CHECK-NEXT:    %b = tg.transpose %b_nhwc perm = [0, 3, 1, 2]
func.func @softmax_splits(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32> {
  %a = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %s = tg.softmax %a axis = 1 : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  %b = tg.conv2d %s, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  func.return %b : tensor<1x8x4x4xf32>
}

// A model that transposed its NHWC input to NCHW: the chain's input transpose
// cancels with it (simplify's TransposeOfTranspose), and the conv reads %x itself.
// CHECK-LABEL: func.func @nhwc_input
// CHECK-NOT:     perm = [0, 2, 3, 1]
// CHECK:         %y_nhwc = tg.conv2d %x, %w_hwio {{.*}} layout = "NHWC" : (tensor<1x4x4x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    %y = tg.transpose %y_nhwc perm = [0, 3, 1, 2]
func.func @nhwc_input(%x: tensor<1x4x4x8xf32>, %w: tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32> {
  %t = tg.transpose %x perm = [0, 3, 1, 2] : tensor<1x4x4x8xf32> -> tensor<1x8x4x4xf32, strided<[128, 1, 32, 8]>>
  %y = tg.conv2d %t, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32, strided<[128, 1, 32, 8]>>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// Users outside the chain keep their types: a reshape (whose result type depends
// on its operand's layout) gets a row-major copy, softmax reads the strided view.
// CHECK-LABEL: func.func @outside_users
// CHECK:         %y = tg.transpose %y_nhwc perm = [0, 3, 1, 2]
// CHECK-NEXT:    %y_1 = tg.contiguous %y : tensor<1x8x4x4xf32, strided<[128, 1, 32, 8]>> -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %f = tg.reshape %y_1 : tensor<1x8x4x4xf32> -> tensor<1x128xf32>
// CHECK-NEXT:    %e_nhwc = tg.exp %y_nhwc
// CHECK-NEXT:    %e = tg.transpose %e_nhwc perm = [0, 3, 1, 2]
// CHECK-NEXT:    %s = tg.softmax %e axis = 1 : tensor<1x8x4x4xf32, strided<[128, 1, 32, 8]>> -> tensor<1x8x4x4xf32>
func.func @outside_users(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x1x1xf32>) -> (tensor<1x128xf32>, tensor<1x8x4x4xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x4x4xf32>
  %f = tg.reshape %y : tensor<1x8x4x4xf32> -> tensor<1x128xf32>
  %e = tg.exp %y : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  %s = tg.softmax %e axis = 1 : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  func.return %f, %s : tensor<1x128xf32>, tensor<1x8x4x4xf32>
}

// Must not fire: a single conv whose heuristic says NCHW (F = 2 < 4 output
// channels), with the relu after it.
// CHECK-LABEL: func.func @narrow_conv
// CHECK-NOT:     tg.transpose
// CHECK-NOT:     layout
// CHECK:         tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<2x8x1x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    tg.relu
func.func @narrow_conv(%x: tensor<1x8x4x4xf32>, %w: tensor<2x8x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<2x8x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = tg.relu %y : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  func.return %r : tensor<1x2x4x4xf32>
}

// Must not fire: a grouped conv that is not depthwise, with 2 < 4 output channels
// per group (F / groups = 8 / 4).
// CHECK-LABEL: func.func @grouped_narrow_conv
// CHECK-NOT:     tg.transpose
// CHECK-NOT:     layout
// CHECK:         tg.conv2d %x, %w {{.*}} groups = 4 :
func.func @grouped_narrow_conv(%x: tensor<1x8x4x4xf32>, %w: tensor<8x2x3x3xf32>) -> tensor<1x8x2x2xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 4 : (tensor<1x8x4x4xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x2x2xf32>
  func.return %y : tensor<1x8x2x2xf32>
}

// Must not fire: one channel (groups = C = F = 1) is a narrow head, not a
// depthwise conv the NHWC kernel vectorizes.
// CHECK-LABEL: func.func @one_channel_conv
// CHECK-NOT:     tg.transpose
// CHECK-NOT:     layout
// CHECK:         tg.conv2d %x, %w {{.*}} groups = 1 :
func.func @one_channel_conv(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}

// A depthwise conv goes NHWC (from C = 2 channels). Its kernel's innermost loop
// runs over the channels, so an input entering the chain is copied row-major
// (%x_nhwc_packed) rather than read through the transposed view.
// CHECK-LABEL: func.func @depthwise_conv_16
// CHECK:         %x_nhwc = tg.transpose %x perm = [0, 2, 3, 1] : tensor<1x16x5x5xf32> -> tensor<1x5x5x16xf32, strided<[400, 5, 1, 25]>>
// CHECK-NEXT:    %x_nhwc_packed = tg.contiguous %x_nhwc : tensor<1x5x5x16xf32, strided<[400, 5, 1, 25]>> -> tensor<1x5x5x16xf32>
// CHECK:         %d_nhwc = tg.conv2d %x_nhwc_packed, %w_hwio strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 16 layout = "NHWC" : (tensor<1x5x5x16xf32>, tensor<3x3x1x16xf32>) -> tensor<1x5x5x16xf32>
// CHECK-NEXT:    %r_nhwc = tg.relu %d_nhwc
func.func @depthwise_conv_16(%x: tensor<1x16x5x5xf32>, %w: tensor<16x1x3x3xf32>) -> tensor<1x16x5x5xf32> {
  %d = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 16 : (tensor<1x16x5x5xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x5x5xf32>
  %r = tg.relu %d : tensor<1x16x5x5xf32> -> tensor<1x16x5x5xf32>
  func.return %r : tensor<1x16x5x5xf32>
}

// A model that transposed its NHWC input: the entering transpose cancels, and the
// packed copy of the (now row-major) %y is %y itself.
// CHECK-LABEL: func.func @depthwise_nhwc_input
// CHECK-NOT:     tg.contiguous %y
// CHECK:         %d_nhwc = tg.conv2d %y, %w_hwio {{.*}} groups = 16 layout = "NHWC" : (tensor<1x5x5x16xf32>, tensor<3x3x1x16xf32>) -> tensor<1x5x5x16xf32>
func.func @depthwise_nhwc_input(%y: tensor<1x5x5x16xf32>, %w: tensor<16x1x3x3xf32>) -> tensor<1x16x5x5xf32> {
  %x = tg.transpose %y perm = [0, 3, 1, 2] : tensor<1x5x5x16xf32> -> tensor<1x16x5x5xf32, strided<[400, 1, 80, 16]>>
  %d = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 16 : (tensor<1x16x5x5xf32, strided<[400, 1, 80, 16]>>, tensor<16x1x3x3xf32>) -> tensor<1x16x5x5xf32>
  func.return %d : tensor<1x16x5x5xf32>
}

// Must not fire: pools and elementwise ops without a convolution.
// CHECK-LABEL: func.func @pool_alone
// CHECK-NOT:     tg.transpose
// CHECK-NOT:     layout
// CHECK:         tg.max_pool2d %x
// CHECK-NEXT:    tg.relu
func.func @pool_alone(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x2x2xf32> {
  %p = tg.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] : tensor<1x16x4x4xf32> -> tensor<1x16x2x2xf32>
  %r = tg.relu %p : tensor<1x16x2x2xf32> -> tensor<1x16x2x2xf32>
  func.return %r : tensor<1x16x2x2xf32>
}

// Must not fire: a chain already in NHWC is left exactly as it is.
// CHECK-LABEL: func.func @already_nhwc
// CHECK-NEXT:    %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC"
// CHECK-NEXT:    %r = tg.relu %y
// CHECK-NEXT:    %z = tg.conv2d %r, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC"
// CHECK-NEXT:    func.return %z
func.func @already_nhwc(%x: tensor<1x4x4x8xf32>, %w: tensor<1x1x8x8xf32>) -> tensor<1x4x4x8xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x4x4x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x4x4x8xf32>
  %r = tg.relu %y : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>
  %z = tg.conv2d %r, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x4x4x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x4x4x8xf32>
  func.return %z : tensor<1x4x4x8xf32>
}

// The model's own permute back to channels-last after a chain (ConvNeXt's and
// Swin's convolutions before a layer norm over the channels), read only by tg
// compute ops: they read the chain's NHWC value itself, no NCHW copy, no view.
// CHECK-LABEL: func.func @permute_back
// CHECK:         %y_nhwc = tg.conv2d
// CHECK-NEXT:    %m = tg.reduce_mean %y_nhwc axes = [3] keepdims : tensor<1x4x4x16xf32> -> tensor<1x4x4x1xf32>
// CHECK-NEXT:    func.return %m
func.func @permute_back(%x: tensor<1x16x4x4xf32>, %w: tensor<16x16x1x1xf32>) -> tensor<1x4x4x1xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %t = tg.transpose %y perm = [0, 2, 3, 1] : tensor<1x16x4x4xf32> -> tensor<1x4x4x16xf32, strided<[256, 4, 1, 16]>>
  %m = tg.reduce_mean %t axes = [3] keepdims : tensor<1x4x4x16xf32, strided<[256, 4, 1, 16]>> -> tensor<1x4x4x1xf32>
  func.return %m : tensor<1x4x4x1xf32>
}

// The permute's result is returned (a type that depends on its layout): it
// stays, over the row-major NCHW copy. The reshape beside it is rebuilt on the
// chain's NHWC value, a view of it now (it copied the strided permute before).
// CHECK-LABEL: func.func @permute_back_read_by_a_view
// CHECK:         %y = tg.transpose %y_nhwc perm = [0, 3, 1, 2]
// CHECK-NEXT:    %y_1 = tg.contiguous %y
// CHECK-NEXT:    %t = tg.transpose %y_1 perm = [0, 2, 3, 1] : tensor<1x16x4x4xf32> -> tensor<1x4x4x16xf32, strided<[256, 4, 1, 16]>>
// CHECK-NEXT:    %r = tg.reshape %y_nhwc : tensor<1x4x4x16xf32> -> tensor<1x256xf32>
// CHECK-NEXT:    func.return %r, %t
func.func @permute_back_read_by_a_view(%x: tensor<1x16x4x4xf32>, %w: tensor<16x16x1x1xf32>) -> (tensor<1x256xf32>, tensor<1x4x4x16xf32, strided<[256, 4, 1, 16]>>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %t = tg.transpose %y perm = [0, 2, 3, 1] : tensor<1x16x4x4xf32> -> tensor<1x4x4x16xf32, strided<[256, 4, 1, 16]>>
  %r = tg.reshape %t : tensor<1x4x4x16xf32, strided<[256, 4, 1, 16]>> -> tensor<1x256xf32>
  func.return %r, %t : tensor<1x256xf32>, tensor<1x4x4x16xf32, strided<[256, 4, 1, 16]>>
}

// Must not fire: another permutation is not the chain's NHWC value.
// CHECK-LABEL: func.func @other_permute
// CHECK:         %t = tg.transpose %y_1 perm = [0, 3, 2, 1]
// CHECK-NEXT:    %m = tg.reduce_mean %t
func.func @other_permute(%x: tensor<1x16x4x4xf32>, %w: tensor<16x16x1x1xf32>) -> tensor<1x4x4x1xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %t = tg.transpose %y perm = [0, 3, 2, 1] : tensor<1x16x4x4xf32> -> tensor<1x4x4x16xf32, strided<[256, 1, 4, 16]>>
  %m = tg.reduce_mean %t axes = [3] keepdims : tensor<1x4x4x16xf32, strided<[256, 1, 4, 16]>> -> tensor<1x4x4x1xf32>
  func.return %m : tensor<1x4x4x1xf32>
}

// A chain output flattened to tokens (Swin's patch embedding: flatten(2), then
// transpose(1, 2)), read only by tg compute ops: a view of the NHWC result.
// CHECK-LABEL: func.func @patches_to_tokens
// CHECK:         %y_nhwc = tg.conv2d
// CHECK-NEXT:    %t = tg.reshape %y_nhwc : tensor<1x4x4x16xf32> -> tensor<1x16x16xf32>
// CHECK-NEXT:    %m = tg.reduce_mean %t axes = [2] keepdims : tensor<1x16x16xf32> -> tensor<1x16x1xf32>
// CHECK-NEXT:    func.return %m
func.func @patches_to_tokens(%x: tensor<1x16x4x4xf32>, %w: tensor<16x16x1x1xf32>) -> tensor<1x16x1xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %f = tg.reshape %y : tensor<1x16x4x4xf32> -> tensor<1x16x16xf32>
  %t = tg.transpose %f perm = [0, 2, 1] : tensor<1x16x16xf32> -> tensor<1x16x16xf32, strided<[256, 1, 16]>>
  %m = tg.reduce_mean %t axes = [2] keepdims : tensor<1x16x16xf32, strided<[256, 1, 16]>> -> tensor<1x16x1xf32>
  func.return %m : tensor<1x16x1xf32>
}

// Must not fire: the flattened output is used as it is as well.
// CHECK-LABEL: func.func @patches_used_twice
// CHECK:         %f = tg.reshape %y_1
// CHECK-NEXT:    %t = tg.transpose %f perm = [0, 2, 1]
func.func @patches_used_twice(%x: tensor<1x16x4x4xf32>, %w: tensor<16x16x1x1xf32>) -> (tensor<1x16x1xf32>, tensor<1x16x16xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %f = tg.reshape %y : tensor<1x16x4x4xf32> -> tensor<1x16x16xf32>
  %t = tg.transpose %f perm = [0, 2, 1] : tensor<1x16x16xf32> -> tensor<1x16x16xf32, strided<[256, 1, 16]>>
  %m = tg.reduce_mean %t axes = [2] keepdims : tensor<1x16x16xf32, strided<[256, 1, 16]>> -> tensor<1x16x1xf32>
  func.return %m, %f : tensor<1x16x1xf32>, tensor<1x16x16xf32>
}

// A weight computed by an elementwise op (a quantized weight less its zero point)
// is a weight, not data: the subtraction stays NCHW outside the chain and its
// result enters the convolution as an HWIO copy.
// CHECK-LABEL: func.func @computed_weight
// CHECK-NEXT:    %x_nhwc = tg.transpose %x perm = [0, 2, 3, 1]
// CHECK-NEXT:    %ws = tg.sub %w, %z : (tensor<8x8x3x3xf32>, tensor<f32>) -> tensor<8x8x3x3xf32>
// CHECK-NEXT:    %ws_hwio_view = tg.transpose %ws perm = [2, 3, 1, 0]
// CHECK-NEXT:    %ws_hwio = tg.contiguous %ws_hwio_view
// CHECK-NEXT:    %{{.*}} = tg.conv2d %x_nhwc, %ws_hwio {{.*}} layout = "NHWC" : (tensor<1x6x6x8xf32, strided<[288, 6, 1, 36]>>, tensor<3x3x8x8xf32>) -> tensor<1x6x6x8xf32>
func.func @computed_weight(%x: tensor<1x8x6x6xf32>, %w: tensor<8x8x3x3xf32>, %z: tensor<f32>) -> tensor<1x8x6x6xf32> {
  %ws = tg.sub %w, %z : (tensor<8x8x3x3xf32>, tensor<f32>) -> tensor<8x8x3x3xf32>
  %y = tg.conv2d %x, %ws strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return %y : tensor<1x8x6x6xf32>
}

// ONNX's Clip is two selects (NaN passes through): a select between two
// convolutions stays in the chain, its condition and values permuted with it,
// a scalar operand as it is; no transpose between the convolutions.
// CHECK-LABEL: func.func @conv_clip_conv
// CHECK:         %[[C1:.*]] = tg.conv2d %x_nhwc, {{.*}} layout = "NHWC"
// CHECK-NEXT:    %[[GE:.*]] = tg.greater_equal %[[C1]], %lo : (tensor<1x6x6x8xf32>, tensor<f32>) -> tensor<1x6x6x8xi1>
// CHECK-NEXT:    %[[M:.*]] = tg.max %[[C1]], %lo : (tensor<1x6x6x8xf32>, tensor<f32>) -> tensor<1x6x6x8xf32>
// CHECK-NEXT:    %[[S:.*]] = tg.select %[[GE]], %[[C1]], %[[M]] : (tensor<1x6x6x8xi1>, tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
// CHECK-NEXT:    %[[Z:.*]] = tg.select %[[GE]], %[[S]], %lo : (tensor<1x6x6x8xi1>, tensor<1x6x6x8xf32>, tensor<f32>) -> tensor<1x6x6x8xf32>
// CHECK-NEXT:    %[[C2:.*]] = tg.conv2d %[[Z]], {{.*}} layout = "NHWC"
// CHECK-NEXT:    tg.transpose %[[C2]] perm = [0, 3, 1, 2]
func.func @conv_clip_conv(%x: tensor<1x8x6x6xf32>, %w1: tensor<8x8x3x3xf32>, %w2: tensor<8x8x3x3xf32>, %lo: tensor<f32>) -> tensor<1x8x6x6xf32> {
  %0 = tg.conv2d %x, %w1 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
  %ge = tg.greater_equal %0, %lo : (tensor<1x8x6x6xf32>, tensor<f32>) -> tensor<1x8x6x6xi1>
  %m = tg.max %0, %lo : (tensor<1x8x6x6xf32>, tensor<f32>) -> tensor<1x8x6x6xf32>
  %s = tg.select %ge, %0, %m : (tensor<1x8x6x6xi1>, tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %z = tg.select %ge, %s, %lo : (tensor<1x8x6x6xi1>, tensor<1x8x6x6xf32>, tensor<f32>) -> tensor<1x8x6x6xf32>
  %1 = tg.conv2d %z, %w2 strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return %1 : tensor<1x8x6x6xf32>
}

// A select whose result is not rank 4 is no chain op: the chain ends before it.
// CHECK-LABEL: func.func @select_of_rank_3_stays
// CHECK:         tg.select %c, %{{.*}}, %{{.*}} : (tensor<8x6x6xi1>, tensor<8x6x6xf32>, tensor<8x6x6xf32>) -> tensor<8x6x6xf32>
func.func @select_of_rank_3_stays(%x: tensor<1x8x6x6xf32>, %w: tensor<8x8x3x3xf32>, %c: tensor<8x6x6xi1>, %o: tensor<8x6x6xf32>) -> tensor<8x6x6xf32> {
  %0 = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
  %1 = tg.reshape %0 : tensor<1x8x6x6xf32> -> tensor<8x6x6xf32>
  %2 = tg.select %c, %1, %o : (tensor<8x6x6xi1>, tensor<8x6x6xf32>, tensor<8x6x6xf32>) -> tensor<8x6x6xf32>
  func.return %2 : tensor<8x6x6xf32>
}
