// RUN: qidao-opt %s -p 'tensorize{kernel="k" loop="j" intrinsic="avx512_bf16"}' | filecheck %s
// RUN: qidao-opt %s -p 'tensorize{kernel="k_swapped" loop="j" intrinsic="avx512_bf16"}' | filecheck %s --check-prefix=SWAPPED
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_float" loop="j" intrinsic="avx512_bf16"}' 2>&1 | filecheck %s --check-prefix=FLOAT
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_rows" loop="j" intrinsic="avx512_bf16"}' 2>&1 | filecheck %s --check-prefix=ROWS
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_quad" loop="j" intrinsic="avx512_bf16"}' 2>&1 | filecheck %s --check-prefix=QUAD
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_narrow" loop="j" intrinsic="avx512_bf16"}' 2>&1 | filecheck %s --check-prefix=NARROW

// The CPU intrinsic avx512_bf16: the 16 x 2 block j, r of a bfloat16 matmul whose
// rhs is packed in panels ([N/w, K/2, w, 2]) becomes one x86vector.avx512.dot
// (vdpbf16ps); the loops are replaced. The nest is what convert-tg-to-affine
// makes of tg.matmul_bf16 with rhs_layout = "vnni_panels": each bfloat16 widened
// from its i16 bits (bitcast(shli(extui(x), 16))).

