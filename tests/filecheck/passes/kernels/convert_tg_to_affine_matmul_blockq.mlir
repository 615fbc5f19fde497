// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s
// RUN: qidao-opt %s -p convert-tg-to-affine,lower-affine,convert-scf-to-cf,convert-to-llvm | filecheck %s --check-prefix=LLVM

// tg.matmul_blockq lowers to one kernel that reads the weight's bytes where they
// are: the loop over the weight's rows %n outermost, each output's 32 lanes
// (a row of %lanes per %n) zeroed, then per block its float16 scale from bytes
// 0 and 1 (joined, bitcast, widened) times each element, times x, added to the
// element's lane; the lanes summed last. Q8_0: a signed byte at 2 + e. Q4_0:
// two runs of 16, the low and the high nibbles of bytes 2 + e, less 8. With
// rows of x in tiles of 8, 4 or 2 (@tiled), each block is decoded once into
// %decoded and multiplied with the tile's rows.

// CHECK-LABEL: func.func private @q8_k0_matmul_blockq(%x: memref<1x64xf32> {llvm.noalias}, %w: memref<16x2x34xi8> {llvm.noalias}, %out: memref<1x16xf32> {llvm.noalias})
// CHECK:         %lanes = memref.alloc() : memref<16x32xf32>
// CHECK-NEXT:    affine.for %n = 0 to 16 {
// CHECK-NEXT:      affine.for %i = 0 to 1 {
// CHECK-NEXT:        affine.for %e_init = 0 to 32 {
// CHECK-NEXT:          affine.store %{{.*}}, %lanes[%n, %e_init] : memref<16x32xf32>
// CHECK:             affine.for %blk = 0 to 2 {
// CHECK-NEXT:          %[[LO:.*]] = affine.load %w[%n, %blk, 0] : memref<16x2x34xi8>
// CHECK-NEXT:          %[[LO16:.*]] = arith.extui %[[LO]] : i8 to i16
// CHECK-NEXT:          %[[HI:.*]] = affine.load %w[%n, %blk, 1] : memref<16x2x34xi8>
// CHECK-NEXT:          %[[HI16:.*]] = arith.extui %[[HI]] : i8 to i16
// CHECK-NEXT:          %[[SH:.*]] = arith.shli %[[HI16]], %{{.*}} : i16
// CHECK-NEXT:          %[[BITS:.*]] = arith.ori %[[LO16]], %[[SH]] : i16
// CHECK-NEXT:          %[[H:.*]] = arith.bitcast %[[BITS]] : i16 to f16
// CHECK-NEXT:          %[[D:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK-NEXT:          affine.for %e = 0 to 32 {
// CHECK-NEXT:            %[[Q:.*]] = affine.load %w[%n, %blk, %e + 2] : memref<16x2x34xi8>
// CHECK-NEXT:            %[[QF:.*]] = arith.sitofp %[[Q]] : i8 to f32
// CHECK-NEXT:            %[[WT:.*]] = arith.mulf %[[D]], %[[QF]] : f32
// CHECK-NEXT:            %[[X:.*]] = affine.load %x[%i, %blk * 32 + %e] : memref<1x64xf32>
// CHECK-NEXT:            %[[L:.*]] = affine.load %lanes[%n, %e] : memref<16x32xf32>
// CHECK-NEXT:            %[[P:.*]] = arith.mulf %[[X]], %[[WT]] : f32
// CHECK-NEXT:            %[[S:.*]] = arith.addf %[[L]], %[[P]] : f32
// CHECK-NEXT:            affine.store %[[S]], %lanes[%n, %e] : memref<16x32xf32>
// CHECK:             %[[T:.*]] = affine.for %e_sum = 0 to 32 iter_args
// CHECK:             affine.store %[[T]], %out[%i, %n] : memref<1x16xf32>
// CHECK:         memref.dealloc %lanes : memref<16x32xf32>
// LLVM-LABEL: llvm.func @q8_k0_matmul_blockq
// LLVM:       llvm.bitcast %{{.*}} : i16 to f16
// LLVM:       llvm.fpext %{{.*}} : f16 to f32
func.func @q8(%x: tensor<1x64xf32>, %w: tensor<16x2x34xi8>) -> tensor<1x16xf32> {
  %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<1x64xf32>, tensor<16x2x34xi8>) -> tensor<1x16xf32>
  func.return %y : tensor<1x16xf32>
}

