// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s

// convert-tg-to-affine of a depthwise NHWC conv2d (groups = C = F,
// lowering/conv_depthwise.py): blocks cb of 16 channels outermost, the channel
// loop c innermost and contiguous in the input, the HWIO weight [KH, KW, 1, C] and
// the output, with the padding test outside it; the bias init and the epilogue are
// nests of their own.

// Stride 2, padding 1, bias, 32 channels: the init nest n_init .. c_init, then
// n, cb (2 blocks), oh, ow, kh, kw, the tap test, and c over the block's 16
// channels (cb * 16 + c).
// CHECK-LABEL: func.func private @depthwise_nhwc_k0_conv2d(%x: memref<1x5x5x32xf32> {llvm.noalias}, %w: memref<3x3x1x32xf32> {llvm.noalias}, %b: memref<32xf32> {llvm.noalias}, %out: memref<1x3x3x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.conv2d"} {
// CHECK:         affine.for %n_init = 0 to 1 {
// CHECK-NEXT:      affine.for %oh_init = 0 to 3 {
// CHECK-NEXT:        affine.for %ow_init = 0 to 3 {
// CHECK-NEXT:          affine.for %c_init = 0 to 32 {
// CHECK-NEXT:            %[[B:.*]] = affine.load %b[%c_init] : memref<32xf32>
// CHECK-NEXT:            affine.store %[[B]], %out[%n_init, %oh_init, %ow_init, %c_init] : memref<1x3x3x32xf32>
// CHECK:         affine.for %n = 0 to 1 {
// CHECK-NEXT:      affine.for %cb = 0 to 2 {
// CHECK-NEXT:        affine.for %oh = 0 to 3 {
// CHECK-NEXT:          affine.for %ow = 0 to 3 {
// CHECK-NEXT:            affine.for %kh = 0 to 3 {
// CHECK-NEXT:              affine.for %kw = 0 to 3 {
// CHECK-NEXT:                "affine.if"(%oh, %ow, %kh, %kw)
// CHECK-NEXT:                  affine.for %c = 0 to 16 {
// CHECK-NEXT:                    %[[X:.*]] = affine.load %x[%n, %oh * 2 + -1 + %kh, %ow * 2 + -1 + %kw, %cb * 16 + %c] : memref<1x5x5x32xf32>
// CHECK-NEXT:                    %[[W:.*]] = affine.load %w[%kh, %kw, 0, %cb * 16 + %c] : memref<3x3x1x32xf32>
// CHECK-NEXT:                    %[[ACC:.*]] = affine.load %out[%n, %oh, %ow, %cb * 16 + %c] : memref<1x3x3x32xf32>
// CHECK-NEXT:                    %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT:                    %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:                    affine.store %[[S]], %out[%n, %oh, %ow, %cb * 16 + %c] : memref<1x3x3x32xf32>
// CHECK-NEXT:                  } {qd.loop = "c"}
// CHECK-NOT:     qd.loop = "f"
// CHECK:         func.return
func.func @depthwise_nhwc(%x: tensor<1x5x5x32xf32>, %w: tensor<3x3x1x32xf32>, %b: tensor<32xf32>) -> tensor<1x3x3x32xf32> {
  %y = tg.conv2d %x, %w, %b strides = [2, 2] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 32 layout = "NHWC" : (tensor<1x5x5x32xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<1x3x3x32xf32>
  func.return %y : tensor<1x3x3x32xf32>
}

// Fused with a relu, 24 channels (not a multiple of 16: one block of all 24), no
// padding (no test); zero init; the epilogue nest n_epi .. c_epi after the
// accumulation (the names the default schedule moves into ow).
// CHECK-LABEL: func.func private @depthwise_relu_k0_fused
// CHECK:         affine.for %c_init = 0 to 24 {
// CHECK-NEXT:      affine.store %{{.*}}, %out[%n_init, %oh_init, %ow_init, %c_init]
// CHECK:         affine.for %cb = 0 to 1 {
// CHECK:         affine.for %kw = 0 to 3 {
// CHECK-NEXT:      affine.for %c = 0 to 24 {
// CHECK-NEXT:        affine.load %x[%n, %oh + %kh, %ow + %kw, %cb * 24 + %c]
// CHECK:         affine.for %n_epi = 0 to 1 {
// CHECK-NEXT:      affine.for %oh_epi = 0 to 2 {
// CHECK-NEXT:        affine.for %ow_epi = 0 to 2 {
// CHECK-NEXT:          affine.for %c_epi = 0 to 24 {
// CHECK-NEXT:            %[[T:.*]] = affine.load %out[%n_epi, %oh_epi, %ow_epi, %c_epi]
// CHECK-NEXT:            arith.maximumf %[[T]]
func.func @depthwise_relu(%x: tensor<1x4x4x24xf32>, %w: tensor<3x3x1x24xf32>) -> tensor<1x2x2x24xf32> {
  %r = tg.fused %x, %w : (tensor<1x4x4x24xf32>, tensor<3x3x1x24xf32>) -> tensor<1x2x2x24xf32> {
  ^bb0(%a: tensor<1x4x4x24xf32>, %v: tensor<3x3x1x24xf32>):
    %y = tg.conv2d %a, %v strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 24 layout = "NHWC" : (tensor<1x4x4x24xf32>, tensor<3x3x1x24xf32>) -> tensor<1x2x2x24xf32>
    %z = tg.relu %y : tensor<1x2x2x24xf32> -> tensor<1x2x2x24xf32>
    tg.yield %z : tensor<1x2x2x24xf32>
  }
  func.return %r : tensor<1x2x2x24xf32>
}

// Not this kernel: a channel multiplier of 2 (F = 2 * C) stays the grouped NHWC nest,
// g over the channels, f over the two outputs of each.
// CHECK-LABEL: func.func private @depthwise_multiplier_k0_conv2d
// CHECK:         affine.for %g = 0 to 4 {
// CHECK-NEXT:      affine.for %c = 0 to 1 {
// CHECK:             affine.for %f = 0 to 2 {
func.func @depthwise_multiplier(%x: tensor<1x4x4x4xf32>, %w: tensor<3x3x1x8xf32>) -> tensor<1x2x2x8xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 4 layout = "NHWC" : (tensor<1x4x4x4xf32>, tensor<3x3x1x8xf32>) -> tensor<1x2x2x8xf32>
  func.return %y : tensor<1x2x2x8xf32>
}
