// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s

// convert-tg-to-affine of the NHWC ops the layout pass makes: the channel loop,
// contiguous in NHWC, is innermost in every nest.

// An NHWC conv2d (padding already materialized, as the pipeline leaves it) keeps the
// output channel f innermost: the bias init nest is n_init, oh_init, ow_init, f_init
// and the accumulation nest n, oh, ow, kh, kw, c, f.
// CHECK-LABEL: func.func private @conv_nhwc_k0_conv2d(%x: memref<1x8x8x8xf32> {llvm.noalias}, %w: memref<3x3x8x16xf32> {llvm.noalias}, %b: memref<16xf32> {llvm.noalias}, %out: memref<1x6x6x16xf32> {llvm.noalias}) attributes {qd.kernel = "tg.conv2d"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %n_init = 0 to 1 {
// CHECK-NEXT:      affine.for %oh_init = 0 to 6 {
// CHECK-NEXT:        affine.for %ow_init = 0 to 6 {
// CHECK-NEXT:          affine.for %f_init = 0 to 16 {
// CHECK-NEXT:            %[[B:.*]] = affine.load %b[%f_init] : memref<16xf32>
// CHECK-NEXT:            affine.store %[[B]], %out[%n_init, %oh_init, %ow_init, %f_init] : memref<1x6x6x16xf32>
// CHECK-NEXT:          } {qd.loop = "f_init"}
// CHECK-NEXT:        } {qd.loop = "ow_init"}
// CHECK-NEXT:      } {qd.loop = "oh_init"}
// CHECK-NEXT:    } {qd.loop = "n_init"}
// CHECK-NEXT:    affine.for %n = 0 to 1 {
// CHECK-NEXT:      affine.for %oh = 0 to 6 {
// CHECK-NEXT:        affine.for %ow = 0 to 6 {
// CHECK-NEXT:          affine.for %kh = 0 to 3 {
// CHECK-NEXT:            affine.for %kw = 0 to 3 {
// CHECK-NEXT:              affine.for %c = 0 to 8 {
// CHECK-NEXT:                %[[X:.*]] = affine.load %x[%n, %oh + %kh, %ow + %kw, %c] : memref<1x8x8x8xf32>
// CHECK-NEXT:                affine.for %f = 0 to 16 {
// CHECK-NEXT:                  %[[W:.*]] = affine.load %w[%kh, %kw, %c, %f] : memref<3x3x8x16xf32>
// CHECK-NEXT:                  %[[ACC:.*]] = affine.load %out[%n, %oh, %ow, %f] : memref<1x6x6x16xf32>
// CHECK-NEXT:                  %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT:                  %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:                  affine.store %[[S]], %out[%n, %oh, %ow, %f] : memref<1x6x6x16xf32>
// CHECK-NEXT:                } {qd.loop = "f"}
// CHECK-NEXT:              } {qd.loop = "c"}
// CHECK-NEXT:            } {qd.loop = "kw"}
// CHECK-NEXT:          } {qd.loop = "kh"}
// CHECK-NEXT:        } {qd.loop = "ow"}
// CHECK-NEXT:      } {qd.loop = "oh"}
// CHECK-NEXT:    } {qd.loop = "n"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @conv_nhwc(
// CHECK-NEXT:    func.call @conv_nhwc_k0_conv2d(%x, %w, %b, %out0)
func.func @conv_nhwc(%x: tensor<1x8x8x8xf32>, %w: tensor<3x3x8x16xf32>, %b: tensor<16xf32>) -> tensor<1x6x6x16xf32> {
  %y = tg.conv2d %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x8xf32>, tensor<3x3x8x16xf32>, tensor<16xf32>) -> tensor<1x6x6x16xf32>
  func.return %y : tensor<1x6x6x16xf32>
}

