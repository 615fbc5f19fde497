// RUN: qidao-opt %s -p fold-constants | filecheck %s

// The docstring's example: an add of two constants becomes one constant.
// CHECK-LABEL: func.func @add_constants
// CHECK-NEXT:    %s = tg.constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = tg.mul %x, %s
// CHECK-NEXT:    func.return %y
func.func @add_constants(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = tg.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %s = tg.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %y = tg.mul %x, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// A chain through a strided view: a * a^T, then relu, is one constant.
// CHECK-LABEL: func.func @chain_through_a_view
// CHECK-NEXT:    %r = tg.constant dense<{{\[\[}}5.000000e+00, 1.100000e+01], [1.100000e+01, 2.500000e+01]]> : tensor<2x2xf32>
// CHECK-NEXT:    func.return %r
func.func @chain_through_a_view() -> tensor<2x2xf32> {
  %a = tg.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %t = tg.transpose %a perm = [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32, strided<[1, 2]>>
  %m = tg.matmul %a, %t : (tensor<2x2xf32>, tensor<2x2xf32, strided<[1, 2]>>) -> tensor<2x2xf32>
  %r = tg.relu %m : tensor<2x2xf32> -> tensor<2x2xf32>
  func.return %r : tensor<2x2xf32>
}

// A reshape and a contiguous copy of constants have row-major results: they fold.
// CHECK-LABEL: func.func @row_major_layout_ops
// CHECK-NEXT:    %r = tg.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %c = tg.constant dense<{{\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:    func.return %r, %c
func.func @row_major_layout_ops() -> (tensor<4xf32>, tensor<2x2xf32>) {
  %a = tg.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %r = tg.reshape %a : tensor<2x2xf32> -> tensor<4xf32>
  %t = tg.transpose %a perm = [1, 0] : tensor<2x2xf32> -> tensor<2x2xf32, strided<[1, 2]>>
  %c = tg.contiguous %t : tensor<2x2xf32, strided<[1, 2]>> -> tensor<2x2xf32>
  func.return %r, %c : tensor<4xf32>, tensor<2x2xf32>
}

// A fusion group whose inputs are all constant folds as a whole.
// CHECK-LABEL: func.func @fused_group
// CHECK-NEXT:    %y = tg.constant dense<[2.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    func.return %y
func.func @fused_group() -> tensor<2xf32> {
  %a = tg.constant dense<[1.0, -3.0]> : tensor<2xf32>
  %b = tg.constant dense<1.0> : tensor<2xf32>
  %y = tg.fused %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%aa: tensor<2xf32>, %ba: tensor<2xf32>):
    %s = tg.add %aa, %ba : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %r = tg.relu %s : tensor<2xf32> -> tensor<2xf32>
    tg.yield %r : tensor<2xf32>
  }
  func.return %y : tensor<2xf32>
}

