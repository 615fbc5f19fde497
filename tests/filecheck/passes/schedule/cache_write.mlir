// RUN: qidao-opt %s -p 'cache-write{kernel="k" loop="j_o"}' | filecheck %s
// RUN: qidao-opt %s -p 'cache-write{kernel="k_mm" loop="j_o"}' | filecheck %s --check-prefix=MM
// RUN: qidao-opt %s -p 'cache-write{kernel="k_tail" loop="j_o"}' | filecheck %s --check-prefix=TAIL
// RUN: qidao-opt %s -p 'cache-write{kernel="k_init" loop="j_o"}' | filecheck %s --check-prefix=INIT
// RUN: qidao-opt %s -p 'cache-write{kernel="k_part" loop="j_o"}' | filecheck %s --check-prefix=PART
// RUN: qidao-opt %s -p 'cache-write{kernel="k_alloca" loop="j_o"},lower-affine,convert-scf-to-cf,convert-to-llvm' | filecheck %s --check-prefix=LLVM
// RUN: not qidao-opt %s -p 'cache-write{kernel="k" loop="nope"}' 2>&1 | filecheck %s --check-prefix=ERR-LOOP
// RUN: not qidao-opt %s -p 'cache-write{kernel="k_dep" loop="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-DEP
// RUN: not qidao-opt %s -p 'cache-write{kernel="k_mod" loop="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-MOD
// RUN: not qidao-opt %s -p 'cache-write{kernel="k_var" loop="i"}' 2>&1 | filecheck %s --check-prefix=ERR-VAR
// RUN: not qidao-opt %s -p 'cache-write{kernel="k_big" loop="i"}' 2>&1 | filecheck %s --check-prefix=ERR-BIG
// RUN: not qidao-opt %s -p 'cache-write{kernel="k_two" loop="i"}' 2>&1 | filecheck %s --check-prefix=ERR-TWO

// The docstring's example: %out's tile [4 * j_o, 4 * j_o + 4) in an alloca; %w is
// untouched (must not change other memrefs).
// CHECK-LABEL: func.func private @k(
// CHECK-NEXT:    affine.for %j_o = 0 to 2 {
// CHECK-NEXT:      %acc = memref.alloca() : memref<4xf32>
// CHECK-NEXT:      affine.for %j_o_cw_i0 = 0 to 4 {
// CHECK-NEXT:        %0 = affine.load %out[%j_o_cw_i0 + %j_o * 4] : memref<8xf32>
// CHECK-NEXT:        affine.store %0, %acc[%j_o_cw_i0] : memref<4xf32>
// CHECK-NEXT:      } {qd.loop = "j_o_cw_i0"}
// CHECK-NEXT:      affine.for %k = 0 to 4 {
// CHECK-NEXT:        affine.for %j_i = 0 to 4 {
// CHECK-NEXT:          %a = affine.load %w[%k, %j_o * 4 + %j_i] : memref<4x8xf32>
// CHECK-NEXT:          %b = affine.load %acc[%j_i] : memref<4xf32>
// CHECK-NEXT:          %c = arith.addf %a, %b : f32
// CHECK-NEXT:          affine.store %c, %acc[%j_i] : memref<4xf32>
// CHECK-NEXT:        } {qd.loop = "j_i"}
// CHECK-NEXT:      } {qd.loop = "k"}
// CHECK-NEXT:      affine.for %j_o_wb_i0 = 0 to 4 {
// CHECK-NEXT:        %1 = affine.load %acc[%j_o_wb_i0] : memref<4xf32>
// CHECK-NEXT:        affine.store %1, %out[%j_o_wb_i0 + %j_o * 4] : memref<8xf32>
// CHECK-NEXT:      } {qd.loop = "j_o_wb_i0"}
// CHECK-NEXT:    } {qd.loop = "j_o"}
// CHECK-NEXT:    func.return
func.func private @k(%w: memref<4x8xf32>, %out: memref<8xf32>) attributes {qd.kernel = "t"} {
  affine.for %j_o = 0 to 2 {
    affine.for %k = 0 to 4 {
      affine.for %j_i = 0 to 4 {
        %a = affine.load %w[%k, %j_o * 4 + %j_i] : memref<4x8xf32>
        %b = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
        %c = arith.addf %a, %b : f32
        affine.store %c, %out[%j_o * 4 + %j_i] : memref<8xf32>
      } {qd.loop = "j_i"}
    } {qd.loop = "k"}
  } {qd.loop = "j_o"}
  func.return
}

