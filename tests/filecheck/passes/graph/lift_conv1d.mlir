// RUN: qidao-opt %s -p lift-conv1d --split-input-file | filecheck %s
// RUN: qidao-opt %s -p lift-conv1d,lift-conv1d --split-input-file | filecheck %s

// wav2vec2's feature extractor in small: a 1-D convolution (2-D on the unit
// height), an instance norm and a GELU-like tail on [N, C, L], the next 1-D
// convolution. The norm's reduction, its per-channel [C, 1] shift (viewed as
// [1, C, 1, 1]), the scalar and the elementwise ops all compute on [1, 8, 1, 6];
// the next convolution reads that value itself: no reshape is left. The second
// RUN line checks that a second run changes nothing.

// CHECK-LABEL: func.func @feature_extractor
// CHECK-NEXT:    %c = tg.conv2d %x, %w
// CHECK-NEXT:    %m = tg.reduce_mean %c axes = [3] keepdims : tensor<1x8x1x6xf32> -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %d = tg.sub %c, %m : (tensor<1x8x1x6xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x6xf32>
// CHECK-NEXT:    %{{.*}} = tg.view %shift : tensor<8x1xf32> -> tensor<1x8x1x1xf32>
// CHECK-NEXT:    %n = tg.add %d, %{{.*}} : (tensor<1x8x1x6xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x6xf32>
// CHECK-NEXT:    %e = tg.erf %n : tensor<1x8x1x6xf32> -> tensor<1x8x1x6xf32>
// CHECK-NEXT:    %g = tg.mul %e, %half : (tensor<1x8x1x6xf32>, tensor<f32>) -> tensor<1x8x1x6xf32>
// CHECK-NEXT:    %y = tg.conv2d %g, %w2
// CHECK-NOT:     tg.reshape
func.func @feature_extractor(%x: tensor<1x1x1x14xf32>, %w: tensor<8x1x1x4xf32>, %w2: tensor<8x8x1x2xf32>, %shift: tensor<8x1xf32>, %half: tensor<f32>) -> tensor<1x8x1x3xf32> {
  %c = tg.conv2d %x, %w strides = [1, 2] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x1x1x14xf32>, tensor<8x1x1x4xf32>) -> tensor<1x8x1x6xf32>
  %s = tg.reshape %c : tensor<1x8x1x6xf32> -> tensor<1x8x6xf32>
  %m = tg.reduce_mean %s axes = [2] keepdims : tensor<1x8x6xf32> -> tensor<1x8x1xf32>
  %d = tg.sub %s, %m : (tensor<1x8x6xf32>, tensor<1x8x1xf32>) -> tensor<1x8x6xf32>
  %n = tg.add %d, %shift : (tensor<1x8x6xf32>, tensor<8x1xf32>) -> tensor<1x8x6xf32>
  %e = tg.erf %n : tensor<1x8x6xf32> -> tensor<1x8x6xf32>
  %g = tg.mul %e, %half : (tensor<1x8x6xf32>, tensor<f32>) -> tensor<1x8x6xf32>
  %u = tg.reshape %g : tensor<1x8x6xf32> -> tensor<1x8x1x6xf32>
  %y = tg.conv2d %u, %w2 strides = [1, 2] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x8x1x6xf32>, tensor<8x8x1x2xf32>) -> tensor<1x8x1x3xf32>
  func.return %y : tensor<1x8x1x3xf32>
}

// -----

// The last convolution's value leaves as [N, L, C] for a layer norm: the ops up to
// there move; the transpose reads a squeeze of the last one. A rank-3 slice (the
// positional convolution's trailing element dropped) slices the rank-4 value, an
// operand of the full shape that is not a squeeze (%r) is viewed at rank 4, and
// one along the last axis (%b, [L]) is read as it is.

// CHECK-LABEL: func.func @to_tokens
// CHECK-NEXT:    %c = tg.conv2d %x, %w
// CHECK-NEXT:    %t = tg.slice %c start = [0, 0, 0, 0] stop = [1, 8, 1, 5] step = [1, 1, 1, 1] : tensor<1x8x1x6xf32> -> tensor<1x8x1x5xf32, strided<[48, 6, 6, 1]>>
// CHECK-NEXT:    %{{.*}} = tg.view %r : tensor<1x8x5xf32> -> tensor<1x8x1x5xf32>
// CHECK-NEXT:    %a = tg.add %t, %{{.*}} : (tensor<1x8x1x5xf32, strided<[48, 6, 6, 1]>>, tensor<1x8x1x5xf32>) -> tensor<1x8x1x5xf32>
// CHECK-NEXT:    %g = tg.mul %a, %b : (tensor<1x8x1x5xf32>, tensor<5xf32>) -> tensor<1x8x1x5xf32>
// CHECK-NEXT:    %[[S:.*]] = tg.reshape %g : tensor<1x8x1x5xf32> -> tensor<1x8x5xf32>
// CHECK-NEXT:    %p = tg.transpose %[[S]] perm = [0, 2, 1]
func.func @to_tokens(%x: tensor<1x1x1x14xf32>, %w: tensor<8x1x1x4xf32>, %r: tensor<1x8x5xf32>, %b: tensor<5xf32>) -> tensor<1x5x8xf32, strided<[40, 1, 5]>> {
  %c = tg.conv2d %x, %w strides = [1, 2] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x1x1x14xf32>, tensor<8x1x1x4xf32>) -> tensor<1x8x1x6xf32>
  %s = tg.reshape %c : tensor<1x8x1x6xf32> -> tensor<1x8x6xf32>
  %t = tg.slice %s start = [0, 0, 0] stop = [1, 8, 5] step = [1, 1, 1] : tensor<1x8x6xf32> -> tensor<1x8x5xf32, strided<[48, 6, 1]>>
  %a = tg.add %t, %r : (tensor<1x8x5xf32, strided<[48, 6, 1]>>, tensor<1x8x5xf32>) -> tensor<1x8x5xf32>
  %g = tg.mul %a, %b : (tensor<1x8x5xf32>, tensor<5xf32>) -> tensor<1x8x5xf32>
  %p = tg.transpose %g perm = [0, 2, 1] : tensor<1x8x5xf32> -> tensor<1x5x8xf32, strided<[40, 1, 5]>>
  func.return %p : tensor<1x5x8xf32, strided<[40, 1, 5]>>
}

