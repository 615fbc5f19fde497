// RUN: qidao-opt %s -p layout | filecheck %s
// RUN: qidao-opt %s -p layout,layout | filecheck %s

// An NHWC source: tg.transpose [0, 3, 1, 2] of a row-major rank-4 tensor, data
// that is channels last already (an int8 convolution's output) viewed NCHW. It
// anchors a chain like an NHWC convolution: the elementwise ops that read it run
// on its input, in NHWC order, instead of striding through the view one channel
// at a time. The second RUN line checks idempotence.

// A quantized residual block's tail: dequantize the int8 conv's output (a source)
// and the block's NCHW input, add, requantize, and the next int8 conv's permute
// to NHWC with its 3x3 taps sliced off it. The source's NHWC value is %acc
// itself; the NCHW input enters through one transpose; the next conv's permute
// meets the chain's NHWC result, and its taps are rebuilt on that row-major
// value (their strides change); no copy anywhere.
// CHECK-LABEL: func.func @quantized_residual
// CHECK-NEXT:    %skip_nhwc = tg.transpose %skip perm = [0, 2, 3, 1] : tensor<1x8x4x4xui8> -> tensor<1x4x4x8xui8, strided<[128, 4, 1, 16]>>
// CHECK-NEXT:    %a_nhwc = tg.cast %acc : tensor<1x4x4x8xui8> -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    %b_nhwc = tg.cast %skip_nhwc : tensor<1x4x4x8xui8, strided<[128, 4, 1, 16]>> -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    %s_nhwc = tg.add %a_nhwc, %b_nhwc : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    %q_nhwc = tg.cast %s_nhwc : tensor<1x4x4x8xf32> -> tensor<1x4x4x8xui8>
// CHECK-NEXT:    %tap = tg.slice %q_nhwc start = [0, 0, 0, 0] stop = [1, 4, 4, 8] step = [1, 2, 2, 1] : tensor<1x4x4x8xui8> -> tensor<1x2x2x8xui8, strided<[128, 64, 16, 1]>>
// CHECK-NEXT:    %cols = tg.reshape %tap : tensor<1x2x2x8xui8, strided<[128, 64, 16, 1]>> -> tensor<4x8xui8>
// CHECK-NEXT:    func.return %cols : tensor<4x8xui8>
// CHECK-NOT:     tg.transpose
// CHECK-NOT:     tg.contiguous
func.func @quantized_residual(%acc: tensor<1x4x4x8xui8>, %skip: tensor<1x8x4x4xui8>) -> tensor<4x8xui8> {
  %v = tg.transpose %acc perm = [0, 3, 1, 2] : tensor<1x4x4x8xui8> -> tensor<1x8x4x4xui8, strided<[128, 1, 32, 8]>>
  %a = tg.cast %v : tensor<1x8x4x4xui8, strided<[128, 1, 32, 8]>> -> tensor<1x8x4x4xf32>
  %b = tg.cast %skip : tensor<1x8x4x4xui8> -> tensor<1x8x4x4xf32>
  %s = tg.add %a, %b : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %q = tg.cast %s : tensor<1x8x4x4xf32> -> tensor<1x8x4x4xui8>
  %next = tg.transpose %q perm = [0, 2, 3, 1] : tensor<1x8x4x4xui8> -> tensor<1x4x4x8xui8, strided<[128, 4, 1, 16]>>
  %tap = tg.slice %next start = [0, 0, 0, 0] stop = [1, 4, 4, 8] step = [1, 2, 2, 1] : tensor<1x4x4x8xui8, strided<[128, 4, 1, 16]>> -> tensor<1x2x2x8xui8, strided<[128, 8, 2, 16]>>
  %cols = tg.reshape %tap : tensor<1x2x2x8xui8, strided<[128, 8, 2, 16]>> -> tensor<4x8xui8>
  func.return %cols : tensor<4x8xui8>
}