// CHECK-LABEL: func.func private @k
// CHECK:         affine.for %k = 0 to 4 {
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[AI:.*]] = affine.apply affine_map<()[s0, s1, s2] -> (s0)> ()[%i, %k, %[[ZERO]]]
// CHECK-NEXT:      %[[AK:.*]] = affine.apply affine_map<()[s0, s1, s2] -> (((s1 * 2) + s2))> ()[%i, %k, %[[ZERO]]]
// CHECK:           %[[A:.*]] = vector.load %a[%[[AI]], %[[AK]]] : memref<2x8xi16>, vector<2xi16>
// CHECK-NEXT:      %[[B:.*]] = vector.load %p[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x4x16x2xi16>, vector<32xi16>
// CHECK-NEXT:      %[[C:.*]] = vector.load %out[%{{.*}}, %{{.*}}] : memref<2x16xf32>, vector<16xf32>
// CHECK-NEXT:      %[[D:.*]] = x86vector.avx512.dot %[[C]], %[[A]], %[[B]] : vector<16xf32>, vector<2xi16>, vector<32xi16> -> vector<16xf32>
// CHECK-NEXT:      vector.store %[[D]], %out[%{{.*}}, %{{.*}}] : memref<2x16xf32>, vector<16xf32>
// CHECK-NEXT:    } {qd.loop = "k"}
// CHECK-NOT:     qd.loop = "r"
// CHECK-NOT:     arith.mulf
// CHECK-LABEL: func.func private @k_swapped
func.func private @k(%a: memref<2x8xi16>, %p: memref<1x4x16x2xi16>, %out: memref<2x16xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 2 {
    affine.for %k = 0 to 4 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 2 {
          %1 = affine.load %a[%i, %k * 2 + %r] : memref<2x8xi16>
          %2 = arith.extui %1 : i16 to i32
          %3 = arith.shli %2, %s : i32
          %4 = arith.bitcast %3 : i32 to f32
          %5 = affine.load %p[0, %k, %j, %r] : memref<1x4x16x2xi16>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<2x16xf32>
          %10 = arith.mulf %4, %8 : f32
          %11 = arith.addf %9, %10 : f32
          affine.store %11, %out[%i, %j] : memref<2x16xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}


// The operands of the product and of the sum in the other order: the rhs is
// the one that moves with the columns (j), whichever side of the product.

// SWAPPED-LABEL: func.func private @k_swapped
// SWAPPED:         %[[A:.*]] = vector.load %a[%{{.*}}, %{{.*}}] : memref<2x8xi16>, vector<2xi16>
// SWAPPED-NEXT:    %[[B:.*]] = vector.load %p[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x4x16x2xi16>, vector<32xi16>
// SWAPPED-NEXT:    %[[C:.*]] = vector.load %out[%{{.*}}, %{{.*}}] : memref<2x16xf32>, vector<16xf32>
// SWAPPED-NEXT:    x86vector.avx512.dot %[[C]], %[[A]], %[[B]] : vector<16xf32>, vector<2xi16>, vector<32xi16> -> vector<16xf32>
// SWAPPED-NOT:     qd.loop = "r"
// SWAPPED-LABEL: func.func private @k_float
func.func private @k_swapped(%a: memref<2x8xi16>, %p: memref<1x4x16x2xi16>, %out: memref<2x16xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 2 {
    affine.for %k = 0 to 4 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 2 {
          %5 = affine.load %p[0, %k, %j, %r] : memref<1x4x16x2xi16>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %1 = affine.load %a[%i, %k * 2 + %r] : memref<2x8xi16>
          %2 = arith.extui %1 : i16 to i32
          %3 = arith.shli %2, %s : i32
          %4 = arith.bitcast %3 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<2x16xf32>
          %10 = arith.mulf %8, %4 : f32
          %11 = arith.addf %10, %9 : f32
          affine.store %11, %out[%i, %j] : memref<2x16xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}


// Must not fire: a float32 lhs (no bfloat16 widened from its bits).

// FLOAT: TileDtypeError: tensorize: loop 'j' in kernel 'k_float': the product must be of two bfloat16s widened from their i16 bits (bitcast(shli(extui(x), 16)) to f32): vdpbf16ps's operands
func.func private @k_float(%a: memref<2x8xf32>, %p: memref<1x4x16x2xi16>, %out: memref<2x16xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 2 {
    affine.for %k = 0 to 4 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 2 {
          %4 = affine.load %a[%i, %k * 2 + %r] : memref<2x8xf32>
          %5 = affine.load %p[0, %k, %j, %r] : memref<1x4x16x2xi16>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<2x16xf32>
          %10 = arith.mulf %4, %8 : f32
          %11 = arith.addf %9, %10 : f32
          affine.store %11, %out[%i, %j] : memref<2x16xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}


// Must not fire: the rhs in its own layout (K x N): the 16 columns of a pair of
// rows are not 64 contiguous bytes.

// ROWS: TileStrideError: tensorize: loop 'j' in kernel 'k_rows': P's index must move as (j, r) = [(1, 0), (0, 1)] per dimension, got [(0, 1), (1, 0)]
func.func private @k_rows(%a: memref<2x8xi16>, %b: memref<8x16xi16>, %out: memref<2x16xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 2 {
    affine.for %k = 0 to 4 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 2 {
          %1 = affine.load %a[%i, %k * 2 + %r] : memref<2x8xi16>
          %2 = arith.extui %1 : i16 to i32
          %3 = arith.shli %2, %s : i32
          %4 = arith.bitcast %3 : i32 to f32
          %5 = affine.load %b[%k * 2 + %r, %j] : memref<8x16xi16>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<2x16xf32>
          %10 = arith.mulf %4, %8 : f32
          %11 = arith.addf %9, %10 : f32
          affine.store %11, %out[%i, %j] : memref<2x16xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}


// Must not fire: groups of four rows (vpdpbusd's), not pairs.

// QUAD: TileExtentError: tensorize: loop 'j' in kernel 'k_quad': the loops must run 0 to 16 and 0 to 2, step 1, without iter_args; loop 'r' runs (0, 4) step 1
func.func private @k_quad(%a: memref<2x8xi16>, %p: memref<2x16x4xi16>, %out: memref<2x16xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 2 {
    affine.for %k = 0 to 2 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 4 {
          %1 = affine.load %a[%i, %k * 4 + %r] : memref<2x8xi16>
          %2 = arith.extui %1 : i16 to i32
          %3 = arith.shli %2, %s : i32
          %4 = arith.bitcast %3 : i32 to f32
          %5 = affine.load %p[%k, %j, %r] : memref<2x16x4xi16>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<2x16xf32>
          %10 = arith.mulf %4, %8 : f32
          %11 = arith.addf %9, %10 : f32
          affine.store %11, %out[%i, %j] : memref<2x16xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}


// Must not fire: 8 columns, not 16 (a block is a whole zmm register).

// NARROW: TileExtentError: tensorize: loop 'j' in kernel 'k_narrow': the loops must run 0 to 16 and 0 to 2, step 1, without iter_args; loop 'j' runs (0, 8) step 1
func.func private @k_narrow(%a: memref<2x8xi16>, %p: memref<1x4x8x2xi16>, %out: memref<2x8xf32>) attributes {qd.kernel = "tg.matmul_bf16"} {
  %s = arith.constant 16 : i32
  affine.for %i = 0 to 2 {
    affine.for %k = 0 to 4 {
      affine.for %j = 0 to 8 {
        affine.for %r = 0 to 2 {
          %1 = affine.load %a[%i, %k * 2 + %r] : memref<2x8xi16>
          %2 = arith.extui %1 : i16 to i32
          %3 = arith.shli %2, %s : i32
          %4 = arith.bitcast %3 : i32 to f32
          %5 = affine.load %p[0, %k, %j, %r] : memref<1x4x8x2xi16>
          %6 = arith.extui %5 : i16 to i32
          %7 = arith.shli %6, %s : i32
          %8 = arith.bitcast %7 : i32 to f32
          %9 = affine.load %out[%i, %j] : memref<2x8xf32>
          %10 = arith.mulf %4, %8 : f32
          %11 = arith.addf %9, %10 : f32
          affine.store %11, %out[%i, %j] : memref<2x8xf32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}
