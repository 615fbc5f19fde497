// RUN: qidao-opt %s -p 'tensorize{kernel="k_par" loop="i" intrinsic="amx_int8"}' | filecheck %s
// RUN: qidao-opt %s -p 'tensorize{kernel="k_seq" loop="i" intrinsic="amx_int8"}' | filecheck %s --check-prefix=SEQ
// RUN: qidao-opt %s -p 'tensorize{kernel="k_wide" loop="i" intrinsic="amx_int8"}' | filecheck %s --check-prefix=WIDE

// amx_int8 where cache_write left the block's sums in a buffer of exactly the
// block (32 x 32), zeroed by the nest right before it: the C tiles start as
// tilezero and the nest goes. The configuration runs once per thread: at the top
// of the parallel loop's body (each iteration may run on another thread).

// CHECK-LABEL: func.func private @k_par
// CHECK:         affine.for %j_o = 0 to 2 {
// CHECK-NEXT:      amx.tile_config rows = [16, 16, 16, 16, 16, 16, 16, 16]
// CHECK-NEXT:      %acc = memref.alloca() : memref<32x32xi32>
// CHECK-NOT:       qd.loop = "i_init"
// CHECK-NOT:       amx.tile_config
// CHECK:           amx.tile_zero 0
// CHECK-NEXT:      amx.tile_zero 1
// CHECK-NEXT:      amx.tile_zero 2
// CHECK-NEXT:      amx.tile_zero 3
// CHECK-NOT:       amx.tile_load {{[0-3]}},
// CHECK:           affine.for %k = 0 to 32 step 16 {
// CHECK:           amx.tile_store 3, %acc
// CHECK:         } {qd.loop = "j_o", qd.parallel}
func.func private @k_par(%a: memref<32x128xi8>, %p: memref<32x64x4xi8>, %out: memref<32x64xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  %z = arith.constant 0 : i32
  affine.for %j_o = 0 to 2 {
    %acc = memref.alloca() : memref<32x32xi32>
    affine.for %i_init = 0 to 32 {
      affine.for %j_init = 0 to 32 {
        affine.store %z, %acc[%i_init, %j_init] : memref<32x32xi32>
      } {qd.loop = "j_init"}
    } {qd.loop = "i_init"}
    affine.for %i = 0 to 32 {
        affine.for %k = 0 to 32 {
          affine.for %j = 0 to 32 {
            affine.for %r = 0 to 4 {
              %1 = affine.load %a[%i, %k * 4 + %r] : memref<32x128xi8>
              %2 = arith.extui %1 : i8 to i32
              %3 = affine.load %p[%k, %j_o * 32 + %j, %r] : memref<32x64x4xi8>
              %4 = arith.extsi %3 : i8 to i32
              %5 = affine.load %acc[%i, %j] : memref<32x32xi32>
              %6 = arith.muli %2, %4 : i32
              %7 = arith.addi %5, %6 : i32
              affine.store %7, %acc[%i, %j] : memref<32x32xi32>
            } {qd.loop = "r"}
          } {qd.loop = "j"}
        } {qd.loop = "k"}
    } {qd.loop = "i"}
    affine.for %i_wb = 0 to 32 {
      affine.for %j_wb = 0 to 32 {
        %v = affine.load %acc[%i_wb, %j_wb] : memref<32x32xi32>
        affine.store %v, %out[%i_wb, %j_o * 32 + %j_wb] : memref<32x64xi32>
      } {qd.loop = "j_wb"}
    } {qd.loop = "i_wb"}
  } {qd.loop = "j_o", qd.parallel}
  func.return
}

// Without a parallel loop the configuration goes to the top of the kernel.