// The matmul register tile: split i by 2, j by 4, reorder(i_o, j_o, k, i_i, j_i);
// at j_o the footprint is 2x4 (k does not appear); the init loop before j_o, which
// also stores to %out, and the loads of %x and %w are untouched.
// MM-LABEL: func.func private @k_mm(
// MM-NEXT:    %zero = arith.constant 0.000000e+00 : f32
// MM-NEXT:    affine.for %i = 0 to 4 {
// MM-NEXT:      affine.for %j = 0 to 8 {
// MM-NEXT:        affine.store %zero, %out[%i, %j] : memref<4x8xf32>
// MM-NEXT:      } {qd.loop = "j"}
// MM-NEXT:    } {qd.loop = "i"}
// MM-NEXT:    affine.for %i_o = 0 to 2 {
// MM-NEXT:      affine.for %j_o = 0 to 2 {
// MM-NEXT:        %acc = memref.alloca() : memref<2x4xf32>
// MM-NEXT:        affine.for %j_o_cw_i0 = 0 to 2 {
// MM-NEXT:          affine.for %j_o_cw_i1 = 0 to 4 {
// MM-NEXT:            %0 = affine.load %out[%j_o_cw_i0 + %i_o * 2, %j_o_cw_i1 + %j_o * 4] : memref<4x8xf32>
// MM-NEXT:            affine.store %0, %acc[%j_o_cw_i0, %j_o_cw_i1] : memref<2x4xf32>
// MM-NEXT:          } {qd.loop = "j_o_cw_i1"}
// MM-NEXT:        } {qd.loop = "j_o_cw_i0"}
// MM-NEXT:        affine.for %k = 0 to 3 {
// MM-NEXT:          affine.for %i_i = 0 to 2 {
// MM-NEXT:            affine.for %j_i = 0 to 4 {
// MM-NEXT:              %a = affine.load %x[%i_o * 2 + %i_i, %k] : memref<4x3xf32>
// MM-NEXT:              %b = affine.load %w[%k, %j_o * 4 + %j_i] : memref<3x8xf32>
// MM-NEXT:              %c = affine.load %acc[%i_i, %j_i] : memref<2x4xf32>
// MM-NEXT:              %d = arith.mulf %a, %b : f32
// MM-NEXT:              %e = arith.addf %c, %d : f32
// MM-NEXT:              affine.store %e, %acc[%i_i, %j_i] : memref<2x4xf32>
// MM-NEXT:            } {qd.loop = "j_i"}
// MM-NEXT:          } {qd.loop = "i_i"}
// MM-NEXT:        } {qd.loop = "k"}
// MM-NEXT:        affine.for %j_o_wb_i0 = 0 to 2 {
// MM-NEXT:          affine.for %j_o_wb_i1 = 0 to 4 {
// MM-NEXT:            %1 = affine.load %acc[%j_o_wb_i0, %j_o_wb_i1] : memref<2x4xf32>
// MM-NEXT:            affine.store %1, %out[%j_o_wb_i0 + %i_o * 2, %j_o_wb_i1 + %j_o * 4] : memref<4x8xf32>
// MM-NEXT:          } {qd.loop = "j_o_wb_i1"}
// MM-NEXT:        } {qd.loop = "j_o_wb_i0"}
// MM-NEXT:      } {qd.loop = "j_o"}
// MM-NEXT:    } {qd.loop = "i_o"}
func.func private @k_mm(%x: memref<4x3xf32>, %w: memref<3x8xf32>, %out: memref<4x8xf32>) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      affine.store %zero, %out[%i, %j] : memref<4x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  affine.for %i_o = 0 to 2 {
    affine.for %j_o = 0 to 2 {
      affine.for %k = 0 to 3 {
        affine.for %i_i = 0 to 2 {
          affine.for %j_i = 0 to 4 {
            %a = affine.load %x[%i_o * 2 + %i_i, %k] : memref<4x3xf32>
            %b = affine.load %w[%k, %j_o * 4 + %j_i] : memref<3x8xf32>
            %c = affine.load %out[%i_o * 2 + %i_i, %j_o * 4 + %j_i] : memref<4x8xf32>
            %d = arith.mulf %a, %b : f32
            %e = arith.addf %c, %d : f32
            affine.store %e, %out[%i_o * 2 + %i_i, %j_o * 4 + %j_i] : memref<4x8xf32>
          } {qd.loop = "j_i"}
        } {qd.loop = "i_i"}
      } {qd.loop = "k"}
    } {qd.loop = "j_o"}
  } {qd.loop = "i_o"}
  func.return
}

