// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of every tg op. xDSL prints each diagnostic on a line
// of its own, then the module with the failing op underlined; we CHECK the line.

// === tensor types: what every tg operand and result must be ===

// CHECK: tg.relu operand #0 spells out the row-major layout strided<[3, 1]>; write tensor<2x3xf32>
func.func @row_major_spelled_out(%x: tensor<2x3xf32, strided<[3, 1]>>) {
  %r = tg.relu %x : tensor<2x3xf32, strided<[3, 1]>> -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.transpose result #0 spells out the row-major layout strided<[3, 1]>; write tensor<2x3xf32>
func.func @row_major_result_spelled_out(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %x = tg.transpose %t perm = [1, 0] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<2x3xf32, strided<[3, 1]>>
  func.return
}

// -----

// CHECK: tg.relu operand #0 has encoding "nchw"; tg tensors take only a strided<...> layout
func.func @not_strided_encoding(%x: tensor<4xf32, "nchw">) {
  %r = tg.relu %x : tensor<4xf32, "nchw"> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.relu operand #0 layout strided<[1]> needs one static stride per dimension of tensor<2x3xf32, strided<[1]>>
func.func @strides_rank_mismatch(%x: tensor<2x3xf32, strided<[1]>>) {
  %r = tg.relu %x : tensor<2x3xf32, strided<[1]>> -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.relu operand #0 layout strided<[1, ?]> needs one static stride per dimension of tensor<2x3xf32, strided<[1, ?]>>
func.func @dynamic_stride(%x: tensor<2x3xf32, strided<[1, ?]>>) {
  %r = tg.relu %x : tensor<2x3xf32, strided<[1, ?]>> -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.relu operand #0 layout strided<[1, 2], offset: ?> needs a static offset
func.func @dynamic_offset(%x: tensor<2x3xf32, strided<[1, 2], offset: ?>>) {
  %r = tg.relu %x : tensor<2x3xf32, strided<[1, 2], offset: ?>> -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.relu operand #0 must have a static shape, got tensor<?xf32>
func.func @dynamic_shape(%x: tensor<?xf32>) {
  %r = tg.relu %x : tensor<?xf32> -> tensor<?xf32>
  func.return
}

// -----

// CHECK: tg.relu operand #0 has element type f80, which qidao does not support (supported: f32, f64, f16, i8, i16, i32, i64, ui8, ui16, ui32, ui64, i1, bf16, f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f4E2M1FN, i4, ui4, i2, ui2)
func.func @unsupported_dtype(%x: tensor<4xf80>) {
  %r = tg.relu %x : tensor<4xf80> -> tensor<4xf80>
  func.return
}

// -----

// === elementwise ===

// CHECK: tg.add: operand shapes [2, 3] and [4] are not broadcastable (NumPy rules: trailing dimensions must be equal or 1)
func.func @add_not_broadcastable(%x: tensor<2x3xf32>, %y: tensor<4xf32>) {
  %r = tg.add %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.mul on (tensor<4x1xf32>, tensor<3xf32>) must produce tensor<4x3xf32>, but its result type is tensor<4x1xf32>
func.func @mul_wrong_result(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  %r = tg.mul %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

// CHECK: tg.sub expects operands of one element type, got (tensor<4xf32>, tensor<4xf64>)
func.func @sub_mixed_dtypes(%x: tensor<4xf32>, %y: tensor<4xf64>) {
  %r = tg.sub %x, %y : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.max expects float or integer tensors, but operand #0 is tensor<4xi1>
func.func @max_of_bools(%x: tensor<4xi1>, %y: tensor<4xi1>) {
  %r = tg.max %x, %y : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.exp expects float tensors, but operand #0 is tensor<4xi64>
func.func @exp_of_ints(%x: tensor<4xi64>) {
  %r = tg.exp %x : tensor<4xi64> -> tensor<4xi64>
  func.return
}

// -----

// An elementwise result is a fresh row-major tensor, never a view.
// CHECK: tg.relu on (tensor<3x2xf32, strided<[1, 3]>>) must produce tensor<3x2xf32>, but its result type is tensor<3x2xf32, strided<[1, 3]>>
func.func @relu_strided_result(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %r = tg.relu %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32, strided<[1, 3]>>
  func.return
}

// -----

// === tg.constant ===

// CHECK: tg.constant: value has type tensor<2xf32> but the result is tensor<3xf32>; they must be equal
func.func @constant_type_mismatch() {
  %c = "tg.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

// === tg.matmul ===

// CHECK: tg.matmul expects operands of rank >= 2, got [16] and [16, 4] (reshape a vector to a 1xK or Kx1 matrix first)
func.func @matmul_vector(%x: tensor<16xf32>, %w: tensor<16x4xf32>) {
  %y = tg.matmul %x, %w : (tensor<16xf32>, tensor<16x4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.matmul: rhs_layout must be "panels" or omitted (K x N, the default), got "vnni"
func.func @matmul_layout(%x: tensor<8x16xf32>, %w: tensor<2x16x32xf32>) {
  %y = tg.matmul %x, %w rhs_layout = "vnni" : (tensor<8x16xf32>, tensor<2x16x32xf32>) -> tensor<8x64xf32>
  func.return
}

// -----

// CHECK: tg.matmul with rhs_layout = "panels" takes a rhs [..., ceil(N / 32), K, 32] (column panels), got [16, 64]
func.func @matmul_panels_rank(%x: tensor<8x16xf32>, %w: tensor<16x64xf32>) {
  %y = tg.matmul %x, %w rhs_layout = "panels" : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  func.return
}

// -----

// CHECK: tg.matmul with rhs_layout = "panels" takes a rhs [..., ceil(N / 32), K, 32] (column panels), got [2, 16, 16]
func.func @matmul_panels_width(%x: tensor<8x16xf32>, %w: tensor<2x16x16xf32>) {
  %y = tg.matmul %x, %w rhs_layout = "panels" : (tensor<8x16xf32>, tensor<2x16x16xf32>) -> tensor<8x32xf32>
  func.return
}

// -----

// CHECK: tg.matmul: contraction sizes differ: lhs [8, 16] has K = 16 but rhs [8, 64] has K = 8
func.func @matmul_panels_k(%x: tensor<8x16xf32>, %w: tensor<2x8x32xf32>) {
  %y = tg.matmul %x, %w rhs_layout = "panels" : (tensor<8x16xf32>, tensor<2x8x32xf32>) -> tensor<8x64xf32>
  func.return
}

// -----

// CHECK: tg.matmul: 2 panels of 32 columns hold N from 33 to 64, but the result has N = 30
func.func @matmul_panels_n(%x: tensor<8x16xf32>, %w: tensor<2x16x32xf32>) {
  %y = tg.matmul %x, %w rhs_layout = "panels" : (tensor<8x16xf32>, tensor<2x16x32xf32>) -> tensor<8x30xf32>
  func.return
}

// -----

// CHECK: tg.matmul: contraction sizes differ: lhs [8, 16] has K = 16 but rhs [8, 4] has K = 8
func.func @matmul_k_mismatch(%x: tensor<8x16xf32>, %w: tensor<8x4xf32>) {
  %y = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

// CHECK: tg.matmul: batch dimensions [2] and [3] are not broadcastable
func.func @matmul_batch_mismatch(%x: tensor<2x8x16xf32>, %w: tensor<3x16x4xf32>) {
  %y = tg.matmul %x, %w : (tensor<2x8x16xf32>, tensor<3x16x4xf32>) -> tensor<2x8x4xf32>
  func.return
}

// -----

// CHECK: tg.matmul on (tensor<8x16xf32>, tensor<16x4xf32>) must produce tensor<8x4xf32>, but its result type is tensor<4x8xf32>
func.func @matmul_wrong_result(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) {
  %y = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

// CHECK: tg.matmul expects operands of one element type, got (tensor<8x16xf32>, tensor<16x4xf64>)
func.func @matmul_mixed_dtypes(%x: tensor<8x16xf32>, %w: tensor<16x4xf64>) {
  %y = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf64>) -> tensor<8x4xf32>
  func.return
}

// -----

// === tg.transpose ===

// CHECK: tg.transpose: perm [0, 0] is not a permutation of the 2 dimensions of tensor<2x3xf32>
func.func @transpose_repeated(%x: tensor<2x3xf32>) {
  %t = tg.transpose %x perm = [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// CHECK: tg.transpose: perm [1, 0, 2] is not a permutation of the 2 dimensions of tensor<2x3xf32>
func.func @transpose_wrong_length(%x: tensor<2x3xf32>) {
  %t = tg.transpose %x perm = [1, 0, 2] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  func.return
}

// -----

// A transpose is a view: its result carries the permuted strides.
// CHECK: tg.transpose on (tensor<2x3xf32>) must produce tensor<3x2xf32, strided<[1, 3]>>, but its result type is tensor<3x2xf32>
func.func @transpose_declared_row_major(%x: tensor<2x3xf32>) {
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  func.return
}

// -----

// === tg.view ===

// Flattening a transposed tensor needs a copy: PyTorch's view error, at compile time.
// CHECK: tg.view: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use tg.reshape instead. The input tensor<3x2xf32, strided<[1, 3]>> has shape [3, 2] and strides [1, 3]; the view asks for shape [6].
func.func @view_of_transpose(%x: tensor<2x3xf32>) {
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %v = tg.view %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<6xf32>
  func.return
}

// -----

// CHECK: tg.view: shape '[5]' is invalid for input of size 6 (input tensor<2x3xf32>)
func.func @view_numel_mismatch(%x: tensor<2x3xf32>) {
  %v = tg.view %x : tensor<2x3xf32> -> tensor<5xf32>
  func.return
}

// -----

// CHECK: tg.view on (tensor<2x3xf32, strided<[3, 1], offset: 4>>) must produce tensor<6xf32, strided<[1], offset: 4>>, but its result type is tensor<6xf32>
func.func @view_drops_offset(%x: tensor<2x3xf32, strided<[3, 1], offset: 4>>) {
  %v = tg.view %x : tensor<2x3xf32, strided<[3, 1], offset: 4>> -> tensor<6xf32>
  func.return
}

// -----

// === tg.reshape ===

// CHECK: tg.reshape: shape '[4, 2]' is invalid for input of size 6 (input tensor<2x3xf32>)
func.func @reshape_numel_mismatch(%x: tensor<2x3xf32>) {
  %r = tg.reshape %x : tensor<2x3xf32> -> tensor<4x2xf32>
  func.return
}

// -----

// No view flattens a transpose, so the reshape copies into a row-major result.
// CHECK: tg.reshape on (tensor<3x2xf32, strided<[1, 3]>>) must produce tensor<6xf32>, but its result type is tensor<6xf32, strided<[2]>>
func.func @reshape_declared_view(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %r = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<6xf32, strided<[2]>>
  func.return
}

// -----

// A view exists here, so the reshape is one and its type carries the strides.
// CHECK: tg.reshape on (tensor<3x2xf32, strided<[1, 3]>>) must produce tensor<3x2x1xf32, strided<[1, 3, 3]>>, but its result type is tensor<3x2x1xf32>
func.func @reshape_declared_copy(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %r = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2x1xf32>
  func.return
}

// -----

// === tg.contiguous ===

// CHECK: tg.contiguous keeps the shape [3, 2], but the result shape is [6]
func.func @contiguous_reshapes(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %c = tg.contiguous %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<6xf32>
  func.return
}

// -----

// CHECK: tg.contiguous on (tensor<3x2xf32, strided<[1, 3]>>) must produce tensor<3x2xf32>, but its result type is tensor<3x2xf32, strided<[1, 3]>>
func.func @contiguous_strided_result(%t: tensor<3x2xf32, strided<[1, 3]>>) {
  %c = tg.contiguous %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32, strided<[1, 3]>>
  func.return
}

// -----

// === tg.broadcast ===

// CHECK: tg.broadcast: shape [3] cannot be broadcast to [4, 2] (NumPy rules: trailing dimensions must be equal or 1 in the input)
func.func @broadcast_incompatible(%v: tensor<3xf32>) {
  %b = tg.broadcast %v : tensor<3xf32> -> tensor<4x2xf32, strided<[0, 1]>>
  func.return
}

// -----

// CHECK: tg.broadcast: shape [2, 3] cannot be broadcast to [3] (NumPy rules: trailing dimensions must be equal or 1 in the input)
func.func @broadcast_to_lower_rank(%x: tensor<2x3xf32>) {
  %b = tg.broadcast %x : tensor<2x3xf32> -> tensor<3xf32>
  func.return
}

// -----

// CHECK: tg.broadcast: shape [4, 1] cannot be broadcast to [4, 1, 3] (NumPy rules: trailing dimensions must be equal or 1 in the input)
func.func @broadcast_aligns_trailing(%c: tensor<4x1xf32>) {
  %b = tg.broadcast %c : tensor<4x1xf32> -> tensor<4x1x3xf32, strided<[1, 1, 0]>>
  func.return
}

// -----

// A broadcast is a view: the repeated dimension has stride 0.
// CHECK: tg.broadcast on (tensor<3xf32>) must produce tensor<4x3xf32, strided<[0, 1]>>, but its result type is tensor<4x3xf32>
func.func @broadcast_declared_copy(%v: tensor<3xf32>) {
  %b = tg.broadcast %v : tensor<3xf32> -> tensor<4x3xf32>
  func.return
}

// -----

// === reductions ===

// CHECK: tg.reduce_sum: axes [1, 1] must be a non-empty list of distinct dimensions of tensor<4x8xf32>
func.func @reduce_repeated_axis(%x: tensor<4x8xf32>) {
  %s = tg.reduce_sum %x axes = [1, 1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.reduce_mean: axes [1, -1] must be a non-empty list of distinct dimensions of tensor<4x8xf32>
func.func @reduce_same_axis_twice(%x: tensor<4x8xf32>) {
  %s = tg.reduce_mean %x axes = [1, -1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.reduce_max: axis 2 is out of range for a tensor of rank 2
func.func @reduce_axis_out_of_range(%x: tensor<4x8xf32>) {
  %s = tg.reduce_max %x axes = [2] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.reduce_sum: axis -3 is out of range for a tensor of rank 2
func.func @reduce_negative_axis_out_of_range(%x: tensor<4x8xf32>) {
  %s = tg.reduce_sum %x axes = [-3] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.reduce_sum: axes [] must be a non-empty list of distinct dimensions of tensor<4x8xf32>
func.func @reduce_no_axes(%x: tensor<4x8xf32>) {
  %s = tg.reduce_sum %x axes = [] : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return
}

// -----

// CHECK: tg.reduce_sum on (tensor<4x8xf32>) must produce tensor<4x1xf32>, but its result type is tensor<4xf32>
func.func @reduce_keepdims_result(%x: tensor<4x8xf32>) {
  %s = tg.reduce_sum %x axes = [1] keepdims : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// === tg.softmax ===

// CHECK: tg.softmax: axis 2 is out of range for a tensor of rank 2
func.func @softmax_axis_out_of_range(%x: tensor<4x10xf32>) {
  %p = tg.softmax %x axis = 2 : tensor<4x10xf32> -> tensor<4x10xf32>
  func.return
}

// -----

// CHECK: tg.softmax expects a tensor of rank >= 1, got tensor<f32>
func.func @softmax_of_scalar(%x: tensor<f32>) {
  %p = tg.softmax %x axis = 0 : tensor<f32> -> tensor<f32>
  func.return
}

// -----

// === tg.conv2d ===

// CHECK: tg.conv2d: groups = 2 must divide the input channels (3) and the output channels (4)
func.func @conv_bad_groups(%x: tensor<1x3x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 2 : (tensor<1x3x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: tg.conv2d: weight [4, 2, 3, 3] has 2 input channels per group, expected C / groups = 3 / 1 = 3
func.func @conv_channel_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: tg.conv2d: bias must have shape [4] (one per output channel), got [3]
func.func @conv_bias_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  %y = tg.conv2d %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: tg.conv2d: the 5x5 kernel (dilation [1, 1]) does not fit the 4x4 input with padding [0, 0, 0, 0]
func.func @conv_kernel_too_big(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x5x5xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x3x4x4xf32>, tensor<4x3x5x5xf32>) -> tensor<1x4x1x1xf32>
  func.return
}

// -----

// CHECK: tg.conv2d expects a rank-4 NCHW input and FCHW weight, got [3, 8, 8] and [4, 3, 3, 3]
func.func @conv_unbatched(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<4x6x6xf32>
  func.return
}

// -----

// CHECK: tg.conv2d: strides and dilation must be >= 1 and padding >= 0, got strides [0, 1], dilation [1, 1], padding [0, 0, 0, 0]
func.func @conv_zero_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = tg.conv2d %x, %w strides = [0, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: tg.conv2d: padding [top, left, bottom, right] must have 4 values, got [1, 1]
func.func @conv_padding_length(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1] dilation = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

// CHECK: tg.conv2d on (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) must produce tensor<1x4x6x6xf32>, but its result type is tensor<1x4x8x8xf32>
func.func @conv_wrong_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

// === pooling ===

// CHECK: tg.max_pool2d: padding [2, 2, 2, 2] must be smaller than the window [2, 2] (kernel [2, 2], dilation [1, 1])
func.func @max_pool_padding_too_big(%x: tensor<1x4x8x8xf32>) {
  %p = tg.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [2, 2, 2, 2] dilation = [1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: tg.avg_pool2d: padding [0, 3, 0, 0] must be smaller than the window [3, 3] (kernel [3, 3], dilation [1, 1])
func.func @avg_pool_padding_too_big(%x: tensor<1x4x8x8xf32>) {
  %p = tg.avg_pool2d %x kernel = [3, 3] strides = [1, 1] padding = [0, 3, 0, 0] : tensor<1x4x8x8xf32> -> tensor<1x4x6x9xf32>
  func.return
}

// -----

// CHECK: tg.avg_pool2d: padding [3, 0, 0, 0] must be smaller than the window [3, 3] (kernel [2, 2], dilation [2, 2])
func.func @avg_pool_dilated_padding_too_big(%x: tensor<1x4x8x8xf32>) {
  %p = tg.avg_pool2d %x kernel = [2, 2] strides = [1, 1] padding = [3, 0, 0, 0] dilation = [2, 2] : tensor<1x4x8x8xf32> -> tensor<1x4x9x6xf32>
  func.return
}

// -----

// CHECK: tg.avg_pool2d: dilation must have 2 values, got [2]
func.func @avg_pool_dilation_length(%x: tensor<1x4x8x8xf32>) {
  %p = tg.avg_pool2d %x kernel = [2, 2] strides = [1, 1] padding = [0, 0, 0, 0] dilation = [2] : tensor<1x4x8x8xf32> -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: tg.avg_pool2d: kernel, strides and dilation must be >= 1 and padding >= 0, got kernel [2, 2], strides [1, 1], dilation [0, 1], padding [0, 0, 0, 0]
func.func @avg_pool_dilation_zero(%x: tensor<1x4x8x8xf32>) {
  %p = tg.avg_pool2d %x kernel = [2, 2] strides = [1, 1] padding = [0, 0, 0, 0] dilation = [0, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x7x7xf32>
  func.return
}

// -----

// CHECK: tg.max_pool2d: the window [3, 3] (dilation [2, 2]) does not fit the 4x4 input with padding [0, 0, 0, 0]
func.func @max_pool_window_too_big(%x: tensor<1x4x4x4xf32>) {
  %p = tg.max_pool2d %x kernel = [3, 3] strides = [1, 1] padding = [0, 0, 0, 0] dilation = [2, 2] : tensor<1x4x4x4xf32> -> tensor<1x4x1x1xf32>
  func.return
}

// -----

// CHECK: tg.avg_pool2d expects a rank-4 NCHW input, got tensor<4x8x8xf32>
func.func @avg_pool_unbatched(%x: tensor<4x8x8xf32>) {
  %p = tg.avg_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : tensor<4x8x8xf32> -> tensor<4x4x4xf32>
  func.return
}

// -----

// CHECK: tg.avg_pool2d on (tensor<1x4x8x8xf32>) must produce tensor<1x4x4x4xf32>, but its result type is tensor<1x4x8x8xf32>
func.func @avg_pool_wrong_result(%x: tensor<1x4x8x8xf32>) {
  %p = tg.avg_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] count_include_pad : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  func.return
}

// -----

// === tg.batch_norm ===

// CHECK: tg.batch_norm: mean must have shape [4] (one per channel of tensor<1x4x8x8xf32>), got [8]
func.func @batch_norm_param_shape(%x: tensor<1x4x8x8xf32>, %p: tensor<4xf32>, %m: tensor<8xf32>) {
  %y = tg.batch_norm %x, %p, %p, %m, %p epsilon = 1.000000e-05 : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32> -> tensor<1x4x8x8xf32>
  func.return
}

// -----

// CHECK: tg.batch_norm expects an input of rank >= 2 (N, C, ...), got tensor<4xf32>
func.func @batch_norm_rank_1(%x: tensor<4xf32>, %p: tensor<4xf32>) {
  %y = tg.batch_norm %x, %p, %p, %p, %p epsilon = 1.000000e-05 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// === tg.fused and tg.yield ===

// CHECK: tg.fused: body arguments (tensor<4xf32>) must match the inputs (tensor<8xf32>)
func.func @fused_arg_mismatch(%x: tensor<8xf32>) {
  %y = tg.fused %x : (tensor<8xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %r = tg.relu %a : tensor<4xf32> -> tensor<4xf32>
    tg.yield %r : tensor<4xf32>
  }
  func.return
}

// -----

// CHECK: tg.fused: tg.yield returns (tensor<8xf32>) but the op's results are (tensor<4xf32>)
func.func @fused_yield_mismatch(%x: tensor<8xf32>) {
  %y = tg.fused %x : (tensor<8xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<8xf32>):
    %r = tg.relu %a : tensor<8xf32> -> tensor<8xf32>
    tg.yield %r : tensor<8xf32>
  }
  func.return
}

// -----

// CHECK: Operation tg.relu terminates block in single-block region but is not a terminator
func.func @fused_without_yield(%x: tensor<8xf32>) {
  %y = tg.fused %x : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf32>):
    %r = tg.relu %a : tensor<8xf32> -> tensor<8xf32>
  }
  func.return
}

// -----

// CHECK: 'tg.yield' expects parent op 'tg.fused'
func.func @yield_outside_fused(%x: tensor<8xf32>) {
  tg.yield %x : tensor<8xf32>
}

// -----

// === layout (NHWC) ===

// CHECK: tg.conv2d: layout must be "NHWC" or omitted (NCHW, the default), got "NCHW"
func.func @conv_layout_spelled_default(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NCHW" : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// CHECK: tg.max_pool2d: layout must be "NHWC" or omitted (NCHW, the default), got "CHWN"
func.func @pool_layout_unknown(%x: tensor<1x8x8x4xf32>) {
  %p = tg.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] layout = "CHWN" : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
  func.return
}

// -----

// CHECK: tg.conv2d (NHWC): weight [3, 3, 2, 4] has 2 input channels per group, expected C / groups = 3 / 1 = 3
func.func @conv_nhwc_fchw_weight(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x2x4xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x3xf32>, tensor<3x3x2x4xf32>) -> tensor<1x8x8x4xf32>
  func.return
}

// -----

// CHECK: tg.conv2d (NHWC) expects a rank-4 NHWC input and HWIO weight, got [8, 8, 3] and [3, 3, 3, 4]
func.func @conv_nhwc_unbatched(%x: tensor<8x8x3xf32>, %w: tensor<3x3x3x4xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<8x8x4xf32>
  func.return
}

// -----

// CHECK: tg.conv2d (NHWC): bias must have shape [4] (one per output channel), got [3]
func.func @conv_nhwc_bias_shape(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x4xf32>, %b: tensor<3xf32>) {
  %y = tg.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>, tensor<3xf32>) -> tensor<1x8x8x4xf32>
  func.return
}

// -----

// The NCHW result shape is wrong for an NHWC conv: the channels go last.
// CHECK: tg.conv2d on (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) must produce tensor<1x8x8x4xf32>, but its result type is tensor<1x4x8x8xf32>
func.func @conv_nhwc_wrong_result(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x4xf32>) {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

// CHECK: tg.avg_pool2d (NHWC) expects a rank-4 NHWC input, got tensor<8x8x4xf32>
func.func @pool_nhwc_unbatched(%x: tensor<8x8x4xf32>) {
  %p = tg.avg_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] layout = "NHWC" : tensor<8x8x4xf32> -> tensor<4x4x4xf32>
  func.return
}

// -----

// CHECK: tg.max_pool2d on (tensor<1x8x8x4xf32>) must produce tensor<1x4x4x4xf32>, but its result type is tensor<1x4x4x8xf32>
func.func @pool_nhwc_wrong_result(%x: tensor<1x8x8x4xf32>) {
  %p = tg.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] layout = "NHWC" : tensor<1x8x8x4xf32> -> tensor<1x4x4x8xf32>
  func.return
}

// -----

// Channels last: the parameters have one value per entry of the last dimension.
// CHECK: tg.batch_norm (NHWC): mean must have shape [4] (one per channel of tensor<1x8x8x4xf32>), got [8]
func.func @batch_norm_nhwc_param_shape(%x: tensor<1x8x8x4xf32>, %p: tensor<4xf32>, %m: tensor<8xf32>) {
  %y = tg.batch_norm %x, %p, %p, %m, %p epsilon = 1.000000e-05 layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32> -> tensor<1x8x8x4xf32>
  func.return
}
