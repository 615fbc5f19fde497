// RUN: qidao-opt %s -p 'tensorize{kernel="k" loop="i" intrinsic="amx_int8"}' | filecheck %s
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_rows" loop="i" intrinsic="amx_int8"}' 2>&1 | filecheck %s --check-prefix=ROWS
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_short" loop="i" intrinsic="amx_int8"}' 2>&1 | filecheck %s --check-prefix=SHORT
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_skew" loop="i" intrinsic="amx_int8"}' 2>&1 | filecheck %s --check-prefix=SKEW

// The CPU intrinsic amx_int8: a 32 x K x 32 block of an int8 matmul whose rhs is
// packed for VNNI ([K/4, N, 4]) becomes AMX tile products: the configuration,
// the four C tiles loaded once, a k loop of 64 bytes a step (two A tiles, two B
// tiles, four tdpbusd), the C tiles stored once. The nest is what
// convert-tg-to-affine makes of tg.matmul_integer with rhs_layout = "vnni".

// CHECK-LABEL: func.func private @k
// CHECK:         amx.tile_config rows = [16, 16, 16, 16, 16, 16, 16, 16] colsb = [64, 64, 64, 64, 64, 64, 64, 64]
// CHECK-COUNT-4: amx.tile_load {{[0-3]}}, %out[%{{.*}}, %{{.*}}] : memref<32x32xi32> rows_dim 0
// CHECK:         affine.for %k = 0 to 32 step 16 {
// CHECK:           amx.tile_load 4, %a[%{{.*}}, %{{.*}}] : memref<32x128xi8> rows_dim 0
// CHECK:           amx.tile_load 5, %a[%{{.*}}, %{{.*}}] : memref<32x128xi8> rows_dim 0
// CHECK:           amx.tile_load 6, %p[%{{.*}}, %{{.*}}, %{{.*}}] : memref<32x32x4xi8> rows_dim 0
// CHECK:           amx.tile_load 7, %p[%{{.*}}, %{{.*}}, %{{.*}}] : memref<32x32x4xi8> rows_dim 0
// CHECK-NEXT:      amx.tile_mul 0, 4, 6
// CHECK-NEXT:      amx.tile_mul 1, 4, 7
// CHECK-NEXT:      amx.tile_mul 2, 5, 6
// CHECK-NEXT:      amx.tile_mul 3, 5, 7
// CHECK-NEXT:    } {qd.loop = "k"}
// CHECK-COUNT-4: amx.tile_store {{[0-3]}}, %out[%{{.*}}, %{{.*}}] : memref<32x32xi32> rows_dim 0
// CHECK-NOT:     qd.loop = "r"
// CHECK-NOT:     qd.loop = "j"
// CHECK-LABEL: func.func private @k_rows
func.func private @k(%a: memref<32x128xi8>, %p: memref<32x32x4xi8>, %out: memref<32x32xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  affine.for %i = 0 to 32 {
    affine.for %k = 0 to 32 {
      affine.for %j = 0 to 32 {
        affine.for %r = 0 to 4 {
          %1 = affine.load %a[%i, %k * 4 + %r] : memref<32x128xi8>
          %2 = arith.extui %1 : i8 to i32
          %3 = affine.load %p[%k, %j, %r] : memref<32x32x4xi8>
          %4 = arith.extsi %3 : i8 to i32
          %5 = affine.load %out[%i, %j] : memref<32x32xi32>
          %6 = arith.muli %2, %4 : i32
          %7 = arith.addi %5, %6 : i32
          affine.store %7, %out[%i, %j] : memref<32x32xi32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// Must not fire: 24 rows are not whole tiles (16 or 32).
// ROWS: TileExtentError: tensorize: loop 'i' in kernel 'k_rows': loop 'i' (i) must run from 0, step 1, without iter_args, 16 or 32 iterations; it runs (0, 24) step 1
func.func private @k_rows(%a: memref<24x64xi8>, %p: memref<16x16x4xi8>, %out: memref<24x16xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  affine.for %i = 0 to 24 {
    affine.for %k = 0 to 16 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 4 {
          %1 = affine.load %a[%i, %k * 4 + %r] : memref<24x64xi8>
          %2 = arith.extui %1 : i8 to i32
          %3 = affine.load %p[%k, %j, %r] : memref<16x16x4xi8>
          %4 = arith.extsi %3 : i8 to i32
          %5 = affine.load %out[%i, %j] : memref<24x16xi32>
          %6 = arith.muli %2, %4 : i32
          %7 = arith.addi %5, %6 : i32
          affine.store %7, %out[%i, %j] : memref<24x16xi32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// Must not fire: 8 groups of four bytes (K = 32) are not a whole tile row (16 groups, 64 bytes).
// SHORT: TileExtentError: tensorize: loop 'i' in kernel 'k_short': loop 'k' (k) must run from 0, step 1, without iter_args, a multiple of 16 iterations; it runs (0, 8) step 1
func.func private @k_short(%a: memref<16x32xi8>, %p: memref<8x16x4xi8>, %out: memref<16x16xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 8 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 4 {
          %1 = affine.load %a[%i, %k * 4 + %r] : memref<16x32xi8>
          %2 = arith.extui %1 : i8 to i32
          %3 = affine.load %p[%k, %j, %r] : memref<8x16x4xi8>
          %4 = arith.extsi %3 : i8 to i32
          %5 = affine.load %out[%i, %j] : memref<16x16xi32>
          %6 = arith.muli %2, %4 : i32
          %7 = arith.addi %5, %6 : i32
          affine.store %7, %out[%i, %j] : memref<16x16xi32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// Must not fire: A read at 4k + 2r is not a row of consecutive bytes.
// SKEW: TileStrideError: tensorize: loop 'i' in kernel 'k_skew': A's index must move with r as [0, 1] per dimension, got [0, 2]
func.func private @k_skew(%a: memref<16x64xi8>, %p: memref<16x16x4xi8>, %out: memref<16x16xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 16 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 4 {
          %1 = affine.load %a[%i, %k * 4 + %r * 2] : memref<16x64xi8>
          %2 = arith.extui %1 : i8 to i32
          %3 = affine.load %p[%k, %j, %r] : memref<16x16x4xi8>
          %4 = arith.extsi %3 : i8 to i32
          %5 = affine.load %out[%i, %j] : memref<16x16xi32>
          %6 = arith.muli %2, %4 : i32
          %7 = arith.addi %5, %6 : i32
          affine.store %7, %out[%i, %j] : memref<16x16xi32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}