// BN into conv: s = scale / sqrt(var + eps) = [0.5, 3], W' = W * s,
// b' = (b - mean) * s + bias = [0, 2]. The old conv and the BN are gone.
// CHECK-LABEL: func.func @batch_norm_into_conv
// CHECK-NEXT:    %y_weight = tg.constant dense<{{\[\[\[\[}}5.000000e-01]], {{\[\[}}5.000000e-01]]], {{\[\[\[}}3.000000e+00]], {{\[\[}}3.000000e+00]]]]> : tensor<2x2x1x1xf32>
// CHECK-NEXT:    %y_bias = tg.constant dense<[0.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = tg.conv2d %x, %y_weight, %y_bias strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1
// CHECK-NEXT:    func.return %y
func.func @batch_norm_into_conv(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = tg.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = tg.conv2d %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %c, %scale, %bias, %mean, %var epsilon = 0.0 : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// A conv without a bias gets one: b' = (0 - mean) * s + bias = [-0.5, -4].
// CHECK-LABEL: func.func @batch_norm_into_conv_without_bias
// CHECK:         %y_bias = tg.constant dense<[-5.000000e-01, -4.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = tg.conv2d %x, %y_weight, %y_bias
// CHECK-NOT:     tg.batch_norm
func.func @batch_norm_into_conv_without_bias(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = tg.constant dense<1.0> : tensor<2x2x1x1xf32>
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %c, %scale, %bias, %mean, %var epsilon = 0.0 : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// BN into a rank-2 matmul: W' = W * s[None, :], then + t with t = bias - mean * s.
// CHECK-LABEL: func.func @batch_norm_into_matmul
// CHECK-NEXT:    %y_weight = tg.constant dense<{{\[\[}}5.000000e-01, 3.000000e+00], [5.000000e-01, 3.000000e+00], [5.000000e-01, 3.000000e+00], [5.000000e-01, 3.000000e+00]]> : tensor<4x2xf32>
// CHECK-NEXT:    %m = tg.matmul %x, %y_weight
// CHECK-NEXT:    %y_shift = tg.constant dense<[-5.000000e-01, -4.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = tg.add %m, %y_shift : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    func.return %y
func.func @batch_norm_into_matmul(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  %w = tg.constant dense<1.0> : tensor<4x2xf32>
  %m = tg.matmul %x, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %m, %scale, %bias, %mean, %var epsilon = 0.0 : tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// A lone BN with constant parameters: x * s + t, s and t shaped [C, 1, 1].
// CHECK-LABEL: func.func @lone_batch_norm
// CHECK-NEXT:    %y_scale = tg.constant dense<{{\[\[\[}}5.000000e-01]], {{\[\[}}3.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %y_scaled = tg.mul %x, %y_scale : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %y_shift = tg.constant dense<{{\[\[\[}}-5.000000e-01]], {{\[\[}}-4.000000e+00]]]> : tensor<2x1x1xf32>
// CHECK-NEXT:    %y = tg.add %y_scaled, %y_shift : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    func.return %y
func.func @lone_batch_norm(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %x, %scale, %bias, %mean, %var epsilon = 0.0 : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// Must not fire: %x is not constant, so the add stays.
// CHECK-LABEL: func.func @non_constant_operand
// CHECK-NEXT:    %c = tg.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = tg.add %x, %c
// CHECK-NEXT:    func.return %y
func.func @non_constant_operand(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = tg.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// Must not fire: a strided view of a constant is free; folding it would change its
// type (constants are row-major), so it stays a view.
// CHECK-LABEL: func.func @strided_view_stays
// CHECK-NEXT:    %a = tg.constant
// CHECK-NEXT:    %t = tg.transpose %a perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
// CHECK-NEXT:    %y = tg.add %x, %t
func.func @strided_view_stays(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %a = tg.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = tg.transpose %a perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %y = tg.add %x, %t : (tensor<3x2xf32>, tensor<3x2xf32, strided<[1, 3]>>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// Must not fire: the conv's result is used twice, so its weights stay; the BN
// still becomes x * s + t.
// CHECK-LABEL: func.func @conv_used_twice
// CHECK:         %c = tg.conv2d %x, %w, %b
// CHECK-NOT:     tg.batch_norm
// CHECK:         %y_scaled = tg.mul %c, %y_scale
// CHECK:         %y = tg.add %y_scaled, %y_shift
// CHECK-NEXT:    func.return %y, %c
func.func @conv_used_twice(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = tg.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = tg.conv2d %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %c, %scale, %bias, %mean, %var epsilon = 0.0 : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y, %c : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// Must not fire: the conv's weight is an input, not a constant; the BN becomes
// x * s + t after the untouched conv.
// CHECK-LABEL: func.func @conv_weight_not_constant
// CHECK:         %c = tg.conv2d %x, %w strides
// CHECK-NEXT:    %y_scale = tg.constant
// CHECK-NEXT:    %y_scaled = tg.mul %c, %y_scale
func.func @conv_weight_not_constant(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %c, %scale, %bias, %mean, %var epsilon = 0.0 : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// Must not fire: %mean is an input, so the BN parameters are not constant.
// CHECK-LABEL: func.func @batch_norm_params_not_constant
// CHECK:         %c = tg.conv2d %x, %w, %b
// CHECK:         %y = tg.batch_norm %c, %scale, %bias, %mean, %var
// CHECK-NOT:     tg.mul
func.func @batch_norm_params_not_constant(%x: tensor<1x2x4x4xf32>, %mean: tensor<2xf32>) -> tensor<1x2x4x4xf32> {
  %w = tg.constant dense<1.0> : tensor<2x2x1x1xf32>
  %b = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = tg.conv2d %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %c, %scale, %bias, %mean, %var epsilon = 0.0 : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// Must not fire: a batched (rank-3) matmul is not folded into; the BN becomes
// x * s + t with s, t shaped [C, 1].
// CHECK-LABEL: func.func @batched_matmul
// CHECK:         %m = tg.matmul %x, %w
// CHECK-NEXT:    %y_scale = tg.constant {{.*}} : tensor<2x1xf32>
// CHECK-NEXT:    %y_scaled = tg.mul %m, %y_scale
func.func @batched_matmul(%x: tensor<3x2x4xf32>) -> tensor<3x2x5xf32> {
  %w = tg.constant dense<1.0> : tensor<4x5xf32>
  %m = tg.matmul %x, %w : (tensor<3x2x4xf32>, tensor<4x5xf32>) -> tensor<3x2x5xf32>
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %m, %scale, %bias, %mean, %var epsilon = 0.0 : tensor<3x2x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<3x2x5xf32>
  func.return %y : tensor<3x2x5xf32>
}

// Must not fire: 4096 x 1025 = 4,198,400 elements is over the 2^22 limit.
// CHECK-LABEL: func.func @huge_result
// CHECK-NEXT:    %a = tg.constant dense<1.000000e+00> : tensor<4096x1025xf32>
// CHECK-NEXT:    %b = tg.constant dense<2.000000e+00> : tensor<1xf32>
// CHECK-NEXT:    %y = tg.add %a, %b
func.func @huge_result() -> tensor<4096x1025xf32> {
  %a = tg.constant dense<1.0> : tensor<4096x1025xf32>
  %b = tg.constant dense<2.0> : tensor<1xf32>
  %y = tg.add %a, %b : (tensor<4096x1025xf32>, tensor<1xf32>) -> tensor<4096x1025xf32>
  func.return %y : tensor<4096x1025xf32>
}

// Must not fire: 2048 x 2048 outputs of 1024 multiply-adds each is 2^32 > 2^30
// multiply-adds, though every tensor is under 2^22 elements.
// CHECK-LABEL: func.func @expensive_matmul
// CHECK:         %y = tg.matmul %a, %b
func.func @expensive_matmul() -> tensor<2048x2048xf32> {
  %a = tg.constant dense<1.0> : tensor<2048x1024xf32>
  %b = tg.constant dense<1.0> : tensor<1024x2048xf32>
  %y = tg.matmul %a, %b : (tensor<2048x1024xf32>, tensor<1024x2048xf32>) -> tensor<2048x2048xf32>
  func.return %y : tensor<2048x2048xf32>
}

// Channels last: an NHWC conv's HWIO weight is scaled along its last axis (F), and
// the new conv keeps layout = "NHWC".
// CHECK-LABEL: func.func @batch_norm_into_conv_nhwc
// CHECK-NEXT:    %y_weight = tg.constant dense<{{\[\[\[\[}}5.000000e-01, 3.000000e+00], [5.000000e-01, 3.000000e+00]]]]> : tensor<1x1x2x2xf32>
// CHECK-NEXT:    %y_bias = tg.constant dense<[0.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = tg.conv2d %x, %y_weight, %y_bias {{.*}} layout = "NHWC"
// CHECK-NEXT:    func.return %y
func.func @batch_norm_into_conv_nhwc(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %w = tg.constant dense<1.0> : tensor<1x1x2x2xf32>
  %b = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = tg.conv2d %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %c, %scale, %bias, %mean, %var epsilon = 0.0 layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x4x4x2xf32>
  func.return %y : tensor<1x4x4x2xf32>
}

// A lone NHWC batch norm: s and t are [C], broadcasting over the last dimension.
// CHECK-LABEL: func.func @lone_batch_norm_nhwc
// CHECK-NEXT:    %y_scale = tg.constant dense<[5.000000e-01, 3.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y_scaled = tg.mul %x, %y_scale : (tensor<1x4x4x2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
// CHECK-NEXT:    %y_shift = tg.constant dense<[-5.000000e-01, -4.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = tg.add %y_scaled, %y_shift
func.func @lone_batch_norm_nhwc(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %x, %scale, %bias, %mean, %var epsilon = 0.0 layout = "NHWC" : tensor<1x4x4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x4x4x2xf32>
  func.return %y : tensor<1x4x4x2xf32>
}

// Must not fire into the conv: the conv is NHWC but the BN is NCHW, so the BN's
// channels (dimension 1) are not the conv's output channels; the BN becomes
// x * s + t on dimension 1.
// CHECK-LABEL: func.func @conv_nhwc_batch_norm_nchw
// CHECK:         %c = tg.conv2d %x, %w {{.*}} layout = "NHWC"
// CHECK-NEXT:    %y_scale = tg.constant {{.*}} : tensor<2x1x1xf32>
// CHECK-NEXT:    %y_scaled = tg.mul %c, %y_scale
func.func @conv_nhwc_batch_norm_nchw(%x: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = tg.constant dense<1.0> : tensor<1x1x2x2xf32>
  %c = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x2x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32>
  %scale = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %bias = tg.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %mean = tg.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = tg.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %y = tg.batch_norm %c, %scale, %bias, %mean, %var epsilon = 0.0 : tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}

// A matmul's constant right operand read through a transpose (ONNX Gemm with
// transB = 1) becomes a row-major constant W^T; the view and W are gone.
// CHECK-LABEL: func.func @matmul_weight_packed
// CHECK-NEXT:    %t = tg.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NEXT:    %y = tg.matmul %x, %t : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:    func.return %y
func.func @matmul_weight_packed(%x: tensor<1x3xf32>) -> tensor<1x2xf32> {
  %w = tg.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = tg.transpose %w perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %y = tg.matmul %x, %t : (tensor<1x3xf32>, tensor<3x2xf32, strided<[1, 3]>>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// W read by another op too (a tied embedding): the matmul gets its own packed copy,
// W and its other reader stay.
// CHECK-LABEL: func.func @matmul_weight_shared
// CHECK-NEXT:    %w = tg.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT:    %t = tg.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NEXT:    %y = tg.matmul %x, %t : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
// CHECK-NEXT:    %z = tg.add %e, %w
// CHECK-NEXT:    func.return %y, %z
func.func @matmul_weight_shared(%x: tensor<1x3xf32>, %e: tensor<2x3xf32>) -> (tensor<1x2xf32>, tensor<2x3xf32>) {
  %w = tg.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = tg.transpose %w perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %y = tg.matmul %x, %t : (tensor<1x3xf32>, tensor<3x2xf32, strided<[1, 3]>>) -> tensor<1x2xf32>
  %z = tg.add %e, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y, %z : tensor<1x2xf32>, tensor<2x3xf32>
}

// Must not fire: a transposed right operand that is not constant (q @ k^T), and a
// row-major constant one.
// CHECK-LABEL: func.func @matmul_weight_not_packed
// CHECK-NEXT:    %t = tg.transpose %k perm = [1, 0]
// CHECK-NEXT:    %y = tg.matmul %x, %t : (tensor<1x3xf32>, tensor<3x2xf32, strided<[1, 3]>>)
// CHECK-NEXT:    %w = tg.constant
// CHECK-NEXT:    %z = tg.matmul %x, %w : (tensor<1x3xf32>, tensor<3x2xf32>)
// CHECK-NEXT:    func.return %y, %z
func.func @matmul_weight_not_packed(%x: tensor<1x3xf32>, %k: tensor<2x3xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
  %t = tg.transpose %k perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %y = tg.matmul %x, %t : (tensor<1x3xf32>, tensor<3x2xf32, strided<[1, 3]>>) -> tensor<1x2xf32>
  %w = tg.constant dense<1.0> : tensor<3x2xf32>
  %z = tg.matmul %x, %w : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
  func.return %y, %z : tensor<1x2xf32>, tensor<1x2xf32>
}