// Q4_0 with a batch dimension: the low nibbles to lanes 0-15, the high ones
// (shifted right by 4) to lanes 16-31, each less 8; x indexed [b0, i, ...].
// CHECK-LABEL: func.func private @q4_k0_matmul_blockq(%x: memref<3x1x32xf32> {llvm.noalias}, %w: memref<8x1x18xi8> {llvm.noalias}, %out: memref<3x1x8xf32> {llvm.noalias})
// CHECK:         affine.for %n = 0 to 8 {
// CHECK-NEXT:      affine.for %b0 = 0 to 3 {
// CHECK-NEXT:        affine.for %i = 0 to 1 {
// CHECK:               affine.for %e_lo = 0 to 16 {
// CHECK-NEXT:            %[[B:.*]] = affine.load %w[%n, %blk, %e_lo + 2] : memref<8x1x18xi8>
// CHECK-NEXT:            %[[W:.*]] = arith.extui %[[B]] : i8 to i32
// CHECK-NEXT:            %[[N:.*]] = arith.andi %[[W]], %{{.*}} : i32
// CHECK-NEXT:            %{{.*}} = arith.subi %[[N]], %{{.*}} : i32
// CHECK:                 affine.load %x[%b0, %i, %blk * 32 + %e_lo] : memref<3x1x32xf32>
// CHECK:                 affine.store %{{.*}}, %lanes[%n, %e_lo] : memref<8x32xf32>
// CHECK:               affine.for %e_hi = 0 to 16 {
// CHECK-NEXT:            %[[B2:.*]] = affine.load %w[%n, %blk, %e_hi + 2] : memref<8x1x18xi8>
// CHECK-NEXT:            %[[W2:.*]] = arith.extui %[[B2]] : i8 to i32
// CHECK-NEXT:            %[[S2:.*]] = arith.shrui %[[W2]], %{{.*}} : i32
// CHECK-NEXT:            %[[N2:.*]] = arith.andi %[[S2]], %{{.*}} : i32
// CHECK:                 affine.load %x[%b0, %i, %blk * 32 + %e_hi + 16] : memref<3x1x32xf32>
// CHECK:                 affine.store %{{.*}}, %lanes[%n, %e_hi + 16] : memref<8x32xf32>
// CHECK:             affine.store %{{.*}}, %out[%b0, %i, %n] : memref<3x1x8xf32>
func.func @q4(%x: tensor<3x1x32xf32>, %w: tensor<8x1x18xi8>) -> tensor<3x1x8xf32> {
  %y = tg.matmul_blockq %x, %w encoding = "Q4_0" : (tensor<3x1x32xf32>, tensor<8x1x18xi8>) -> tensor<3x1x8xf32>
  func.return %y : tensor<3x1x8xf32>
}

// Eight rows of x: a tile of 8 (%i_o), each block decoded once into a row of
// %decoded, then the tile's rows times it (%i_i, %e_mul), a lane row each.
// CHECK-LABEL: func.func private @tiled_k0_matmul_blockq(%x: memref<8x64xf32> {llvm.noalias}, %w: memref<4x2x34xi8> {llvm.noalias}, %out: memref<8x4xf32> {llvm.noalias})
// CHECK:         %lanes = memref.alloc() : memref<4x8x32xf32>
// CHECK-NEXT:    %decoded = memref.alloc() : memref<4x32xf32>
// CHECK-NEXT:    affine.for %n = 0 to 4 {
// CHECK-NEXT:      affine.for %i_o = 0 to 1 {
// CHECK:             affine.store %{{.*}}, %lanes[%n, %i_init, %e_init] : memref<4x8x32xf32>
// CHECK:             affine.for %e = 0 to 32 {
// CHECK-NEXT:          %[[Q:.*]] = affine.load %w[%n, %blk, %e + 2] : memref<4x2x34xi8>
// CHECK-NEXT:          %[[QF:.*]] = arith.sitofp %[[Q]] : i8 to f32
// CHECK-NEXT:          %[[WT:.*]] = arith.mulf %{{.*}}, %[[QF]] : f32
// CHECK-NEXT:          affine.store %[[WT]], %decoded[%n, %e] : memref<4x32xf32>
// CHECK:             affine.for %i_i = 0 to 8 {
// CHECK-NEXT:          affine.for %e_mul = 0 to 32 {
// CHECK-NEXT:            %[[X:.*]] = affine.load %x[%i_o * 8 + %i_i, %blk * 32 + %e_mul] : memref<8x64xf32>
// CHECK-NEXT:            %[[D:.*]] = affine.load %decoded[%n, %e_mul] : memref<4x32xf32>
// CHECK-NEXT:            %[[L:.*]] = affine.load %lanes[%n, %i_i, %e_mul] : memref<4x8x32xf32>
// CHECK-NEXT:            %[[P:.*]] = arith.mulf %[[X]], %[[D]] : f32
// CHECK-NEXT:            %[[S:.*]] = arith.addf %[[L]], %[[P]] : f32
// CHECK-NEXT:            affine.store %[[S]], %lanes[%n, %i_i, %e_mul] : memref<4x8x32xf32>
// CHECK:             affine.for %i_sum = 0 to 8 {
// CHECK:               affine.store %{{.*}}, %out[%i_o * 8 + %i_sum, %n] : memref<8x4xf32>
func.func @tiled(%x: tensor<8x64xf32>, %w: tensor<4x2x34xi8>) -> tensor<8x4xf32> {
  %y = tg.matmul_blockq %x, %w encoding = "Q8_0" : (tensor<8x64xf32>, tensor<4x2x34xi8>) -> tensor<8x4xf32>
  func.return %y : tensor<8x4xf32>
}
