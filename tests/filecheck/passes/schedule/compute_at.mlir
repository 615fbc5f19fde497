// RUN: qidao-opt %s -p 'compute-at{kernel="k" nest="i_epi" loop="j_o"}' | filecheck %s
// RUN: qidao-opt %s -p 'compute-at{kernel="k_mm" nest="i_init" loop="j_o"},compute-at{kernel="k_mm" nest="i_epi" loop="j_o"}' | filecheck %s --check-prefix=MM
// RUN: qidao-opt %s -p 'compute-at{kernel="k_mm" nest="i_epi" loop="i_o"}' | filecheck %s --check-prefix=ROW
// RUN: not qidao-opt %s -p 'compute-at{kernel="k" nest="i_epi" loop="nope"}' 2>&1 | filecheck %s --check-prefix=ERR-LOOP
// RUN: not qidao-opt %s -p 'compute-at{kernel="k" nest="k" loop="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-TOP
// RUN: not qidao-opt %s -p 'compute-at{kernel="k" nest="i_epi" loop="j_i"}' 2>&1 | filecheck %s --check-prefix=ERR-TWO
// RUN: not qidao-opt %s -p 'compute-at{kernel="k_mm" nest="i_init" loop="i_i"}' 2>&1 | filecheck %s --check-prefix=ERR-MIN
// RUN: not qidao-opt %s -p 'compute-at{kernel="k_repeat" nest="j_init" loop="k"}' 2>&1 | filecheck %s --check-prefix=ERR-REPEAT
// RUN: not qidao-opt %s -p 'compute-at{kernel="k_shift" nest="i_epi" loop="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-SHIFT
// RUN: not qidao-opt %s -p 'compute-at{kernel="k_reads" nest="i_epi" loop="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-READS
// RUN: not qidao-opt %s -p 'compute-at{kernel="k_between" nest="j_init" loop="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-BETWEEN

// The docstring's example: the epilogue (after the nest) goes to the end of j_o's
// body over the 4 elements it computes; %w is untouched.
// CHECK-LABEL: func.func private @k(
// CHECK-NEXT:    %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %j_o = 0 to 2 {
// CHECK-NEXT:      affine.for %k = 0 to 3 {
// CHECK-NEXT:        affine.for %j_i = 0 to 4 {
// CHECK-NEXT:          %a = affine.load %w[%k, %j_o * 4 + %j_i] : memref<3x8xf32>
// CHECK-NEXT:          %c = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
// CHECK-NEXT:          %s = arith.addf %a, %c : f32
// CHECK-NEXT:          affine.store %s, %out[%j_o * 4 + %j_i] : memref<8xf32>
// CHECK-NEXT:        } {qd.loop = "j_i"}
// CHECK-NEXT:      } {qd.loop = "k"}
// CHECK-NEXT:      affine.for %i_epi = 0 to 4 {
// CHECK-NEXT:        %v = affine.load %out[%j_o * 4 + %i_epi] : memref<8xf32>
// CHECK-NEXT:        %r = arith.maximumf %v, %zero : f32
// CHECK-NEXT:        affine.store %r, %out[%j_o * 4 + %i_epi] : memref<8xf32>
// CHECK-NEXT:      } {qd.loop = "i_epi"}
// CHECK-NEXT:    } {qd.loop = "j_o"}
// CHECK-NEXT:    func.return
func.func private @k(%w: memref<3x8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %j_o = 0 to 2 {
    affine.for %k = 0 to 3 {
      affine.for %j_i = 0 to 4 {
        %a = affine.load %w[%k, %j_o * 4 + %j_i] : memref<3x8xf32>
        %c = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
        %s = arith.addf %a, %c : f32
        affine.store %s, %out[%j_o * 4 + %j_i] : memref<8xf32>
      } {qd.loop = "j_i"}
    } {qd.loop = "k"}
  } {qd.loop = "j_o"}
  affine.for %i_epi = 0 to 8 {
    %v = affine.load %out[%i_epi] : memref<8xf32>
    %r = arith.maximumf %v, %zero : f32
    affine.store %r, %out[%i_epi] : memref<8xf32>
  } {qd.loop = "i_epi"}
  func.return
}