// A split tail (10 = 4 + 4 + 2): the copy loops are clipped to the memref's shape.
// TAIL-LABEL: func.func private @k_tail(
// TAIL:         %acc = memref.alloca() : memref<4xf32>
// TAIL-NEXT:    affine.for %j_o_cw_i0 = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%j_o) {
// TAIL:         affine.for %j_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%j_o) {
// TAIL-NEXT:      %o = affine.load %acc[%j_i] : memref<4xf32>
// TAIL-NEXT:      %s = arith.addf %o, %v : f32
// TAIL-NEXT:      affine.store %s, %acc[%j_i] : memref<4xf32>
// TAIL:         affine.for %j_o_wb_i0 = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%j_o) {
func.func private @k_tail(%out: memref<10xf32>) attributes {qd.kernel = "t"} {
  %v = arith.constant 1.000000e+00 : f32
  affine.for %j_o = 0 to 3 {
    affine.for %j_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%j_o) {
      %o = affine.load %out[%j_o * 4 + %j_i] : memref<10xf32>
      %s = arith.addf %o, %v : f32
      affine.store %s, %out[%j_o * 4 + %j_i] : memref<10xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  func.return
}

// No copy-in: the first nest of j_o's body (the init, put there by compute_at)
// stores to every element of the tile, clipped as the copy-in would be, before
// anything loads it. The write-back stays, clipped only in the dimension whose
// index moves with a min-bounded loop (j; the rows, 2 of 4 per tile, never pass
// the end).
// INIT-LABEL: func.func private @k_init(
// INIT-NEXT:    %zero = arith.constant 0.000000e+00 : f32
// INIT-NEXT:    affine.for %i_o = 0 to 2 {
// INIT-NEXT:      affine.for %j_o = 0 to 2 {
// INIT-NEXT:        %acc = memref.alloca() : memref<2x4xf32>
// INIT-NEXT:        affine.for %i_init = 0 to 2 {
// INIT-NEXT:          affine.for %j_init = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 6))>(%j_o) {
// INIT-NEXT:            affine.store %zero, %acc[%i_init, %j_init] : memref<2x4xf32>
// INIT-NEXT:          } {qd.loop = "j_init"}
// INIT-NEXT:        } {qd.loop = "i_init"}
// INIT-NEXT:        affine.for %k = 0 to 3 {
// INIT-NOT:       j_o_cw
// INIT:           affine.for %j_o_wb_i0 = 0 to 2 {
// INIT-NEXT:        affine.for %j_o_wb_i1 = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 6))>(%j_o) {
func.func private @k_init(%w: memref<3x6xf32>, %out: memref<4x6xf32>) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i_o = 0 to 2 {
    affine.for %j_o = 0 to 2 {
      affine.for %i_init = 0 to 2 {
        affine.for %j_init = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 6))>(%j_o) {
          affine.store %zero, %out[%i_o * 2 + %i_init, %j_o * 4 + %j_init] : memref<4x6xf32>
        } {qd.loop = "j_init"}
      } {qd.loop = "i_init"}
      affine.for %k = 0 to 3 {
        affine.for %i_i = 0 to 2 {
          affine.for %j_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 6))>(%j_o) {
            %b = affine.load %w[%k, %j_o * 4 + %j_i] : memref<3x6xf32>
            %c = affine.load %out[%i_o * 2 + %i_i, %j_o * 4 + %j_i] : memref<4x6xf32>
            %e = arith.addf %c, %b : f32
            affine.store %e, %out[%i_o * 2 + %i_i, %j_o * 4 + %j_i] : memref<4x6xf32>
          } {qd.loop = "j_i"}
        } {qd.loop = "i_i"}
      } {qd.loop = "k"}
    } {qd.loop = "j_o"}
  } {qd.loop = "i_o"}
  func.return
}