// SEQ-LABEL: func.func private @k_seq
// SEQ-NEXT:    amx.tile_config
// SEQ-NEXT:    %z = arith.constant 0 : i32
// SEQ:         amx.tile_zero 0
func.func private @k_seq(%a: memref<32x128xi8>, %p: memref<32x64x4xi8>, %out: memref<32x64xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  %z = arith.constant 0 : i32
  affine.for %j_o = 0 to 2 {
    %acc = memref.alloca() : memref<32x32xi32>
    affine.for %i_init = 0 to 32 {
      affine.for %j_init = 0 to 32 {
        affine.store %z, %acc[%i_init, %j_init] : memref<32x32xi32>
      } {qd.loop = "j_init"}
    } {qd.loop = "i_init"}
    affine.for %i = 0 to 32 {
        affine.for %k = 0 to 32 {
          affine.for %j = 0 to 32 {
            affine.for %r = 0 to 4 {
              %1 = affine.load %a[%i, %k * 4 + %r] : memref<32x128xi8>
              %2 = arith.extui %1 : i8 to i32
              %3 = affine.load %p[%k, %j_o * 32 + %j, %r] : memref<32x64x4xi8>
              %4 = arith.extsi %3 : i8 to i32
              %5 = affine.load %acc[%i, %j] : memref<32x32xi32>
              %6 = arith.muli %2, %4 : i32
              %7 = arith.addi %5, %6 : i32
              affine.store %7, %acc[%i, %j] : memref<32x32xi32>
            } {qd.loop = "r"}
          } {qd.loop = "j"}
        } {qd.loop = "k"}
    } {qd.loop = "i"}
    affine.for %i_wb = 0 to 32 {
      affine.for %j_wb = 0 to 32 {
        %v = affine.load %acc[%i_wb, %j_wb] : memref<32x32xi32>
        affine.store %v, %out[%i_wb, %j_o * 32 + %j_wb] : memref<32x64xi32>
      } {qd.loop = "j_wb"}
    } {qd.loop = "i_wb"}
  } {qd.loop = "j_o"}
  func.return
}

// Must not zero the tiles: the buffer is wider than the block (32 x 64), so the
// nest zeroes columns the block does not cover; the C tiles are loaded.

// WIDE-LABEL: func.func private @k_wide
// WIDE:         qd.loop = "i_init"
// WIDE-NOT:     amx.tile_zero
// WIDE:         amx.tile_load 0, %acc
func.func private @k_wide(%a: memref<32x128xi8>, %p: memref<32x64x4xi8>, %out: memref<32x64xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  %z = arith.constant 0 : i32
  affine.for %j_o = 0 to 2 {
    %acc = memref.alloca() : memref<32x64xi32>
    affine.for %i_init = 0 to 32 {
      affine.for %j_init = 0 to 32 {
        affine.store %z, %acc[%i_init, %j_init] : memref<32x64xi32>
      } {qd.loop = "j_init"}
    } {qd.loop = "i_init"}
    affine.for %i = 0 to 32 {
        affine.for %k = 0 to 32 {
          affine.for %j = 0 to 32 {
            affine.for %r = 0 to 4 {
              %1 = affine.load %a[%i, %k * 4 + %r] : memref<32x128xi8>
              %2 = arith.extui %1 : i8 to i32
              %3 = affine.load %p[%k, %j_o * 32 + %j, %r] : memref<32x64x4xi8>
              %4 = arith.extsi %3 : i8 to i32
              %5 = affine.load %acc[%i, %j] : memref<32x64xi32>
              %6 = arith.muli %2, %4 : i32
              %7 = arith.addi %5, %6 : i32
              affine.store %7, %acc[%i, %j] : memref<32x64xi32>
            } {qd.loop = "r"}
          } {qd.loop = "j"}
        } {qd.loop = "k"}
    } {qd.loop = "i"}
    affine.for %i_wb = 0 to 32 {
      affine.for %j_wb = 0 to 32 {
        %v = affine.load %acc[%i_wb, %j_wb] : memref<32x64xi32>
        affine.store %v, %out[%i_wb, %j_o * 32 + %j_wb] : memref<32x64xi32>
      } {qd.loop = "j_wb"}
    } {qd.loop = "i_wb"}
  } {qd.loop = "j_o"}
  func.return
}