// The matmul register tile with a fused epilogue, split tails (i: 5 = 2 + 2 + 1,
// j: 6 = 4 + 2): the init nest (before) goes to the start of j_o's body, clipped
// to min(2, 5 - 2 * i_o) x min(4, 6 - 4 * j_o); k does not move the tile.
// MM-LABEL: func.func private @k_mm(
// MM-NEXT:    %zero = arith.constant 0.000000e+00 : f32
// MM-NEXT:    affine.for %i_o = 0 to 3 {
// MM-NEXT:      affine.for %j_o = 0 to 2 {
// MM-NEXT:        affine.for %i_init = 0 to min affine_map<(d0) -> (2, ((d0 * -2) + 5))>(%i_o) {
// MM-NEXT:          affine.for %j_init = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 6))>(%j_o) {
// MM-NEXT:            affine.store %zero, %out[%i_o * 2 + %i_init, %j_o * 4 + %j_init] : memref<5x6xf32>
// MM-NEXT:          } {qd.loop = "j_init"}
// MM-NEXT:        } {qd.loop = "i_init"}
// MM-NEXT:        affine.for %k = 0 to 3 {
// MM:             } {qd.loop = "k"}
// MM-NEXT:        affine.for %i_epi = 0 to min affine_map<(d0) -> (2, ((d0 * -2) + 5))>(%i_o) {
// MM-NEXT:          affine.for %j_epi = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 6))>(%j_o) {
// MM-NEXT:            %v = affine.load %out[%i_o * 2 + %i_epi, %j_o * 4 + %j_epi] : memref<5x6xf32>
// MM-NEXT:            %g = affine.load %b[%j_o * 4 + %j_epi] : memref<6xf32>
// MM-NEXT:            %h = arith.addf %v, %g : f32
// MM-NEXT:            %r = arith.maximumf %h, %zero : f32
// MM-NEXT:            affine.store %r, %out[%i_o * 2 + %i_epi, %j_o * 4 + %j_epi] : memref<5x6xf32>
// MM-NEXT:          } {qd.loop = "j_epi"}
// MM-NEXT:        } {qd.loop = "i_epi"}
// MM-NEXT:      } {qd.loop = "j_o"}
// MM-NEXT:    } {qd.loop = "i_o"}
// MM-NEXT:    func.return
func.func private @k_mm(%x: memref<5x3xf32> {llvm.noalias}, %w: memref<3x6xf32> {llvm.noalias}, %b: memref<6xf32> {llvm.noalias}, %out: memref<5x6xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i_init = 0 to 5 {
    affine.for %j_init = 0 to 6 {
      affine.store %zero, %out[%i_init, %j_init] : memref<5x6xf32>
    } {qd.loop = "j_init"}
  } {qd.loop = "i_init"}
  affine.for %i_o = 0 to 3 {
    affine.for %j_o = 0 to 2 {
      affine.for %k = 0 to 3 {
        affine.for %i_i = 0 to min affine_map<(d0) -> (2, d0 * -2 + 5)>(%i_o) {
          affine.for %j_i = 0 to min affine_map<(d0) -> (4, d0 * -4 + 6)>(%j_o) {
            %a = affine.load %x[%i_o * 2 + %i_i, %k] : memref<5x3xf32>
            %c = affine.load %w[%k, %j_o * 4 + %j_i] : memref<3x6xf32>
            %d = affine.load %out[%i_o * 2 + %i_i, %j_o * 4 + %j_i] : memref<5x6xf32>
            %e = arith.mulf %a, %c : f32
            %f = arith.addf %d, %e : f32
            affine.store %f, %out[%i_o * 2 + %i_i, %j_o * 4 + %j_i] : memref<5x6xf32>
          } {qd.loop = "j_i"}
        } {qd.loop = "i_i"}
      } {qd.loop = "k"}
    } {qd.loop = "j_o"}
  } {qd.loop = "i_o"}
  affine.for %i_epi = 0 to 5 {
    affine.for %j_epi = 0 to 6 {
      %v = affine.load %out[%i_epi, %j_epi] : memref<5x6xf32>
      %g = affine.load %b[%j_epi] : memref<6xf32>
      %h = arith.addf %v, %g : f32
      %r = arith.maximumf %h, %zero : f32
      affine.store %r, %out[%i_epi, %j_epi] : memref<5x6xf32>
    } {qd.loop = "j_epi"}
  } {qd.loop = "i_epi"}
  func.return
}