// An NHWC avg_pool2d keeps the channel c innermost: per output pixel (n, oh, ow),
// the window loops kh, kw count the taps inside the padding and add each tap's
// channels in c; then c_norm divides by the count.
// CHECK-LABEL: func.func private @avg_pool_nhwc_k0_avg_pool2d(%x: memref<1x6x6x8xf32> {llvm.noalias}, %out: memref<1x6x6x8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.avg_pool2d"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    affine.for %n = 0 to 1 {
// CHECK-NEXT:      affine.for %oh = 0 to 6 {
// CHECK-NEXT:        affine.for %ow = 0 to 6 {
// CHECK-NEXT:          affine.for %c_init = 0 to 8 {
// CHECK-NEXT:            affine.store %[[ZERO]], %out[%n, %oh, %ow, %c_init] : memref<1x6x6x8xf32>
// CHECK-NEXT:          } {qd.loop = "c_init"}
// CHECK-NEXT:          %[[COUNT:.*]] = affine.for %kh = 0 to 3 iter_args(%[[CNT_KH:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:            %[[COUNT_KW:.*]] = affine.for %kw = 0 to 3 iter_args(%[[CNT:.*]] = %[[CNT_KH]]) -> (f32) {
// CHECK-NEXT:              %[[IN:.*]] = "affine.if"(%oh, %ow, %kh, %kw) <{condition = affine_set<(d0, d1, d2, d3) : (((d0 + -1) + d2) >= 0, ((((d0 * -1) + 1) + (d2 * -1)) + 5) >= 0, ((d1 + -1) + d3) >= 0, ((((d1 * -1) + 1) + (d3 * -1)) + 5) >= 0)>}> ({
// CHECK-NEXT:                affine.for %c = 0 to 8 {
// CHECK-NEXT:                  %[[PART:.*]] = affine.load %out[%n, %oh, %ow, %c] : memref<1x6x6x8xf32>
// CHECK-NEXT:                  %[[X:.*]] = affine.load %x[%n, %oh + -1 + %kh, %ow + -1 + %kw, %c] : memref<1x6x6x8xf32>
// CHECK-NEXT:                  %[[SUM:.*]] = arith.addf %[[PART]], %[[X]] : f32
// CHECK-NEXT:                  affine.store %[[SUM]], %out[%n, %oh, %ow, %c] : memref<1x6x6x8xf32>
// CHECK-NEXT:                } {qd.loop = "c"}
// CHECK-NEXT:                %[[CNT1:.*]] = arith.addf %[[CNT]], %[[ONE]] : f32
// CHECK-NEXT:                affine.yield %[[CNT1]] : f32
// CHECK-NEXT:              }, {
// CHECK-NEXT:                affine.yield %[[CNT]] : f32
// CHECK-NEXT:              }) : (index, index, index, index) -> f32
// CHECK-NEXT:              affine.yield %[[IN]] : f32
// CHECK-NEXT:            } {qd.loop = "kw"}
// CHECK-NEXT:            affine.yield %[[COUNT_KW]] : f32
// CHECK-NEXT:          } {qd.loop = "kh"}
// CHECK-NEXT:          affine.for %c_norm = 0 to 8 {
// CHECK-NEXT:            %[[TOTAL:.*]] = affine.load %out[%n, %oh, %ow, %c_norm] : memref<1x6x6x8xf32>
// CHECK-NEXT:            %[[AVG:.*]] = arith.divf %[[TOTAL]], %[[COUNT]] : f32
// CHECK-NEXT:            affine.store %[[AVG]], %out[%n, %oh, %ow, %c_norm] : memref<1x6x6x8xf32>
// CHECK-NEXT:          } {qd.loop = "c_norm"}
// CHECK-NEXT:        } {qd.loop = "ow"}
// CHECK-NEXT:      } {qd.loop = "oh"}
// CHECK-NEXT:    } {qd.loop = "n"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @avg_pool_nhwc(
// CHECK-NEXT:    func.call @avg_pool_nhwc_k0_avg_pool2d(%x, %out0)
func.func @avg_pool_nhwc(%x: tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32> {
  %y = tg.avg_pool2d %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] layout = "NHWC" : tensor<1x6x6x8xf32> -> tensor<1x6x6x8xf32>
  func.return %y : tensor<1x6x6x8xf32>
}
