// RUN: qidao-opt %s -p 'tile{kernel="k" outer="i" inner="j" outer_factor=2 inner_factor=4}' | filecheck %s
// RUN: qidao-opt %s -p 'tile{kernel="tail" outer="i" inner="j" outer_factor=2 inner_factor=3}' | filecheck %s --check-prefix=TAIL
// RUN: not qidao-opt %s -p 'tile{kernel="mm" outer="i" inner="j" outer_factor=2 inner_factor=2}' 2>&1 | filecheck %s --check-prefix=ERR-NEST
// RUN: not qidao-opt %s -p 'tile{kernel="shift" outer="i" inner="j" outer_factor=2 inner_factor=2}' 2>&1 | filecheck %s --check-prefix=ERR-DEP
// RUN: not qidao-opt %s -p 'tile{kernel="k" outer="i" inner="j" outer_factor=0 inner_factor=2}' 2>&1 | filecheck %s --check-prefix=ERR-FACTOR

// The docstring's example: a transpose copy in 2 x 4 tiles.
// CHECK-LABEL: func.func private @k
// CHECK:         affine.for %i_o = 0 to 2 {
// CHECK-NEXT:      affine.for %j_o = 0 to 2 {
// CHECK-NEXT:        affine.for %i_i = 0 to 2 {
// CHECK-NEXT:          affine.for %j_i = 0 to 4 {
// CHECK-NEXT:            %v = affine.load %x[%j_o * 4 + %j_i, %i_o * 2 + %i_i] : memref<8x4xf32>
// CHECK-NEXT:            affine.store %v, %y[%i_o * 2 + %i_i, %j_o * 4 + %j_i] : memref<4x8xf32>
// CHECK-NEXT:          } {qd.loop = "j_i"}
// CHECK-NEXT:        } {qd.loop = "i_i"}
// CHECK-NEXT:      } {qd.loop = "j_o"}
// CHECK-NEXT:    } {qd.loop = "i_o"}
func.func private @k(%x: memref<8x4xf32> {llvm.noalias}, %y: memref<4x8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%j, %i] : memref<8x4xf32>
      affine.store %v, %y[%i, %j] : memref<4x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// Factors that do not divide: split's tails, each inner bound a min of its own tile.
// TAIL-LABEL: func.func private @tail
// TAIL:         affine.for %i_o = 0 to 3 {
// TAIL-NEXT:      affine.for %j_o = 0 to 3 {
// TAIL-NEXT:        affine.for %i_i = 0 to min affine_map<(d0) -> (2, ((d0 * -2) + 5))>(%i_o) {
// TAIL-NEXT:          affine.for %j_i = 0 to min affine_map<(d0) -> (3, ((d0 * -3) + 7))>(%j_o) {
func.func private @tail(%x: memref<5x7xf32> {llvm.noalias}, %y: memref<5x7xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 5 {
    affine.for %j = 0 to 7 {
      %v = affine.load %x[%i, %j] : memref<5x7xf32>
      affine.store %v, %y[%i, %j] : memref<5x7xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// Must not fire: j is not directly inside i (k is between them).
// ERR-NEST: NotPerfectlyNestedError: tile: loop 'j' in kernel 'mm': it is not directly inside 'i'
func.func private @mm(%a: memref<4x4xf32> {llvm.noalias}, %b: memref<4x4xf32> {llvm.noalias}, %c: memref<4x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %i = 0 to 4 {
    affine.for %k = 0 to 4 {
      affine.for %j = 0 to 4 {
        %x = affine.load %a[%i, %k] : memref<4x4xf32>
        %y = affine.load %b[%k, %j] : memref<4x4xf32>
        %z = affine.load %c[%i, %j] : memref<4x4xf32>
        %p = arith.mulf %x, %y : f32
        %s = arith.addf %z, %p : f32
        affine.store %s, %c[%i, %j] : memref<4x4xf32>
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// Must not fire: tiling would reorder y[i, j] = y[i + 1, j - 1]'s dependence; the
// kernel is put back as it was and the error names tile.
// ERR-DEP: IllegalScheduleError: tile: loop
func.func private @shift(%y: memref<5x5xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 4 {
    affine.for %j = 1 to 5 {
      %v = affine.load %y[%i + 1, %j - 1] : memref<5x5xf32>
      affine.store %v, %y[%i, %j] : memref<5x5xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// ERR-FACTOR: InvalidArgumentError: tile: loop 'i' in kernel 'k': factor must be at least 1, got 0
