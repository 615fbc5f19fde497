// RUN: qidao-opt %s -p 'reorder{kernel="k" loops="j,i"}' | filecheck %s
// RUN: qidao-opt %s -p 'reorder{kernel="mm" loops="k,i,j"}' | filecheck %s --check-prefix=KIJ
// RUN: qidao-opt %s -p 'reorder{kernel="mm" loops="i,j,k"}' | filecheck %s --check-prefix=IJK
// RUN: qidao-opt %s -p 'split{kernel="mm" loop="k" factor=2},reorder{kernel="mm" loops="i,k_i,k_o,j"}' | filecheck %s --check-prefix=REDUCE
// RUN: qidao-opt %s -p 'split{kernel="k" loop="i" factor=3},reorder{kernel="k" loops="i_o,j,i_i"}' | filecheck %s --check-prefix=TILE
// RUN: not qidao-opt %s -p 'split{kernel="k" loop="i" factor=3},reorder{kernel="k" loops="i_i,i_o"}' 2>&1 | filecheck %s --check-prefix=ERR-BOUND
// RUN: not qidao-opt %s -p 'reorder{kernel="last" loops="j,i"}' 2>&1 | filecheck %s --check-prefix=ERR-DEP
// RUN: not qidao-opt %s -p 'reorder{kernel="shift" loops="j,i"}' 2>&1 | filecheck %s --check-prefix=ERR-SHIFT
// RUN: not qidao-opt %s -p 'reorder{kernel="imperfect" loops="j,i"}' 2>&1 | filecheck %s --check-prefix=ERR-NEST
// RUN: not qidao-opt %s -p 'reorder{kernel="k" loops="i,i"}' 2>&1 | filecheck %s --check-prefix=ERR-TWICE

// The docstring's example: a transpose, every element written once (any order).
// CHECK-LABEL: func.func private @k(
// CHECK-NEXT:    affine.for %j = 0 to 8 {
// CHECK-NEXT:      affine.for %i = 0 to 4 {
// CHECK-NEXT:        %v = affine.load %x[%i, %j] : memref<4x8xf32>
// CHECK-NEXT:        affine.store %v, %y[%j, %i] : memref<8x4xf32>
// CHECK-NEXT:      } {qd.loop = "i"}
// CHECK-NEXT:    } {qd.loop = "j"}
func.func private @k(%x: memref<4x8xf32> {llvm.noalias}, %y: memref<8x4xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      affine.store %v, %y[%j, %i] : memref<8x4xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// A tile: the inner loop of a split (bound min(3, 4 - 3 * i_o)) moves inside j but
// stays inside i_o, whose induction variable its bound uses.
// TILE-LABEL: func.func private @k(
// TILE-NEXT:    affine.for %i_o = 0 to 2 {
// TILE-NEXT:      affine.for %j = 0 to 8 {
// TILE-NEXT:        affine.for %i_i = 0 to min affine_map<(d0) -> (3, ((d0 * -3) + 4))>(%i_o) {
// TILE-NEXT:          %v = affine.load %x[%i_o * 3 + %i_i, %j]
// TILE:             } {qd.loop = "i_i"}
// TILE-NEXT:      } {qd.loop = "j"}
// TILE-NEXT:    } {qd.loop = "i_o"}

// Matmul i, k, j: x[i, k] sits between k and j; it is sunk into j (x is not
// written). k revisits out[i, j] but keeps its order: legal, bit-identical.
// KIJ-LABEL: func.func private @mm(
// KIJ:           affine.for %k = 0 to 6 {
// KIJ-NEXT:        affine.for %i = 0 to 4 {
// KIJ-NEXT:          affine.for %j = 0 to 5 {
// KIJ-NEXT:            %a = affine.load %x[%i, %k] : memref<4x6xf32>
// KIJ-NEXT:            %b = affine.load %w[%k, %j] : memref<6x5xf32>
// KIJ:               } {qd.loop = "j"}
// KIJ-NEXT:        } {qd.loop = "i"}
// KIJ-NEXT:      } {qd.loop = "k"}
// Must not change anything else: the initialization nest before the band.
// KIJ-NOT:       qd.loop = "i_init"
// IJK-LABEL: func.func private @mm(
// IJK:           affine.for %i_init = 0 to 4 {
// IJK:           affine.for %i = 0 to 4 {
// IJK-NEXT:        affine.for %j = 0 to 5 {
// IJK-NEXT:          affine.for %k = 0 to 6 {
// IJK-NEXT:            %a = affine.load %x[%i, %k] : memref<4x6xf32>
// Two loops revisiting out[i, j] swap (k_i outside k_o): legal only because out is
// accumulated by one addf (the float summation order changes).
// REDUCE-LABEL: func.func private @mm(
// REDUCE:         affine.for %i = 0 to 4 {
// REDUCE-NEXT:      affine.for %k_i = 0 to 2 {
// REDUCE-NEXT:        affine.for %k_o = 0 to 3 {
// REDUCE-NEXT:          affine.for %j = 0 to 5 {
// REDUCE-NEXT:            %a = affine.load %x[%i, %k_o * 2 + %k_i] : memref<4x6xf32>
func.func private @mm(%x: memref<4x6xf32> {llvm.noalias}, %w: memref<6x5xf32> {llvm.noalias}, %out: memref<4x5xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i_init = 0 to 4 {
    affine.for %j_init = 0 to 5 {
      affine.store %zero, %out[%i_init, %j_init] : memref<4x5xf32>
    } {qd.loop = "j_init"}
  } {qd.loop = "i_init"}
  affine.for %i = 0 to 4 {
    affine.for %k = 0 to 6 {
      %a = affine.load %x[%i, %k] : memref<4x6xf32>
      affine.for %j = 0 to 5 {
        %b = affine.load %w[%k, %j] : memref<6x5xf32>
        %o = affine.load %out[%i, %j] : memref<4x5xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %o, %p : f32
        affine.store %s, %out[%i, %j] : memref<4x5xf32>
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// Illegal: y[0] is written by every (i, j), the last write wins: both loops
// revisit it, the swap changes their relative order, and it is not an accumulation.
func.func private @last(%x: memref<4x8xf32> {llvm.noalias}, %y: memref<1xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      affine.store %v, %y[0] : memref<1xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// Illegal: y is read at [i, j + 1] and written at [i, j]: indices differ, so the
// rule cannot prove the swap safe.
func.func private @shift(%y: memref<4x9xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %y[%i, %j + 1] : memref<4x9xf32>
      affine.store %v, %y[%i, %j] : memref<4x9xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// Not a band: i holds a store besides j.
func.func private @imperfect(%y: memref<4x8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %c = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 4 {
    affine.store %c, %y[%i, 0] : memref<4x8xf32>
    affine.for %j = 0 to 8 {
      affine.store %c, %y[%i, %j] : memref<4x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// ERR-BOUND: IllegalScheduleError: reorder: loop 'i_i' in kernel 'k': the bounds of 'i_i' use 'i_o', which the new order puts inside it
// ERR-DEP: IllegalScheduleError: reorder: loop 'i' in kernel 'last': loops 'i', 'j' revisit the same elements of %y
// ERR-SHIFT: IllegalScheduleError: reorder: loop 'i' in kernel 'shift': cannot prove which iterations of the band touch the same element of %y
// ERR-NEST: NotPerfectlyNestedError: reorder: loop 'i' in kernel 'imperfect': 'i' holds affine.store besides 'j'
// ERR-TWICE: InvalidArgumentError: reorder: loop 'i' in kernel 'k': the loop is listed twice
