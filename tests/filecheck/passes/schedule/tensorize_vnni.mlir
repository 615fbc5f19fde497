// RUN: qidao-opt %s -p 'tensorize{kernel="k" loop="j" intrinsic="avx512_vnni"}' | filecheck %s
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_signed" loop="j" intrinsic="avx512_vnni"}' 2>&1 | filecheck %s --check-prefix=SIGNED
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_rows" loop="j" intrinsic="avx512_vnni"}' 2>&1 | filecheck %s --check-prefix=ROWS
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_narrow" loop="j" intrinsic="avx512_vnni"}' 2>&1 | filecheck %s --check-prefix=NARROW

// The CPU intrinsic avx512_vnni: the 16 x 4 block j, r of an int8 matmul whose rhs
// is packed for VNNI ([K/4, N, 4]) becomes one x86vector.avx512.vpdpbusd; the
// loops are replaced. The nest is what convert-tg-to-affine makes of
// tg.matmul_integer with rhs_layout = "vnni".

// CHECK-LABEL: func.func private @k
// CHECK:         affine.for %k = 0 to 2 {
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[AI:.*]] = affine.apply affine_map<()[s0, s1, s2] -> (s0)> ()[%i, %k, %[[ZERO]]]
// CHECK-NEXT:      %[[AK:.*]] = affine.apply affine_map<()[s0, s1, s2] -> (((s1 * 4) + s2))> ()[%i, %k, %[[ZERO]]]
// CHECK:           %[[A:.*]] = vector.load %a[%[[AI]], %[[AK]]] : memref<2x8xi8>, vector<4xi8>
// CHECK-NEXT:      %[[B:.*]] = vector.load %p[%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x16x4xi8>, vector<64xi8>
// CHECK-NEXT:      %[[C:.*]] = vector.load %out[%{{.*}}, %{{.*}}] : memref<2x16xi32>, vector<16xi32>
// CHECK-NEXT:      %[[D:.*]] = x86vector.avx512.vpdpbusd %[[C]], %[[A]], %[[B]] : vector<16xi32>, vector<4xi8>, vector<64xi8> -> vector<16xi32>
// CHECK-NEXT:      vector.store %[[D]], %out[%{{.*}}, %{{.*}}] : memref<2x16xi32>, vector<16xi32>
// CHECK-NEXT:    } {qd.loop = "k"}
// CHECK-NOT:     qd.loop = "r"
// CHECK-LABEL: func.func private @k_signed
func.func private @k(%a: memref<2x8xi8>, %p: memref<2x16x4xi8>, %out: memref<2x16xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  affine.for %i = 0 to 2 {
    affine.for %k = 0 to 2 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 4 {
          %1 = affine.load %a[%i, %k * 4 + %r] : memref<2x8xi8>
          %2 = arith.extui %1 : i8 to i32
          %3 = affine.load %p[%k, %j, %r] : memref<2x16x4xi8>
          %4 = arith.extsi %3 : i8 to i32
          %5 = affine.load %out[%i, %j] : memref<2x16xi32>
          %6 = arith.muli %2, %4 : i32
          %7 = arith.addi %5, %6 : i32
          affine.store %7, %out[%i, %j] : memref<2x16xi32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}


// Must not fire: both bytes sign-extended (a signed lhs: vpdpbusd's first source
// is unsigned).

// SIGNED: TileDtypeError: tensorize: loop 'j' in kernel 'k_signed': the product must be of a zero-extended byte (A, unsigned) and a sign-extended one (P, signed): vpdpbusd's operands
func.func private @k_signed(%a: memref<2x8xi8>, %p: memref<2x16x4xi8>, %out: memref<2x16xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  affine.for %i = 0 to 2 {
    affine.for %k = 0 to 2 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 4 {
          %1 = affine.load %a[%i, %k * 4 + %r] : memref<2x8xi8>
          %2 = arith.extsi %1 : i8 to i32
          %3 = affine.load %p[%k, %j, %r] : memref<2x16x4xi8>
          %4 = arith.extsi %3 : i8 to i32
          %5 = affine.load %out[%i, %j] : memref<2x16xi32>
          %6 = arith.muli %2, %4 : i32
          %7 = arith.addi %5, %6 : i32
          affine.store %7, %out[%i, %j] : memref<2x16xi32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}


// Must not fire: the rhs in its own layout (K x N): the 16 columns of a group are
// not 64 contiguous bytes.

// ROWS: TileStrideError: tensorize: loop 'j' in kernel 'k_rows': P's index must move as (j, r) = [(1, 0), (0, 1)] per dimension, got [(0, 1), (1, 0)]
func.func private @k_rows(%a: memref<2x8xi8>, %b: memref<8x16xi8>, %out: memref<2x16xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  affine.for %i = 0 to 2 {
    affine.for %k = 0 to 2 {
      affine.for %j = 0 to 16 {
        affine.for %r = 0 to 4 {
          %1 = affine.load %a[%i, %k * 4 + %r] : memref<2x8xi8>
          %2 = arith.extui %1 : i8 to i32
          %3 = affine.load %b[%k * 4 + %r, %j] : memref<8x16xi8>
          %4 = arith.extsi %3 : i8 to i32
          %5 = affine.load %out[%i, %j] : memref<2x16xi32>
          %6 = arith.muli %2, %4 : i32
          %7 = arith.addi %5, %6 : i32
          affine.store %7, %out[%i, %j] : memref<2x16xi32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}


// Must not fire: 8 columns, not 16 (a block is a whole zmm register).

// NARROW: TileExtentError: tensorize: loop 'j' in kernel 'k_narrow': the loops must run 0 to 16 and 0 to 4, step 1, without iter_args; loop 'j' runs (0, 8) step 1
func.func private @k_narrow(%a: memref<2x8xi8>, %p: memref<2x8x4xi8>, %out: memref<2x8xi32>) attributes {qd.kernel = "tg.matmul_integer"} {
  affine.for %i = 0 to 2 {
    affine.for %k = 0 to 2 {
      affine.for %j = 0 to 8 {
        affine.for %r = 0 to 4 {
          %1 = affine.load %a[%i, %k * 4 + %r] : memref<2x8xi8>
          %2 = arith.extui %1 : i8 to i32
          %3 = affine.load %p[%k, %j, %r] : memref<2x8x4xi8>
          %4 = arith.extsi %3 : i8 to i32
          %5 = affine.load %out[%i, %j] : memref<2x8xi32>
          %6 = arith.muli %2, %4 : i32
          %7 = arith.addi %5, %6 : i32
          affine.store %7, %out[%i, %j] : memref<2x8xi32>
        } {qd.loop = "r"}
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}