// -----

// SqueezeBERT's residual: a convolution's squeeze plus a layer norm's [N, L, C]
// output seen as [N, C, L] (a strided transpose). The add computes on rank 4; the
// strided operand gets the unit height through a tg.reshape that stays a view.

// CHECK-LABEL: func.func @residual
// CHECK-NEXT:    %c = tg.conv2d %x, %w
// CHECK-NEXT:    %t = tg.transpose %h perm = [0, 2, 1] : tensor<1x6x8xf32> -> tensor<1x8x6xf32, strided<[48, 1, 8]>>
// CHECK-NEXT:    %[[R:.*]] = tg.reshape %t : tensor<1x8x6xf32, strided<[48, 1, 8]>> -> tensor<1x8x1x6xf32, strided<[{{[0-9]+}}, 1, 48, 8]>>
// CHECK-NEXT:    %a = tg.add %c, %[[R]] : (tensor<1x8x1x6xf32>, tensor<1x8x1x6xf32, strided<[{{[0-9]+}}, 1, 48, 8]>>) -> tensor<1x8x1x6xf32>
// CHECK-NEXT:    tg.reshape %a : tensor<1x8x1x6xf32> -> tensor<1x8x6xf32>
func.func @residual(%x: tensor<1x1x1x14xf32>, %w: tensor<8x1x1x4xf32>, %h: tensor<1x6x8xf32>) -> tensor<1x8x6xf32> {
  %c = tg.conv2d %x, %w strides = [1, 2] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x1x1x14xf32>, tensor<8x1x1x4xf32>) -> tensor<1x8x1x6xf32>
  %s = tg.reshape %c : tensor<1x8x1x6xf32> -> tensor<1x8x6xf32>
  %t = tg.transpose %h perm = [0, 2, 1] : tensor<1x6x8xf32> -> tensor<1x8x6xf32, strided<[48, 1, 8]>>
  %a = tg.add %s, %t : (tensor<1x8x6xf32>, tensor<1x8x6xf32, strided<[48, 1, 8]>>) -> tensor<1x8x6xf32>
  func.return %a : tensor<1x8x6xf32>
}

// -----

// Must not fire: a squeeze of a graph input (no convolution made it), a reshape
// that is not the squeeze of the unit height ([1, 8, 2, 3] -> [1, 8, 6]), and a
// reduction without keepdims.

// CHECK-LABEL: func.func @stays
// CHECK-NEXT:    %s = tg.reshape %x : tensor<1x8x1x6xf32> -> tensor<1x8x6xf32>
// CHECK-NEXT:    %a = tg.relu %s : tensor<1x8x6xf32> -> tensor<1x8x6xf32>
// CHECK-NEXT:    %c = tg.conv2d
// CHECK-NEXT:    %f = tg.reshape %c : tensor<1x8x2x3xf32> -> tensor<1x8x6xf32>
// CHECK-NEXT:    %b = tg.relu %f : tensor<1x8x6xf32> -> tensor<1x8x6xf32>
// CHECK-NEXT:    %k = tg.conv2d
// CHECK-NEXT:    %q = tg.reshape %k : tensor<1x8x1x6xf32> -> tensor<1x8x6xf32>
// CHECK-NEXT:    %m = tg.reduce_mean %q axes = [2] : tensor<1x8x6xf32> -> tensor<1x8xf32>
func.func @stays(%x: tensor<1x8x1x6xf32>, %z: tensor<1x1x2x6xf32>, %w: tensor<8x1x1x4xf32>) -> (tensor<1x8x6xf32>, tensor<1x8x6xf32>, tensor<1x8xf32>) {
  %s = tg.reshape %x : tensor<1x8x1x6xf32> -> tensor<1x8x6xf32>
  %a = tg.relu %s : tensor<1x8x6xf32> -> tensor<1x8x6xf32>
  %c = tg.conv2d %z, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x1x2x6xf32>, tensor<8x1x1x4xf32>) -> tensor<1x8x2x3xf32>
  %f = tg.reshape %c : tensor<1x8x2x3xf32> -> tensor<1x8x6xf32>
  %b = tg.relu %f : tensor<1x8x6xf32> -> tensor<1x8x6xf32>
  %k = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 3] dilation = [1, 1] groups = 8 : (tensor<1x8x1x6xf32>, tensor<8x1x1x4xf32>) -> tensor<1x8x1x6xf32>
  %q = tg.reshape %k : tensor<1x8x1x6xf32> -> tensor<1x8x6xf32>
  %m = tg.reduce_mean %q axes = [2] : tensor<1x8x6xf32> -> tensor<1x8xf32>
  func.return %a, %b, %m : tensor<1x8x6xf32>, tensor<1x8x6xf32>, tensor<1x8xf32>
}