// A user the permute cannot hand the NHWC value (a tg.fused, whose block
// arguments carry its operands' types) keeps reading it, from a row-major NCHW
// copy, while the slice beside it moves to the NHWC value.
// CHECK-LABEL: func.func @permute_kept_for_a_fused_user
// CHECK:         %r_nhwc = tg.relu %x : tensor<1x2x2x4xf32> -> tensor<1x2x2x4xf32>
// CHECK-NEXT:    %r = tg.transpose %r_nhwc perm = [0, 3, 1, 2] : tensor<1x2x2x4xf32> -> tensor<1x4x2x2xf32, strided<[16, 1, 8, 4]>>
// CHECK-NEXT:    %r_1 = tg.contiguous %r : tensor<1x4x2x2xf32, strided<[16, 1, 8, 4]>> -> tensor<1x4x2x2xf32>
// CHECK-NEXT:    %next = tg.transpose %r_1 perm = [0, 2, 3, 1]
// CHECK-NEXT:    %tap = tg.slice %r_nhwc start = [0, 0, 0, 0] stop = [1, 1, 2, 4] step = [1, 1, 1, 1] : tensor<1x2x2x4xf32> -> tensor<1x1x2x4xf32>
// CHECK-NEXT:    %e = tg.exp %tap
// CHECK-NEXT:    %f = tg.fused %next
func.func @permute_kept_for_a_fused_user(%x: tensor<1x2x2x4xf32>) -> (tensor<1x1x2x4xf32>, tensor<1x2x2x4xf32>) {
  %v = tg.transpose %x perm = [0, 3, 1, 2] : tensor<1x2x2x4xf32> -> tensor<1x4x2x2xf32, strided<[16, 1, 8, 4]>>
  %r = tg.relu %v : tensor<1x4x2x2xf32, strided<[16, 1, 8, 4]>> -> tensor<1x4x2x2xf32>
  %next = tg.transpose %r perm = [0, 2, 3, 1] : tensor<1x4x2x2xf32> -> tensor<1x2x2x4xf32, strided<[16, 2, 1, 4]>>
  %tap = tg.slice %next start = [0, 0, 0, 0] stop = [1, 1, 2, 4] step = [1, 1, 1, 1] : tensor<1x2x2x4xf32, strided<[16, 2, 1, 4]>> -> tensor<1x1x2x4xf32, strided<[16, 2, 1, 4]>>
  %e = tg.exp %tap : tensor<1x1x2x4xf32, strided<[16, 2, 1, 4]>> -> tensor<1x1x2x4xf32>
  %f = tg.fused %next : (tensor<1x2x2x4xf32, strided<[16, 2, 1, 4]>>) -> tensor<1x2x2x4xf32> {
  ^bb0(%n: tensor<1x2x2x4xf32, strided<[16, 2, 1, 4]>>):
    %m = tg.exp %n : tensor<1x2x2x4xf32, strided<[16, 2, 1, 4]>> -> tensor<1x2x2x4xf32>
    tg.yield %m : tensor<1x2x2x4xf32>
  }
  func.return %e, %f : tensor<1x1x2x4xf32>, tensor<1x2x2x4xf32>
}

// Must not fire: a transpose [0, 3, 1, 2] of a strided tensor is not NHWC data,
// and a source whose only user is not layout-agnostic (a reshape) anchors
// nothing to convert.
// CHECK-LABEL: func.func @no_source
// CHECK-NEXT:    %t = tg.transpose %x perm = [0, 2, 3, 1]
// CHECK-NEXT:    %v = tg.transpose %t perm = [0, 3, 1, 2]
// CHECK-NEXT:    %r = tg.relu %v
// CHECK-NEXT:    %w = tg.transpose %y perm = [0, 3, 1, 2]
// CHECK-NEXT:    %flat = tg.reshape %w
func.func @no_source(%x: tensor<1x4x2x2xf32>, %y: tensor<1x2x2x4xf32>) -> (tensor<1x4x2x2xf32>, tensor<1x16xf32>) {
  %t = tg.transpose %x perm = [0, 2, 3, 1] : tensor<1x4x2x2xf32> -> tensor<1x2x2x4xf32, strided<[16, 2, 1, 4]>>
  %v = tg.transpose %t perm = [0, 3, 1, 2] : tensor<1x2x2x4xf32, strided<[16, 2, 1, 4]>> -> tensor<1x4x2x2xf32>
  %r = tg.relu %v : tensor<1x4x2x2xf32> -> tensor<1x4x2x2xf32>
  %w = tg.transpose %y perm = [0, 3, 1, 2] : tensor<1x2x2x4xf32> -> tensor<1x4x2x2xf32, strided<[16, 1, 8, 4]>>
  %flat = tg.reshape %w : tensor<1x4x2x2xf32, strided<[16, 1, 8, 4]>> -> tensor<1x16xf32>
  func.return %r, %flat : tensor<1x4x2x2xf32>, tensor<1x16xf32>
}
