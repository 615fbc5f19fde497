// RUN: qidao-opt %s -p layout | filecheck %s
// RUN: qidao-opt %s -p layout,layout | filecheck %s

// After a global average pool at batch 1 a feature map is [1, C, 1, 1]: the shape
// of a per-channel bias. A chain's data inputs (a conv's input, an elementwise
// operand of the op's full result shape) still enter through a transpose and stay
// rank 4; only a broadcast operand (a shape other than the result's) becomes a [C]
// view. These graphs used to crash the pass: "tg.conv2d (NHWC) expects a rank-4 NHWC
// input and HWIO weight, got [16] and [1, 1, 16, 10]". The second RUN line checks
// idempotence.

// A 1x1 conv as the classifier after global pooling (DenseNet's head). The pool
// (a reduction over the spatial axes, keepdims) is layout-agnostic: it joins the
// chain and reduces the NHWC axes [1, 2] of the entering transpose.
// CHECK-LABEL: func.func @pooled_classifier
// CHECK:         %x_nhwc = tg.transpose %x perm = [0, 2, 3, 1] : tensor<1x16x4x4xf32> -> tensor<1x4x4x16xf32, strided<[256, 4, 1, 16]>>
// CHECK:         %p_nhwc = tg.reduce_mean %x_nhwc axes = [1, 2] keepdims : tensor<1x4x4x16xf32, strided<[256, 4, 1, 16]>> -> tensor<1x1x1x16xf32>
// CHECK-NOT:     tg.view
// CHECK:         %y_nhwc = tg.conv2d %p_nhwc, %w_hwio, %b strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x1x1x16xf32>, tensor<1x1x16x10xf32>, tensor<10xf32>) -> tensor<1x1x1x10xf32>
// CHECK-NEXT:    %y = tg.transpose %y_nhwc perm = [0, 3, 1, 2] : tensor<1x1x1x10xf32> -> tensor<1x10x1x1xf32>
func.func @pooled_classifier(%x: tensor<1x16x4x4xf32>, %w: tensor<10x16x1x1xf32>, %b: tensor<10xf32>) -> tensor<1x10x1x1xf32> {
  %p = tg.reduce_mean %x axes = [2, 3] keepdims : tensor<1x16x4x4xf32> -> tensor<1x16x1x1xf32>
  %y = tg.conv2d %p, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x1x1xf32>, tensor<10x16x1x1xf32>, tensor<10xf32>) -> tensor<1x10x1x1xf32>
  func.return %y : tensor<1x10x1x1xf32>
}

// A squeeze-and-excitation block (RegNet-Y, SE-ResNet): pool -> 1x1 conv -> relu ->
// 1x1 conv -> sigmoid -> mul with the feature map. The whole block is one chain:
// the pool (spatial axes, keepdims) is layout-agnostic, and its NHWC
// [1, 1, 1, 16] result feeds the excitation directly; no transposes inside.
// CHECK-LABEL: func.func @squeeze_excitation
// CHECK:         %f_nhwc = tg.conv2d %x_nhwc, %w_hwio {{.*}} layout = "NHWC"
// CHECK-NEXT:    %r_nhwc = tg.relu %f_nhwc : tensor<1x4x4x16xf32> -> tensor<1x4x4x16xf32>
// CHECK-NEXT:    %p_nhwc = tg.reduce_mean %r_nhwc axes = [1, 2] keepdims : tensor<1x4x4x16xf32> -> tensor<1x1x1x16xf32>
// CHECK-NEXT:    %s_nhwc = tg.conv2d %p_nhwc, %w1_hwio, %b1 {{.*}} layout = "NHWC" : (tensor<1x1x1x16xf32>, tensor<1x1x16x4xf32>, tensor<4xf32>) -> tensor<1x1x1x4xf32>
// CHECK-NEXT:    %sr_nhwc = tg.relu %s_nhwc : tensor<1x1x1x4xf32> -> tensor<1x1x1x4xf32>
// CHECK-NEXT:    %e_nhwc = tg.conv2d %sr_nhwc, %w2_hwio, %b2 {{.*}} layout = "NHWC" : (tensor<1x1x1x4xf32>, tensor<1x1x4x16xf32>, tensor<16xf32>) -> tensor<1x1x1x16xf32>
// CHECK-NEXT:    %g_nhwc = tg.sigmoid %e_nhwc : tensor<1x1x1x16xf32> -> tensor<1x1x1x16xf32>
// CHECK-NEXT:    %m_nhwc = tg.mul %r_nhwc, %g_nhwc : (tensor<1x4x4x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x4x4x16xf32>
// CHECK-NEXT:    %m = tg.transpose %m_nhwc perm = [0, 3, 1, 2]
func.func @squeeze_excitation(%x: tensor<1x16x4x4xf32>, %w: tensor<16x16x1x1xf32>, %w1: tensor<4x16x1x1xf32>, %b1: tensor<4xf32>, %w2: tensor<16x4x1x1xf32>, %b2: tensor<16xf32>) -> tensor<1x16x4x4xf32> {
  %f = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %r = tg.relu %f : tensor<1x16x4x4xf32> -> tensor<1x16x4x4xf32>
  %p = tg.reduce_mean %r axes = [2, 3] keepdims : tensor<1x16x4x4xf32> -> tensor<1x16x1x1xf32>
  %s = tg.conv2d %p, %w1, %b1 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x1x1xf32>, tensor<4x16x1x1xf32>, tensor<4xf32>) -> tensor<1x4x1x1xf32>
  %sr = tg.relu %s : tensor<1x4x1x1xf32> -> tensor<1x4x1x1xf32>
  %e = tg.conv2d %sr, %w2, %b2 strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x4x1x1xf32>, tensor<16x4x1x1xf32>, tensor<16xf32>) -> tensor<1x16x1x1xf32>
  %g = tg.sigmoid %e : tensor<1x16x1x1xf32> -> tensor<1x16x1x1xf32>
  %m = tg.mul %r, %g : (tensor<1x16x4x4xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %m : tensor<1x16x4x4xf32>
}