// The copy-in stays when the first nest does not store the whole tile: here it
// stores columns [0, 2) of 4.
// PART-LABEL: func.func private @k_part(
// PART:         %acc = memref.alloca() : memref<4xf32>
// PART-NEXT:    affine.for %j_o_cw_i0 = 0 to 4 {
// PART:         affine.for %j_init = 0 to 2 {
func.func private @k_part(%out: memref<8xf32>) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %j_o = 0 to 2 {
    affine.for %j_init = 0 to 2 {
      affine.store %zero, %out[%j_o * 4 + %j_init] : memref<8xf32>
    } {qd.loop = "j_init"}
    affine.for %j_i = 0 to 4 {
      %c = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
      %e = arith.addf %c, %c : f32
      affine.store %e, %out[%j_o * 4 + %j_i] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  func.return
}

// The back end lowers the accumulator's memref.alloca to a 64-byte aligned llvm.alloca.
// LLVM-LABEL: llvm.func @k_alloca(
// LLVM:         llvm.alloca %{{.*}} x f32 {alignment = 64 : i64}
func.func private @k_alloca(%out: memref<8xf32>) attributes {qd.kernel = "t"} {
  %v = arith.constant 1.000000e+00 : f32
  affine.for %j_o = 0 to 2 {
    affine.for %j_i = 0 to 4 {
      affine.store %v, %out[%j_o * 4 + %j_i] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  func.return
}

// ERR-LOOP: cache-write: loop 'nope' in kernel 'k': no such loop; the kernel's loops are: j_o, k, j_i

// The index is computed inside j_o's body (from k): not invariant, not an inner loop's
// induction variable.
// ERR-DEP: cache-write: loop 'j_o' in kernel 'k_dep': an index of %out (affine.store) is computed inside its body
func.func private @k_dep(%out: memref<8xf32>) attributes {qd.kernel = "t"} {
  %v = arith.constant 1.000000e+00 : f32
  affine.for %j_o = 0 to 2 {
    affine.for %k = 0 to 4 {
      %t = arith.addi %k, %k : index
      affine.store %v, %out[%t] : memref<8xf32>
    } {qd.loop = "k"}
  } {qd.loop = "j_o"}
  func.return
}

// ERR-MOD: cache-write: loop 'j_o' in kernel 'k_mod': index 0 of %out (((d0 * 4) + (d1 mod 3))) is not affine in the loops inside it
func.func private @k_mod(%out: memref<8xf32>) attributes {qd.kernel = "t"} {
  %v = arith.constant 1.000000e+00 : f32
  affine.for %j_o = 0 to 2 {
    affine.for %j_i = 0 to 4 {
      affine.store %v, %out[%j_o * 4 + %j_i mod 3] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  func.return
}

// The load and the store of %out have invariant parts that differ by j: no common tile.
// ERR-VAR: cache-write: loop 'i' in kernel 'k_var': the accesses of %out differ in index 0 by
// ERR-VAR-SAME: which is not a constant: no common tile
func.func private @k_var(%out: memref<8xf32>, %j: index) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 2 {
    affine.for %r = 0 to 2 {
      %a = affine.load %out[%r + %j] : memref<8xf32>
      affine.store %a, %out[%r + %i] : memref<8xf32>
    } {qd.loop = "r"}
  } {qd.loop = "i"}
  func.return
}

// ERR-BIG: cache-write: loop 'i' in kernel 'k_big': the footprint of %out is 64x128 = 8192 elements, more than 4096
func.func private @k_big(%out: memref<64x128xf32>) attributes {qd.kernel = "t"} {
  %v = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 1 {
    affine.for %r = 0 to 64 {
      affine.for %c = 0 to 128 {
        affine.store %v, %out[%r, %c] : memref<64x128xf32>
      } {qd.loop = "c"}
    } {qd.loop = "r"}
  } {qd.loop = "i"}
  func.return
}

// ERR-TWO: cache-write: loop 'i' in kernel 'k_two': its body must store (affine.store) to one memref, or to several of which it also loads exactly one (the accumulator); it stores to 2 and loads 0 of them
func.func private @k_two(%a: memref<4xf32>, %b: memref<4xf32>) attributes {qd.kernel = "t"} {
  %v = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 4 {
    affine.store %v, %a[%i] : memref<4xf32>
    affine.store %v, %b[%i] : memref<4xf32>
  } {qd.loop = "i"}
  func.return
}
