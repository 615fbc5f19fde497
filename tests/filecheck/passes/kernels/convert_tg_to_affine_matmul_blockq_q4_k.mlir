// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s

// A Q4_K weight is super-blocks of 256 elements (144 bytes): %blk runs over them,
// and the eight sub-blocks share each output's 32 lanes (element e of any
// sub-block goes to lane e, the x it multiplies is at 32 j + e). Per super-block its float16 d (bytes 0, 1)
// and dmin (2, 3); per sub-block j of 32 (eight loops, %e0 .. %e7) its 6-bit
// scale and min from the 12 bytes at 4 (j < 4: the low 6 bits of bytes 4 + j
// and 8 + j; j >= 4: the nibbles of byte 8 + j below the top 2 bits of bytes
// j and 4 + j), and its elements from the 32 bytes at 16 + 32 (j / 2), the low
// nibble for an even j, the high one for an odd: d * sc * q - dmin * m.

// CHECK-LABEL: func.func private @main_k0_matmul_blockq(%x: memref<1x256xf32> {llvm.noalias}, %w: memref<8x1x144xi8> {llvm.noalias}, %out: memref<1x8xf32> {llvm.noalias})
// CHECK:         %lanes = memref.alloc() : memref<8x32xf32>
// CHECK:           affine.for %e_init = 0 to 32 {
// CHECK:           affine.for %blk = 0 to 1 {
// CHECK:             affine.load %w[%n, %blk, 2] : memref<8x1x144xi8>
// CHECK:             affine.load %w[%n, %blk, 3] : memref<8x1x144xi8>
// Sub-block 0: its scale is the low 6 bits of byte 4, its min of byte 8.
// CHECK:             %[[SC0:.*]] = affine.load %w[%n, %blk, 4] : memref<8x1x144xi8>
// CHECK:             arith.andi %{{.*}}, %{{.*}} : i32
// CHECK:             affine.load %w[%n, %blk, 8] : memref<8x1x144xi8>
// CHECK:             affine.for %e0 = 0 to 32 {
// CHECK-NEXT:          %[[B0:.*]] = affine.load %w[%n, %blk, %e0 + 16] : memref<8x1x144xi8>
// CHECK:               affine.load %x[%i, %blk * 256 + %e0] : memref<1x256xf32>
// CHECK:               affine.load %lanes[%n, %e0] : memref<8x32xf32>
// Sub-block 1: the high nibbles of the same 32 bytes, x at 32 .. 63, lanes 0 .. 31.
// CHECK:             affine.for %e1 = 0 to 32 {
// CHECK-NEXT:          %[[B1:.*]] = affine.load %w[%n, %blk, %e1 + 16] : memref<8x1x144xi8>
// CHECK-NEXT:          %[[W1:.*]] = arith.extui %[[B1]] : i8 to i32
// CHECK-NEXT:          arith.shrui %[[W1]], %{{.*}} : i32
// CHECK:               affine.load %x[%i, %blk * 256 + %e1 + 32] : memref<1x256xf32>
// CHECK:               affine.load %lanes[%n, %e1] : memref<8x32xf32>
// Sub-block 4: its scale joins the low nibble of byte 12 and the top bits of byte 4.
// CHECK:             affine.load %w[%n, %blk, 12] : memref<8x1x144xi8>
// CHECK:             affine.load %w[%n, %blk, 4] : memref<8x1x144xi8>
// CHECK:             affine.for %e4 = 0 to 32 {
// CHECK-NEXT:          affine.load %w[%n, %blk, %e4 + 80] : memref<8x1x144xi8>
// CHECK:             affine.for %e7 = 0 to 32 {
// CHECK-NEXT:          affine.load %w[%n, %blk, %e7 + 112] : memref<8x1x144xi8>
// CHECK:               affine.load %x[%i, %blk * 256 + %e7 + 224] : memref<1x256xf32>
// CHECK:               affine.load %lanes[%n, %e7] : memref<8x32xf32>
// CHECK:           affine.for %e_sum = 0 to 32 iter_args
func.func @main(%x: tensor<1x256xf32>, %w: tensor<8x1x144xi8>) -> tensor<1x8xf32> attributes {qd.input_names = ["x", "w"], qd.output_names = ["y"]} {
  %y = tg.matmul_blockq %x, %w encoding = "Q4_K" : (tensor<1x256xf32>, tensor<8x1x144xi8>) -> tensor<1x8xf32>
  func.return %y : tensor<1x8xf32>
}