// The roles are told apart per use: %s is a broadcast operand of the mul (a [16]
// view) and the data input of the second conv (a transpose); %a + %b, both of the
// add's full shape, enter as rank-4 NHWC and the add stays rank 4.
// CHECK-LABEL: func.func @roles
// CHECK-DAG:     %s_c = tg.view %s : tensor<1x16x1x1xf32> -> tensor<16xf32>
// CHECK-DAG:     %s_nhwc = tg.transpose %s perm = [0, 2, 3, 1] : tensor<1x16x1x1xf32> -> tensor<1x1x1x16xf32>
// CHECK-DAG:     %a_nhwc = tg.transpose %a perm = [0, 2, 3, 1] : tensor<1x16x1x1xf32> -> tensor<1x1x1x16xf32>
// CHECK-DAG:     %b_nhwc = tg.transpose %b perm = [0, 2, 3, 1] : tensor<1x16x1x1xf32> -> tensor<1x1x1x16xf32>
// CHECK:         %m_nhwc = tg.mul %c_nhwc, %s_c : (tensor<1x4x4x16xf32>, tensor<16xf32>) -> tensor<1x4x4x16xf32>
// CHECK:         %d_nhwc = tg.conv2d %s_nhwc, %w_hwio {{.*}} -> tensor<1x1x1x16xf32>
// CHECK:         %ab_nhwc = tg.add %a_nhwc, %b_nhwc : (tensor<1x1x1x16xf32>, tensor<1x1x1x16xf32>) -> tensor<1x1x1x16xf32>
// CHECK-NEXT:    %k_nhwc = tg.conv2d %ab_nhwc, %w_hwio {{.*}} -> tensor<1x1x1x16xf32>
func.func @roles(%x: tensor<1x16x4x4xf32>, %s: tensor<1x16x1x1xf32>, %a: tensor<1x16x1x1xf32>, %b: tensor<1x16x1x1xf32>, %w: tensor<16x16x1x1xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x1x1xf32>, tensor<1x16x1x1xf32>) {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %m = tg.mul %c, %s : (tensor<1x16x4x4xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %d = tg.conv2d %s, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x1x1xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x1x1xf32>
  %ab = tg.add %a, %b : (tensor<1x16x1x1xf32>, tensor<1x16x1x1xf32>) -> tensor<1x16x1x1xf32>
  %k = tg.conv2d %ab, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x1x1xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x1x1xf32>
  func.return %m, %d, %k : tensor<1x16x4x4xf32>, tensor<1x16x1x1xf32>, tensor<1x16x1x1xf32>
}

// Must not fire: a narrow head (F = 2 < 4) on pooled features stays NCHW, and the
// pooled tensor is left as it is.
// CHECK-LABEL: func.func @pooled_narrow_head
// CHECK-NOT:     tg.transpose
// CHECK-NOT:     tg.view
// CHECK-NOT:     layout
// CHECK:         %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x1x1xf32>, tensor<2x16x1x1xf32>) -> tensor<1x2x1x1xf32>
// CHECK-NEXT:    func.return %y
func.func @pooled_narrow_head(%x: tensor<1x16x4x4xf32>, %w: tensor<2x16x1x1xf32>) -> tensor<1x2x1x1xf32> {
  %p = tg.reduce_mean %x axes = [2, 3] keepdims : tensor<1x16x4x4xf32> -> tensor<1x16x1x1xf32>
  %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x16x1x1xf32>, tensor<2x16x1x1xf32>) -> tensor<1x2x1x1xf32>
  func.return %y : tensor<1x2x1x1xf32>
}