// At i_o the tile is rows [2 i_o, 2 i_o + 2) of every column: j_o's tiles span
// [0, 8), clipped to the 6 columns.
// ROW-LABEL: func.func private @k_mm(
// ROW:             } {qd.loop = "j_o"}
// ROW-NEXT:      affine.for %i_epi = 0 to min affine_map<(d0) -> (2, ((d0 * -2) + 5))>(%i_o) {
// ROW-NEXT:        affine.for %j_epi = 0 to 6 {
// ROW-NEXT:          %v = affine.load %out[%i_o * 2 + %i_epi, %j_epi] : memref<5x6xf32>
// ROW:             } {qd.loop = "j_epi"}
// ROW-NEXT:      } {qd.loop = "i_epi"}
// ROW-NEXT:    } {qd.loop = "i_o"}
// ROW-NEXT:    func.return

// ERR-LOOP: compute-at: loop 'nope' in kernel 'k': no such loop; the kernel's loops are: j_o, k, j_i, i_epi
// ERR-TOP: compute-at: loop 'k' in kernel 'k': it is not the outermost loop of a top-level nest of the kernel
// ERR-TWO: compute-at: loop 'j_i' in kernel 'k': the tile's start in dimension 0 of %out moves with two loops, 'j_o' and 'j_i'; one loop per dimension is supported
// ERR-MIN: compute-at: loop 'i_i' in kernel 'k_mm': loop 'i_i' has bounds that are not constants

// Must not fire: k does not move out's tile, so the init would run (and zero the
// sum) once per k.
// ERR-REPEAT: compute-at: loop 'k' in kernel 'k_repeat': the tiles repeat across the iterations of loop 'k' (it moves no index of %out): the nest would be computed more than once
func.func private @k_repeat(%out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  affine.for %j_init = 0 to 8 {
    affine.store %zero, %out[%j_init] : memref<8xf32>
  } {qd.loop = "j_init"}
  affine.for %k = 0 to 3 {
    affine.for %j = 0 to 8 {
      %c = affine.load %out[%j] : memref<8xf32>
      %s = arith.addf %c, %one : f32
      affine.store %s, %out[%j] : memref<8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "k"}
  func.return
}

// Must not fire: the epilogue reads out[i + 1], not out[i] (not pointwise).
// ERR-SHIFT: compute-at: loop 'i_epi' in kernel 'k_shift': not pointwise: affine.load of %out must index it with [i_epi] exactly
func.func private @k_shift(%out: memref<8xf32> {llvm.noalias}, %y: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %one = arith.constant 1.000000e+00 : f32
  affine.for %j_o = 0 to 2 {
    affine.for %j_i = 0 to 4 {
      affine.store %one, %out[%j_o * 4 + %j_i] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  affine.for %i_epi = 0 to 8 {
    %v = affine.load %out[(%i_epi + 1) mod 8] : memref<8xf32>
    affine.store %v, %out[%i_epi] : memref<8xf32>
  } {qd.loop = "i_epi"}
  func.return
}

// Must not fire: the target nest writes %b, which the epilogue reads.
// ERR-READS: compute-at: loop 'j_o' in kernel 'k_reads': its nest writes a memref that the nest 'i_epi' reads
func.func private @k_reads(%out: memref<8xf32> {llvm.noalias}, %b: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %one = arith.constant 1.000000e+00 : f32
  affine.for %j_o = 0 to 2 {
    affine.for %j_i = 0 to 4 {
      affine.store %one, %out[%j_o * 4 + %j_i] : memref<8xf32>
      affine.store %one, %b[7 - %j_o * 4 - %j_i] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  affine.for %i_epi = 0 to 8 {
    %v = affine.load %out[%i_epi] : memref<8xf32>
    %c = affine.load %b[%i_epi] : memref<8xf32>
    %s = arith.addf %v, %c : f32
    affine.store %s, %out[%i_epi] : memref<8xf32>
  } {qd.loop = "i_epi"}
  func.return
}

// Must not fire: a nest between the two reads %out.
// ERR-BETWEEN: compute-at: loop 'j_o' in kernel 'k_between': an op between the nest 'j_init' and its nest uses %out
func.func private @k_between(%out: memref<8xf32> {llvm.noalias}, %y: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %j_init = 0 to 8 {
    affine.store %zero, %out[%j_init] : memref<8xf32>
  } {qd.loop = "j_init"}
  affine.for %c = 0 to 8 {
    %v = affine.load %out[%c] : memref<8xf32>
    affine.store %v, %y[%c] : memref<8xf32>
  } {qd.loop = "c"}
  affine.for %j_o = 0 to 2 {
    affine.for %j_i = 0 to 4 {
      %v = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
      %s = arith.addf %v, %v : f32
      affine.store %s, %out[%j_o * 4 + %j_i] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  func.return
}
