// RUN: qidao-opt %s -p 'tensorize{kernel="k" loop="i" intrinsic="amx_bf16"}' | filecheck %s
// RUN: qidao-opt %s -p 'tensorize{kernel="k_zero" loop="i" intrinsic="amx_bf16"}' | filecheck %s --check-prefix=ZERO
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_rows" loop="i" intrinsic="amx_bf16"}' 2>&1 | filecheck %s --check-prefix=ROWS
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_short" loop="i" intrinsic="amx_bf16"}' 2>&1 | filecheck %s --check-prefix=SHORT
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_skew" loop="i" intrinsic="amx_bf16"}' 2>&1 | filecheck %s --check-prefix=SKEW
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_panel" loop="i" intrinsic="amx_bf16"}' 2>&1 | filecheck %s --check-prefix=PANEL
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_int8" loop="i" intrinsic="amx_bf16"}' 2>&1 | filecheck %s --check-prefix=INT8

// The CPU intrinsic amx_bf16: a 32 x K x 32 block of a bfloat16 matmul whose rhs
// is packed in panels ([N/w, K/2, w, 2]) becomes AMX tile products: the
// configuration, the four float32 C tiles loaded once, a k loop of 16 pairs (64
// bytes) a step (two A tiles, two B tiles, four tdpbf16ps), the C tiles stored
// once. The nest is what convert-tg-to-affine makes of tg.matmul_bf16 with
// rhs_layout = "vnni_panels" (each bfloat16 widened from its i16 bits), here
// the second of two panels of 32 columns.

