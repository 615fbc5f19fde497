// RUN: qidao-opt %s -p 'compute-at{kernel="k_q" nest="i_init" loop="j_o"},compute-at{kernel="k_q" nest="i_epi" loop="j_o"}' | filecheck %s
// RUN: qidao-opt %s -p 'compute-at{kernel="k_q" nest="i_init" loop="j_o"},compute-at{kernel="k_q" nest="i_epi" loop="j_o"},cache-write{kernel="k_q" loop="j_o"}' | filecheck %s --check-prefix=LOCAL
// RUN: not qidao-opt %s -p 'compute-at{kernel="k_two" nest="i_epi" loop="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-TWO
// RUN: not qidao-opt %s -p 'compute-at{kernel="k_skew" nest="i_epi" loop="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-SKEW

// An int8 product's epilogue writes %out from %sums, which its nest never touches:
// the tile comes from %sums (the one memref the epilogue reads and the nest
// writes), and the epilogue moves into j_o over the same 4 x 4 tile of both.
// CHECK-LABEL: func.func private @k_q(
// CHECK:         affine.for %j_o = 0 to 2 {
// CHECK-NEXT:      affine.for %i_init = 0 to 4 {
// CHECK-NEXT:        affine.for %j_init = 0 to 4 {
// CHECK-NEXT:          affine.store %z, %sums[%i_init, %j_o * 4 + %j_init] : memref<4x8xi32>
// CHECK:           affine.for %i = 0 to 4 {
// CHECK:           affine.for %i_epi = 0 to 4 {
// CHECK-NEXT:        affine.for %j_epi = 0 to 4 {
// CHECK-NEXT:          %s = affine.load %sums[%i_epi, %j_o * 4 + %j_epi] : memref<4x8xi32>
// CHECK-NEXT:          %c = arith.trunci %s : i32 to i8
// CHECK-NEXT:          affine.store %c, %out[%i_epi, %j_o * 4 + %j_epi] : memref<4x8xi8>
// CHECK:         } {qd.loop = "j_o"}
// CHECK-NEXT:    memref.dealloc %sums

// cache_write then keeps the tile of %sums in an alloca: %sums is the kernel's own
// buffer, used in no loop but j_o, so nothing is written back and it goes.
// LOCAL-LABEL: func.func private @k_q(
// LOCAL-NOT:     memref.alloc()
// LOCAL-NOT:     %sums
// LOCAL:         affine.for %j_o = 0 to 2 {
// LOCAL-NEXT:      %acc = memref.alloca() : memref<4x4xi32>
// LOCAL-NEXT:      affine.for %i_init = 0 to 4 {
// LOCAL-NEXT:        affine.for %j_init = 0 to 4 {
// LOCAL-NEXT:          affine.store %z, %acc[%i_init, %j_init] : memref<4x4xi32>
// LOCAL:             %s = affine.load %acc[%i_epi, %j_epi] : memref<4x4xi32>
// LOCAL-NOT:     _wb_
// LOCAL-NOT:     %sums
// LOCAL:         func.return
func.func private @k_q(%a: memref<4x8xi32> {llvm.noalias}, %out: memref<4x8xi8> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %z = arith.constant 0 : i32
  %sums = memref.alloc() : memref<4x8xi32>
  affine.for %i_init = 0 to 4 {
    affine.for %j_init = 0 to 8 {
      affine.store %z, %sums[%i_init, %j_init] : memref<4x8xi32>
    } {qd.loop = "j_init"}
  } {qd.loop = "i_init"}
  affine.for %j_o = 0 to 2 {
    affine.for %i = 0 to 4 {
      affine.for %j_i = 0 to 4 {
        %v = affine.load %a[%i, %j_o * 4 + %j_i] : memref<4x8xi32>
        %t = affine.load %sums[%i, %j_o * 4 + %j_i] : memref<4x8xi32>
        %u = arith.addi %v, %t : i32
        affine.store %u, %sums[%i, %j_o * 4 + %j_i] : memref<4x8xi32>
      } {qd.loop = "j_i"}
    } {qd.loop = "i"}
  } {qd.loop = "j_o"}
  affine.for %i_epi = 0 to 4 {
    affine.for %j_epi = 0 to 8 {
      %s = affine.load %sums[%i_epi, %j_epi] : memref<4x8xi32>
      %c = arith.trunci %s : i32 to i8
      affine.store %c, %out[%i_epi, %j_epi] : memref<4x8xi8>
    } {qd.loop = "j_epi"}
  } {qd.loop = "i_epi"}
  memref.dealloc %sums : memref<4x8xi32>
  func.return
}

// Refused: the epilogue reads two memrefs the nest writes, so neither one alone
// says which tile it needs.
// ERR-TWO: compute-at: loop 'j_o' in kernel 'k_two': its body does not use %out, the memref the nest 'i_epi' writes, and the nest reads 2 memrefs its nest writes (one links the two)
func.func private @k_two(%a: memref<8xi32> {llvm.noalias}, %out: memref<8xi32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %s1 = memref.alloc() : memref<8xi32>
  %s2 = memref.alloc() : memref<8xi32>
  affine.for %j_o = 0 to 2 {
    affine.for %j_i = 0 to 4 {
      %v = affine.load %a[%j_o * 4 + %j_i] : memref<8xi32>
      affine.store %v, %s1[%j_o * 4 + %j_i] : memref<8xi32>
      affine.store %v, %s2[%j_o * 4 + %j_i] : memref<8xi32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  affine.for %i_epi = 0 to 8 {
    %x = affine.load %s1[%i_epi] : memref<8xi32>
    %y = affine.load %s2[%i_epi] : memref<8xi32>
    %u = arith.addi %x, %y : i32
    affine.store %u, %out[%i_epi] : memref<8xi32>
  } {qd.loop = "i_epi"}
  func.return
}

// Refused: the epilogue reads the linking memref reversed (not pointwise): its
// element comes from another tile.
// ERR-SKEW: compute-at: loop 'j_o' in kernel 'k_skew': not pointwise: affine.load of %s in the nest 'i_epi' must load it at [i_epi] exactly
func.func private @k_skew(%a: memref<9xi32> {llvm.noalias}, %out: memref<8xi32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %s = memref.alloc() : memref<8xi32>
  affine.for %j_o = 0 to 2 {
    affine.for %j_i = 0 to 4 {
      %v = affine.load %a[%j_o * 4 + %j_i] : memref<9xi32>
      affine.store %v, %s[%j_o * 4 + %j_i] : memref<8xi32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  affine.for %i_epi = 0 to 8 {
    %x = affine.load %s[7 - %i_epi] : memref<8xi32>
    affine.store %x, %out[%i_epi] : memref<8xi32>
  } {qd.loop = "i_epi"}
  func.return
}
