// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s

// convert-tg-to-affine of Winograd F(4x4, 3x3)'s two transforms: one nest over the
// tiles (n, th, tw) with the channels innermost. The input transform loads the 6x6
// tile of each channel (36 loads at rows 4 th + i, columns 4 tw + j) and stores its
// 36 transformed values tile-major, [t, ab, c] with t = (n TH + th) TW + tw; the
// output transform loads the 36 products of a tile and stores its 4x4 pixels plus
// the bias.

// CHECK-LABEL: func.func private @winograd_k0_winograd_input(%x: memref<1x10x10x16xf32> {llvm.noalias}, %out: memref<4x36x16xf32> {llvm.noalias}) attributes {qd.kernel = "tg.winograd_input"}
// CHECK:         affine.for %n = 0 to 1 {
// CHECK-NEXT:      affine.for %th = 0 to 2 {
// CHECK-NEXT:        affine.for %tw = 0 to 2 {
// CHECK-NEXT:          affine.for %c = 0 to 16 {
// CHECK-NEXT:            affine.load %x[%n, %th * 4, %tw * 4, %c]
// CHECK-COUNT-34:        affine.load %x
// CHECK-NEXT:            affine.load %x[%n, %th * 4 + 5, %tw * 4 + 5, %c]
// CHECK-NOT:             affine.load
// CHECK:                 affine.store %{{.*}}, %out[%n * 4 + %th * 2 + %tw, 0, %c]
// CHECK-COUNT-34:        affine.store
// CHECK-NEXT:            affine.store %{{.*}}, %out[%n * 4 + %th * 2 + %tw, 35, %c]
// CHECK-NEXT:          } {qd.loop = "c"}

// CHECK-LABEL: func.func private @winograd_k1_winograd_output(%m: memref<36x4x16xf32> {llvm.noalias}, %b: memref<16xf32> {llvm.noalias}, %out: memref<1x8x8x16xf32> {llvm.noalias}) attributes {qd.kernel = "tg.winograd_output"}
// CHECK:          affine.for %f = 0 to 16 {
// CHECK-NEXT:       affine.load %m[0, %n * 4 + %th * 2 + %tw, %f]
// CHECK-COUNT-35:   affine.load %m
// CHECK:            affine.load %b[%f]
// CHECK:            affine.store %{{.*}}, %out[%n, %th * 4, %tw * 4, %f]
// CHECK-COUNT-14:   affine.store %{{.*}}, %out
// CHECK:            affine.store %{{.*}}, %out[%n, %th * 4 + 3, %tw * 4 + 3, %f]
// CHECK-NEXT:     } {qd.loop = "f"}
func.func @winograd(%x: tensor<1x10x10x16xf32>, %m: tensor<36x4x16xf32>, %b: tensor<16xf32>) -> (tensor<4x36x16xf32>, tensor<1x8x8x16xf32>) {
  %v = tg.winograd_input %x tiles = [2, 2] : tensor<1x10x10x16xf32> -> tensor<4x36x16xf32>
  %y = tg.winograd_output %m, %b tiles = [1, 2, 2] : (tensor<36x4x16xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
  func.return %v, %y : tensor<4x36x16xf32>, tensor<1x8x8x16xf32>
}

// F(2x2, 3x3) (size = 2): the 4x4 input tile under each 2x2 output tile (16 loads
// at rows 2 th + i), 16 transformed values per tile; the output transform loads 16
// products and stores 2x2 pixels.

// CHECK-LABEL: func.func private @small_tiles_k0_winograd_input(%x: memref<1x10x10x16xf32> {llvm.noalias}, %out: memref<16x16x16xf32> {llvm.noalias}) attributes {qd.kernel = "tg.winograd_input"}
// CHECK:         affine.for %n = 0 to 1 {
// CHECK-NEXT:      affine.for %th = 0 to 4 {
// CHECK-NEXT:        affine.for %tw = 0 to 4 {
// CHECK-NEXT:          affine.for %c = 0 to 16 {
// CHECK-NEXT:            affine.load %x[%n, %th * 2, %tw * 2, %c]
// CHECK-COUNT-14:        affine.load %x
// CHECK-NEXT:            affine.load %x[%n, %th * 2 + 3, %tw * 2 + 3, %c]
// CHECK-NOT:             affine.load
// CHECK:                 affine.store %{{.*}}, %out[%n * 16 + %th * 4 + %tw, 0, %c]
// CHECK-COUNT-14:        affine.store
// CHECK-NEXT:            affine.store %{{.*}}, %out[%n * 16 + %th * 4 + %tw, 15, %c]
// CHECK-NEXT:          } {qd.loop = "c"}

// CHECK-LABEL: func.func private @small_tiles_k1_winograd_output(%m: memref<16x16x16xf32> {llvm.noalias}, %out: memref<1x8x8x16xf32> {llvm.noalias}) attributes {qd.kernel = "tg.winograd_output"}
// CHECK:          affine.for %f = 0 to 16 {
// CHECK-NEXT:       affine.load %m[0, %n * 16 + %th * 4 + %tw, %f]
// CHECK-COUNT-15:   affine.load %m
// CHECK-NOT:        affine.load
// CHECK:            affine.store %{{.*}}, %out[%n, %th * 2, %tw * 2, %f]
// CHECK-NEXT:       affine.store %{{.*}}, %out[%n, %th * 2, %tw * 2 + 1, %f]
// CHECK-NEXT:       affine.store %{{.*}}, %out[%n, %th * 2 + 1, %tw * 2, %f]
// CHECK-NEXT:       affine.store %{{.*}}, %out[%n, %th * 2 + 1, %tw * 2 + 1, %f]
// CHECK-NEXT:     } {qd.loop = "f"}
func.func @small_tiles(%x: tensor<1x10x10x16xf32>, %m: tensor<16x16x16xf32>) -> (tensor<16x16x16xf32>, tensor<1x8x8x16xf32>) {
  %v = tg.winograd_input %x tiles = [4, 4] size = 2 : tensor<1x10x10x16xf32> -> tensor<16x16x16xf32>
  %y = tg.winograd_output %m tiles = [1, 4, 4] size = 2 : (tensor<16x16x16xf32>) -> tensor<1x8x8x16xf32>
  func.return %v, %y : tensor<16x16x16xf32>, tensor<1x8x8x16xf32>
}
