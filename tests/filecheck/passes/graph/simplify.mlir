// RUN: qidao-opt %s -p simplify | filecheck %s

// ---- x * 1, 1 * x ------------------------------------------------------------------

// The docstring's example.
// CHECK-LABEL: func.func @mul_by_one
// CHECK-NEXT:    func.return %x : tensor<4xf32>
func.func @mul_by_one(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = tg.constant dense<1.0> : tensor<4xf32>
  %y = tg.mul %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// A smaller splat that broadcasts into x's shape still leaves x's type.
// CHECK-LABEL: func.func @one_times_x_broadcast_one
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
func.func @one_times_x_broadcast_one(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %one = tg.constant dense<1.0> : tensor<1xf32>
  %y = tg.mul %one, %x : (tensor<1xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// Must not fire: the ones are bigger than x, so the product broadcasts x.
// CHECK-LABEL: func.func @mul_by_bigger_ones
// CHECK:         %y = tg.mul %x, %one : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @mul_by_bigger_ones(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %one = tg.constant dense<1.0> : tensor<2x3xf32>
  %y = tg.mul %x, %one : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// Must not fire: not a splat of 1.
// CHECK-LABEL: func.func @mul_by_not_one
// CHECK:         %y = tg.mul %x, %c
func.func @mul_by_not_one(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = tg.mul %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// Must not fire: x is a strided view, the product is row-major: different types.
// CHECK-LABEL: func.func @mul_strided_by_one
// CHECK:         %t = tg.transpose %x
// CHECK-NEXT:    %y = tg.mul %t, %one
func.func @mul_strided_by_one(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %one = tg.constant dense<1.0> : tensor<1xf32>
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %y = tg.mul %t, %one : (tensor<3x2xf32, strided<[1, 3]>>, tensor<1xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// ---- x + (-0.0), (-0.0) + x ----------------------------------------------------------

// CHECK-LABEL: func.func @add_negative_zero
// CHECK-NEXT:    func.return %x : tensor<4xf32>
func.func @add_negative_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = tg.constant dense<-0.0> : tensor<4xf32>
  %y = tg.add %x, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @negative_zero_plus_x
// CHECK-NEXT:    func.return %x : tensor<4xf32>
func.func @negative_zero_plus_x(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = tg.constant dense<-0.0> : tensor<1xf32>
  %y = tg.add %z, %x : (tensor<1xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Must not fire: x + 0.0 is +0.0 for x = -0.0, so it is not an identity.
// CHECK-LABEL: func.func @add_positive_zero
// CHECK:         %y = tg.add %x, %z
func.func @add_positive_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = tg.constant dense<0.0> : tensor<4xf32>
  %y = tg.add %x, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Must not fire: 0.0 + x, for the same reason.
// CHECK-LABEL: func.func @positive_zero_plus_x
// CHECK:         %y = tg.add %z, %x
func.func @positive_zero_plus_x(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = tg.constant dense<0.0> : tensor<4xf32>
  %y = tg.add %z, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Must not fire: adding zeros of a bigger shape broadcasts x.
// CHECK-LABEL: func.func @add_bigger_zeros
// CHECK:         %y = tg.add %x, %z : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @add_bigger_zeros(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %z = tg.constant dense<-0.0> : tensor<2x3xf32>
  %y = tg.add %x, %z : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// Must not fire: a mixed constant of -0.0 and 0.0 is not a splat.
// CHECK-LABEL: func.func @add_mixed_zeros
// CHECK:         %y = tg.add %x, %z
func.func @add_mixed_zeros(%x: tensor<2xf32>) -> tensor<2xf32> {
  %z = tg.constant dense<[-0.0, 0.0]> : tensor<2xf32>
  %y = tg.add %x, %z : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// ---- x - 0.0 -------------------------------------------------------------------------

// CHECK-LABEL: func.func @sub_zero
// CHECK-NEXT:    func.return %x : tensor<4xf32>
func.func @sub_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = tg.constant dense<0.0> : tensor<4xf32>
  %y = tg.sub %x, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Must not fire: x - (-0.0) is x + 0.0.
// CHECK-LABEL: func.func @sub_negative_zero
// CHECK:         %y = tg.sub %x, %z
func.func @sub_negative_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = tg.constant dense<-0.0> : tensor<4xf32>
  %y = tg.sub %x, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Must not fire: 0 - x is -x, not x.
// CHECK-LABEL: func.func @zero_minus_x
// CHECK:         %y = tg.sub %z, %x
func.func @zero_minus_x(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = tg.constant dense<0.0> : tensor<4xf32>
  %y = tg.sub %z, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// ---- x / 1 ---------------------------------------------------------------------------

// CHECK-LABEL: func.func @div_by_one
// CHECK-NEXT:    func.return %x : tensor<4xf32>
func.func @div_by_one(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = tg.constant dense<1.0> : tensor<4xf32>
  %y = tg.div %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Must not fire: 1 / x is a reciprocal.
// CHECK-LABEL: func.func @one_over_x
// CHECK:         %y = tg.div %one, %x
func.func @one_over_x(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = tg.constant dense<1.0> : tensor<4xf32>
  %y = tg.div %one, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// ---- transpose(transpose(x)) -----------------------------------------------------------

// CHECK-LABEL: func.func @transpose_twice_is_identity
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
func.func @transpose_twice_is_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %u = tg.transpose %t perm = [1, 0] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<2x3xf32>
  func.return %u : tensor<2x3xf32>
}

// p = [1, 2, 0], q = [1, 2, 0]: r[k] = p[q[k]] = [2, 0, 1], one transpose of x.
// CHECK-LABEL: func.func @transpose_twice_composes
// CHECK-NEXT:    %u = tg.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32, strided<[1, 12, 4]>>
// CHECK-NEXT:    %y = tg.exp %u
func.func @transpose_twice_composes(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %t = tg.transpose %x perm = [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32, strided<[4, 1, 12]>>
  %u = tg.transpose %t perm = [1, 2, 0] : tensor<3x4x2xf32, strided<[4, 1, 12]>> -> tensor<4x2x3xf32, strided<[1, 12, 4]>>
  %y = tg.exp %u : tensor<4x2x3xf32, strided<[1, 12, 4]>> -> tensor<4x2x3xf32>
  func.return %y : tensor<4x2x3xf32>
}

// The inner transpose has another user: it stays for that user, the outer one
// still reads x directly.
// CHECK-LABEL: func.func @transpose_inner_kept
// CHECK-NEXT:    %t = tg.transpose %x perm = [1, 0]
// CHECK-NEXT:    %a = tg.exp %t
// CHECK-NEXT:    %b = tg.exp %x
func.func @transpose_inner_kept(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %u = tg.transpose %t perm = [1, 0] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<2x3xf32>
  %a = tg.exp %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %b = tg.exp %u : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %a, %b : tensor<3x2xf32>, tensor<2x3xf32>
}

// Must not fire: a single transpose.
// CHECK-LABEL: func.func @single_transpose
// CHECK-NEXT:    %t = tg.transpose %x
// CHECK-NEXT:    %y = tg.exp %t
func.func @single_transpose(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %y = tg.exp %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// ---- reshape(reshape(x)), view(view(x)), identity reshapes ---------------------------

// CHECK-LABEL: func.func @reshape_twice
// CHECK-NEXT:    %b = tg.reshape %x : tensor<2x6xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    func.return %b
func.func @reshape_twice(%x: tensor<2x6xf32>) -> tensor<4x3xf32> {
  %a = tg.reshape %x : tensor<2x6xf32> -> tensor<12xf32>
  %b = tg.reshape %a : tensor<12xf32> -> tensor<4x3xf32>
  func.return %b : tensor<4x3xf32>
}

// Reshaping back to x's shape gives x itself.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-NEXT:    func.return %x : tensor<2x6xf32>
func.func @reshape_round_trip(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %a = tg.reshape %x : tensor<2x6xf32> -> tensor<12xf32>
  %b = tg.reshape %a : tensor<12xf32> -> tensor<2x6xf32>
  func.return %b : tensor<2x6xf32>
}

// Must not fire: the first reshape copies the transposed x to row-major; reshaping
// x straight to 3x2 would be a strided view instead, a different type.
// CHECK-LABEL: func.func @reshape_twice_changes_type
// CHECK:         %a = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<6xf32>
// CHECK-NEXT:    %b = tg.reshape %a : tensor<6xf32> -> tensor<3x2xf32>
func.func @reshape_twice_changes_type(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %a = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<6xf32>
  %b = tg.reshape %a : tensor<6xf32> -> tensor<3x2xf32>
  func.return %b : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @view_twice
// CHECK-NEXT:    %b = tg.view %x : tensor<2x6xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %b
func.func @view_twice(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
  %a = tg.view %x : tensor<2x6xf32> -> tensor<12xf32>
  %b = tg.view %a : tensor<12xf32> -> tensor<3x4xf32>
  func.return %b : tensor<3x4xf32>
}

// A view of a strided view composes into one strided view of x.
// CHECK-LABEL: func.func @view_twice_strided
// CHECK:         %t = tg.transpose %x
// CHECK-NEXT:    %b = tg.view %t : tensor<4x2x3xf32, strided<[1, 12, 4]>> -> tensor<4x3x2xf32, strided<[1, 8, 4]>>
func.func @view_twice_strided(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %t = tg.transpose %x perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32, strided<[1, 12, 4]>>
  %a = tg.view %t : tensor<4x2x3xf32, strided<[1, 12, 4]>> -> tensor<4x6xf32, strided<[1, 4]>>
  %b = tg.view %a : tensor<4x6xf32, strided<[1, 4]>> -> tensor<4x3x2xf32, strided<[1, 8, 4]>>
  %y = tg.contiguous %b : tensor<4x3x2xf32, strided<[1, 8, 4]>> -> tensor<4x3x2xf32>
  func.return %y : tensor<4x3x2xf32>
}

// Must not fire: a view of a reshape is not a view of a view.
// CHECK-LABEL: func.func @view_of_reshape
// CHECK:         %a = tg.reshape %x
// CHECK-NEXT:    %b = tg.view %a
func.func @view_of_reshape(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
  %a = tg.reshape %x : tensor<2x6xf32> -> tensor<12xf32>
  %b = tg.view %a : tensor<12xf32> -> tensor<3x4xf32>
  func.return %b : tensor<3x4xf32>
}

// ---- contiguous(x), broadcast(x) -----------------------------------------------------

// CHECK-LABEL: func.func @contiguous_of_row_major
// CHECK-NEXT:    func.return %x : tensor<2x3xf32>
func.func @contiguous_of_row_major(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = tg.contiguous %x : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}

// Must not fire: contiguous of a strided view is a real copy.
// CHECK-LABEL: func.func @contiguous_of_strided
// CHECK:         %c = tg.contiguous %t
func.func @contiguous_of_strided(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %c = tg.contiguous %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return %c : tensor<3x2xf32>
}

// CHECK-LABEL: func.func @broadcast_to_same_shape
// CHECK-NEXT:    %y = tg.exp %x
func.func @broadcast_to_same_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %b = tg.broadcast %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %y = tg.exp %b : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// Must not fire: a real broadcast.
// CHECK-LABEL: func.func @broadcast_to_bigger_shape
// CHECK:         %b = tg.broadcast %x : tensor<3xf32> -> tensor<2x3xf32, strided<[0, 1]>>
func.func @broadcast_to_bigger_shape(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %b = tg.broadcast %x : tensor<3xf32> -> tensor<2x3xf32, strided<[0, 1]>>
  %y = tg.exp %b : tensor<2x3xf32, strided<[0, 1]>> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// ---- conv2d(pad(x)) -------------------------------------------------------------------

// TF-style padding of an ONNX export (one row and column more at the end): the
// +0.0 pad of H and W moves into the convolution's padding [top, left, bottom,
// right], added to what it had; the pad is erased.
// CHECK-LABEL: func.func @pad_into_conv
// CHECK-NOT:     tg.pad
// CHECK:         %y = tg.conv2d %x, %w, %b strides = [2, 2] padding = [1, 0, 1, 1] dilation = [1, 1] groups = 8 : (tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x3x3xf32>
// CHECK-NEXT:    func.return %y
func.func @pad_into_conv(%x: tensor<1x8x6x6xf32>, %w: tensor<8x1x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x3x3xf32> {
  %p = tg.pad %x low = [0, 0, 0, 0] high = [0, 0, 1, 1] value = 0.000000e+00 : tensor<1x8x6x6xf32> -> tensor<1x8x7x7xf32>
  %y = tg.conv2d %p, %w, %b strides = [2, 2] padding = [1, 0, 0, 0] dilation = [1, 1] groups = 8 : (tensor<1x8x7x7xf32>, tensor<8x1x3x3xf32>, tensor<8xf32>) -> tensor<1x8x3x3xf32>
  func.return %y : tensor<1x8x3x3xf32>
}

// An NHWC convolution: H and W are dims 1 and 2.
// CHECK-LABEL: func.func @pad_into_conv_nhwc
// CHECK-NOT:     tg.pad
// CHECK:         %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC"
func.func @pad_into_conv_nhwc(%x: tensor<1x4x4x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<1x4x4x16xf32> {
  %p = tg.pad %x low = [0, 1, 1, 0] high = [0, 1, 1, 0] value = 0.000000e+00 : tensor<1x4x4x8xf32> -> tensor<1x6x6x8xf32>
  %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x6x6x8xf32>, tensor<3x3x8x16xf32>) -> tensor<1x4x4x16xf32>
  func.return %y : tensor<1x4x4x16xf32>
}

// A pad by nothing (what ONNX exports put before 1x1 convolutions) folds whatever
// its value: it is the identity.
// CHECK-LABEL: func.func @empty_pad_into_conv
// CHECK-NOT:     tg.pad
// CHECK:         %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0]
func.func @empty_pad_into_conv(%x: tensor<1x8x4x4xf32>, %w: tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32> {
  %p = tg.pad %x low = [0, 0, 0, 0] high = [0, 0, 0, 0] value = 3.000000e+00 : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xf32>
  %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x4x4xf32>, tensor<16x8x1x1xf32>) -> tensor<1x16x4x4xf32>
  func.return %y : tensor<1x16x4x4xf32>
}

// Must not fire: a nonzero value, and -0.0 (the convolution pads with +0.0).
// CHECK-LABEL: func.func @pad_value_not_zero
// CHECK:         %p = tg.pad %x {{.*}} value = 1.000000e+00
// CHECK-NEXT:    %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0]
// CHECK-NEXT:    %q = tg.pad %x {{.*}} value = -0.000000e+00
// CHECK-NEXT:    %z = tg.conv2d %q, %w strides = [1, 1] padding = [0, 0, 0, 0]
func.func @pad_value_not_zero(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x3x3xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) {
  %p = tg.pad %x low = [0, 0, 1, 1] high = [0, 0, 1, 1] value = 1.000000e+00 : tensor<1x8x4x4xf32> -> tensor<1x8x6x6xf32>
  %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %q = tg.pad %x low = [0, 0, 1, 1] high = [0, 0, 1, 1] value = -0.000000e+00 : tensor<1x8x4x4xf32> -> tensor<1x8x6x6xf32>
  %z = tg.conv2d %q, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  func.return %y, %z : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
}

// Must not fire: reflect (or edge) padding is not a tg.pad; the ONNX frontend
// gathers the border rows and columns.
// CHECK-LABEL: func.func @reflect_pad
// CHECK:         %r = tg.gather %x axis = 2
// CHECK-NEXT:    %p = tg.gather %r axis = 3
// CHECK-NEXT:    %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0]
func.func @reflect_pad(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %r = tg.gather %x axis = 2 indices = [1, 0, 1, 2, 3, 2] : tensor<1x8x4x4xf32> -> tensor<1x8x6x4xf32>
  %p = tg.gather %r axis = 3 indices = [1, 0, 1, 2, 3, 2] : tensor<1x8x6x4xf32> -> tensor<1x8x6x6xf32>
  %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// Must not fire: a padded channel dim (the convolution pads only H and W), a padded
// batch dim.
// CHECK-LABEL: func.func @pad_channels_or_batch
// CHECK:         %p = tg.pad %x low = [0, 2, 0, 0]
// CHECK-NEXT:    %y = tg.conv2d %p, %w strides = [1, 1] padding = [1, 1, 1, 1]
// CHECK-NEXT:    %q = tg.pad %x low = [1, 0, 1, 1]
// CHECK-NEXT:    %z = tg.conv2d %q, %v strides = [1, 1] padding = [0, 0, 0, 0]
func.func @pad_channels_or_batch(%x: tensor<1x8x4x4xf32>, %w: tensor<8x10x3x3xf32>, %v: tensor<8x8x3x3xf32>) -> (tensor<1x8x4x4xf32>, tensor<2x8x4x4xf32>) {
  %p = tg.pad %x low = [0, 2, 0, 0] high = [0, 0, 0, 0] value = 0.000000e+00 : tensor<1x8x4x4xf32> -> tensor<1x10x4x4xf32>
  %y = tg.conv2d %p, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x10x4x4xf32>, tensor<8x10x3x3xf32>) -> tensor<1x8x4x4xf32>
  %q = tg.pad %x low = [1, 0, 1, 1] high = [0, 0, 1, 1] value = 0.000000e+00 : tensor<1x8x4x4xf32> -> tensor<2x8x6x6xf32>
  %z = tg.conv2d %q, %v strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x4x4xf32>
  func.return %y, %z : tensor<1x8x4x4xf32>, tensor<2x8x4x4xf32>
}

// Must not fire: the pad has a second user, which needs its copy anyway.
// CHECK-LABEL: func.func @pad_two_users
// CHECK:         %p = tg.pad %x
// CHECK-NEXT:    %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0]
// CHECK-NEXT:    %r = tg.relu %p
func.func @pad_two_users(%x: tensor<1x8x4x4xf32>, %w: tensor<8x8x3x3xf32>) -> (tensor<1x8x4x4xf32>, tensor<1x8x6x6xf32>) {
  %p = tg.pad %x low = [0, 0, 1, 1] high = [0, 0, 1, 1] value = 0.000000e+00 : tensor<1x8x4x4xf32> -> tensor<1x8x6x6xf32>
  %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %r = tg.relu %p : tensor<1x8x6x6xf32> -> tensor<1x8x6x6xf32>
  func.return %y, %r : tensor<1x8x4x4xf32>, tensor<1x8x6x6xf32>
}

// Must not fire: a strided input (here a transposed view); the pad is also the copy
// that gives the convolution a row-major input.
// CHECK-LABEL: func.func @pad_of_strided
// CHECK:         %p = tg.pad %t
// CHECK-NEXT:    %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0]
func.func @pad_of_strided(%x: tensor<1x4x4x8xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32> {
  %t = tg.transpose %x perm = [0, 3, 1, 2] : tensor<1x4x4x8xf32> -> tensor<1x8x4x4xf32, strided<[128, 1, 32, 8]>>
  %p = tg.pad %t low = [0, 0, 1, 1] high = [0, 0, 1, 1] value = 0.000000e+00 : tensor<1x8x4x4xf32, strided<[128, 1, 32, 8]>> -> tensor<1x8x6x6xf32>
  %y = tg.conv2d %p, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}

// (A B)^T made row-major: the matmul of the transposes writes it directly (the
// gradient of x @ w.T with respect to w ends so), no transposing copy.
// CHECK-LABEL: func.func @transposed_matmul
// CHECK-NEXT:    %[[BT:.*]] = tg.transpose %b perm = [1, 0] : tensor<3x5xf32> -> tensor<5x3xf32, strided<[1, 5]>>
// CHECK-NEXT:    %[[AT:.*]] = tg.transpose %a perm = [1, 0] : tensor<4x3xf32> -> tensor<3x4xf32, strided<[1, 3]>>
// CHECK-NEXT:    %[[M:.*]] = tg.matmul %[[BT]], %[[AT]] : (tensor<5x3xf32, strided<[1, 5]>>, tensor<3x4xf32, strided<[1, 3]>>) -> tensor<5x4xf32>
// CHECK-NEXT:    func.return %[[M]] : tensor<5x4xf32>
func.func @transposed_matmul(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<5x4xf32> {
  %m = tg.matmul %a, %b : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %t = tg.transpose %m perm = [1, 0] : tensor<4x5xf32> -> tensor<5x4xf32, strided<[1, 5]>>
  %c = tg.contiguous %t : tensor<5x4xf32, strided<[1, 5]>> -> tensor<5x4xf32>
  func.return %c : tensor<5x4xf32>
}

// Must not fire: the matmul has another use (it would be computed twice), or the
// transpose is not of the last two dimensions.
// CHECK-LABEL: func.func @transposed_matmul_kept
// CHECK-NEXT:    %m = tg.matmul %a, %b
// CHECK-NEXT:    %t = tg.transpose %m perm = [1, 0]
// CHECK-NEXT:    %c = tg.contiguous %t
// CHECK-NEXT:    %n = tg.matmul %x, %y
// CHECK-NEXT:    %u = tg.transpose %n perm = [1, 0, 2]
// CHECK-NEXT:    %d = tg.contiguous %u
func.func @transposed_matmul_kept(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %x: tensor<2x4x3xf32>, %y: tensor<2x3x5xf32>) -> (tensor<5x4xf32>, tensor<4x5xf32>, tensor<4x2x5xf32>) {
  %m = tg.matmul %a, %b : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %t = tg.transpose %m perm = [1, 0] : tensor<4x5xf32> -> tensor<5x4xf32, strided<[1, 5]>>
  %c = tg.contiguous %t : tensor<5x4xf32, strided<[1, 5]>> -> tensor<5x4xf32>
  %n = tg.matmul %x, %y : (tensor<2x4x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
  %u = tg.transpose %n perm = [1, 0, 2] : tensor<2x4x5xf32> -> tensor<4x2x5xf32, strided<[5, 20, 1]>>
  %d = tg.contiguous %u : tensor<4x2x5xf32, strided<[5, 20, 1]>> -> tensor<4x2x5xf32>
  func.return %c, %m, %d : tensor<5x4xf32>, tensor<4x5xf32>, tensor<4x2x5xf32>
}