// CHECK-LABEL: func.func private @k
// CHECK:         amx.tile_config rows = [16, 16, 16, 16, 16, 16, 16, 16] colsb = [64, 64, 64, 64, 64, 64, 64, 64]
// CHECK-COUNT-4: amx.tile_load {{[0-3]}}, %out[%{{.*}}, %{{.*}}] : memref<32x32xf32> rows_dim 0
// CHECK:         affine.for %k = 0 to 32 step 16 {
// CHECK:           amx.tile_load 4, %a[%{{.*}}, %{{.*}}] : memref<32x64xi16> rows_dim 0
// CHECK:           amx.tile_load 5, %a[%{{.*}}, %{{.*}}] : memref<32x64xi16> rows_dim 0
// CHECK:           amx.tile_load 6, %p[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x32x32x2xi16> rows_dim 1
// CHECK:           amx.tile_load 7, %p[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<2x32x32x2xi16> rows_dim 1
// CHECK-NEXT:      amx.tile_mulf 0, 4, 6
// CHECK-NEXT:      amx.tile_mulf 1, 4, 7
// CHECK-NEXT:      amx.tile_mulf 2, 5, 6
// CHECK-NEXT:      amx.tile_mulf 3, 5, 7
// CHECK-NEXT:    } {qd.loop = "k"}
// CHECK-COUNT-4: amx.tile_store {{[0-3]}}, %out[%{{.*}}, %{{.*}}] : memref<32x32xf32> rows_dim 0
// CHECK-NOT:     amx.tile_mul
// CHECK-NOT:     qd.loop = "r"
// CHECK-NOT:     qd.loop = "j"
// CHECK-LABEL: func.func private @k_zero
func.func private @k(%a: memref<32x64xi16>, %p: memref<2x32x32x2xi16>, %out: memref<32x32xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 32 {
    affine.for %k = 0 to 32 {
      affine.for %j = 0 to 32 {
        affine.for %r = 0 to 2 {
          %1 = affine.load %a[%i, %k * 2 + %r] : memref<32x64xi16>
          %2 = arith.extui %1 : i16 to i32
          %3 = arith.shli %2, %s : i32
          %4 = arith.bitcast %3 : i32 to f32
          %5 = affine.load %p[1, %k, %j, %r] : memref<2x32x32x2xi16>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<32x32xf32>
          %10 = arith.mulf %4, %8 : f32
          %11 = arith.addf %9, %10 : f32
          affine.store %11, %out[%i, %j] : memref<32x32xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// Where cache_write left the block's sums in a buffer of exactly the block,
// zeroed (0.0) by the nest right before it: the C tiles start as tilezero and
// the nest goes.

// ZERO-LABEL: func.func private @k_zero
// ZERO:         amx.tile_config
// ZERO:         %acc = memref.alloca() : memref<32x32xf32>
// ZERO-NOT:     qd.loop = "i_init"
// ZERO:         amx.tile_zero 0
// ZERO-NEXT:    amx.tile_zero 1
// ZERO-NEXT:    amx.tile_zero 2
// ZERO-NEXT:    amx.tile_zero 3
// ZERO-NOT:     amx.tile_load {{[0-3]}},
// ZERO:         affine.for %k = 0 to 16 step 16 {
// ZERO:           amx.tile_mulf 3, 5, 7
// ZERO:         amx.tile_store 3, %acc
func.func private @k_zero(%a: memref<32x32xi16>, %p: memref<2x16x32x2xi16>, %out: memref<32x64xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %z = arith.constant 0.000000e+00 : f32
  %s = arith.constant 16 : i32
  affine.for %j_o = 0 to 2 {
    %acc = memref.alloca() : memref<32x32xf32>
    affine.for %i_init = 0 to 32 {
      affine.for %j_init = 0 to 32 {
        affine.store %z, %acc[%i_init, %j_init] : memref<32x32xf32>
      } {qd.loop = "j_init"}
    } {qd.loop = "i_init"}
    affine.for %i = 0 to 32 {
      affine.for %k = 0 to 16 {
        affine.for %j = 0 to 32 {
          affine.for %r = 0 to 2 {
            %1 = affine.load %a[%i, %k * 2 + %r] : memref<32x32xi16>
            %2 = arith.extui %1 : i16 to i32
            %3 = arith.shli %2, %s : i32
            %4 = arith.bitcast %3 : i32 to f32
            %5 = affine.load %p[%j_o, %k, %j, %r] : memref<2x16x32x2xi16>
            %6 = arith.extui %5 : i16 to i32
            %7 = arith.shli %6, %s : i32
            %8 = arith.bitcast %7 : i32 to f32
            %9 = affine.load %acc[%i, %j] : memref<32x32xf32>
            %10 = arith.mulf %4, %8 : f32
            %11 = arith.addf %9, %10 : f32
            affine.store %11, %acc[%i, %j] : memref<32x32xf32>
          } {qd.loop = "r"}
        } {qd.loop = "j"}
      } {qd.loop = "k"}
    } {qd.loop = "i"}
    affine.for %i_wb = 0 to 32 {
      affine.for %j_wb = 0 to 32 {
        %v = affine.load %acc[%i_wb, %j_wb] : memref<32x32xf32>
        affine.store %v, %out[%i_wb, %j_o * 32 + %j_wb] : memref<32x64xf32>
      } {qd.loop = "j_wb"}
    } {qd.loop = "i_wb"}
  } {qd.loop = "j_o"}
  func.return
}

// Must not fire: 24 rows are not whole tiles (16 or 32).
// ROWS: TileExtentError: tensorize: loop 'i' in kernel 'k_rows': loop 'i' (i) must run from 0, step 1, without iter_args, 16 or 32 iterations; it runs (0, 24) step 1
func.func private @k_rows(%a: memref<24x32xi16>, %p: memref<1x16x16x2xi16>, %out: memref<24x16xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 24 {
    affine.for %k = 0 to 16 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 2 {
          %1 = affine.load %a[%i, %k * 2 + %r] : memref<24x32xi16>
          %2 = arith.extui %1 : i16 to i32
          %3 = arith.shli %2, %s : i32
          %4 = arith.bitcast %3 : i32 to f32
          %5 = affine.load %p[0, %k, %j, %r] : memref<1x16x16x2xi16>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<24x16xf32>
          %10 = arith.mulf %4, %8 : f32
          %11 = arith.addf %9, %10 : f32
          affine.store %11, %out[%i, %j] : memref<24x16xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// Must not fire: 8 pairs (K = 16) are not a whole tile row (16 pairs, 64 bytes).
// SHORT: TileExtentError: tensorize: loop 'i' in kernel 'k_short': loop 'k' (k) must run from 0, step 1, without iter_args, a multiple of 16 iterations; it runs (0, 8) step 1
func.func private @k_short(%a: memref<16x16xi16>, %p: memref<1x8x16x2xi16>, %out: memref<16x16xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 8 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 2 {
          %1 = affine.load %a[%i, %k * 2 + %r] : memref<16x16xi16>
          %2 = arith.extui %1 : i16 to i32
          %3 = arith.shli %2, %s : i32
          %4 = arith.bitcast %3 : i32 to f32
          %5 = affine.load %p[0, %k, %j, %r] : memref<1x8x16x2xi16>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<16x16xf32>
          %10 = arith.mulf %4, %8 : f32
          %11 = arith.addf %9, %10 : f32
          affine.store %11, %out[%i, %j] : memref<16x16xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// Must not fire: A read at 4k + r (int8's groups of four) is not a row of pairs.
// SKEW: TileStrideError: tensorize: loop 'i' in kernel 'k_skew': A's index must move with k as [0, 2] per dimension, got [0, 4]
func.func private @k_skew(%a: memref<16x64xi16>, %p: memref<1x16x16x2xi16>, %out: memref<16x16xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 16 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 2 {
          %1 = affine.load %a[%i, %k * 4 + %r] : memref<16x64xi16>
          %2 = arith.extui %1 : i16 to i32
          %3 = arith.shli %2, %s : i32
          %4 = arith.bitcast %3 : i32 to f32
          %5 = affine.load %p[0, %k, %j, %r] : memref<1x16x16x2xi16>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<16x16xf32>
          %10 = arith.mulf %4, %8 : f32
          %11 = arith.addf %9, %10 : f32
          affine.store %11, %out[%i, %j] : memref<16x16xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// Must not fire: a panel whose pairs of rows are 64 i16 apart, not 2 w = 32 (a
// view of a wider rhs): a tile row is not 16 columns' 64 contiguous bytes
// followed by the next pair's.
// PANEL: TileStrideError: tensorize: loop 'i' in kernel 'k_panel': P's last three dimensions must be [K/2, N, 2] with strides [2 N, 2, 1] (a tile row is 16 columns' 64 contiguous bytes), got memref<16x16x2xi16, strided<[64, 2, 1]>>
func.func private @k_panel(%a: memref<16x32xi16>, %p: memref<16x16x2xi16, strided<[64, 2, 1]>>, %out: memref<16x16xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 16 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 2 {
          %1 = affine.load %a[%i, %k * 2 + %r] : memref<16x32xi16>
          %2 = arith.extui %1 : i16 to i32
          %3 = arith.shli %2, %s : i32
          %4 = arith.bitcast %3 : i32 to f32
          %5 = affine.load %p[%k, %j, %r] : memref<16x16x2xi16, strided<[64, 2, 1]>>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<16x16xf32>
          %10 = arith.mulf %4, %8 : f32
          %11 = arith.addf %9, %10 : f32
          affine.store %11, %out[%i, %j] : memref<16x16xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// Must not fire: an int8 product (amx_int8's) under amx_bf16.
// INT8: NotMatmulTileError: tensorize: loop 'i' in kernel 'k_int8': the inner loop's body must be C[..] = addf(C[..], mulf(bf16(A[..]), bf16(P[..]))) and nothing else
func.func private @k_int8(%a: memref<16x64xi8>, %p: memref<16x16x4xi8>, %out: memref<16x16xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  affine.for %i = 0 to 16 {
    affine.for %k = 0 to 16 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 2 {
          %1 = affine.load %a[%i, %k * 4 + %r] : memref<16x64xi8>
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
