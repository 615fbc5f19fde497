// RUN: qidao-opt %s -p 'double-buffer{kernel="k" loop="k_o"}' | filecheck %s
// RUN: qidao-opt %s -p 'double-buffer{kernel="k_mm" loop="k_o_o"}' | filecheck %s --check-prefix=MM
// RUN: not qidao-opt %s -p 'double-buffer{kernel="k" loop="nope"}' 2>&1 | filecheck %s --check-prefix=ERR-LOOP
// RUN: not qidao-opt %s -p 'double-buffer{kernel="k_one" loop="k_o"}' 2>&1 | filecheck %s --check-prefix=ERR-ONE
// RUN: not qidao-opt %s -p 'double-buffer{kernel="k_tri" loop="k_o"}' 2>&1 | filecheck %s --check-prefix=ERR-BOUNDS
// RUN: not qidao-opt %s -p 'double-buffer{kernel="k_bound" loop="k_o"}' 2>&1 | filecheck %s --check-prefix=ERR-BOUND
// RUN: not qidao-opt %s -p 'double-buffer{kernel="k_plain" loop="k_o"}' 2>&1 | filecheck %s --check-prefix=ERR-NOCOPY
// RUN: not qidao-opt %s -p 'double-buffer{kernel="k_written" loop="k_o"}' 2>&1 | filecheck %s --check-prefix=ERR-WRITTEN
// RUN: not qidao-opt %s -p 'double-buffer{kernel="k_carry" loop="k_o"}' 2>&1 | filecheck %s --check-prefix=ERR-CARRY
// RUN: not qidao-opt %s -p 'double-buffer{kernel="k" loop="k_o"},double-buffer{kernel="k" loop="k_o"}' 2>&1 | filecheck %s --check-prefix=ERR-TWICE

// The docstring's example: the loop is marked, nothing else changes; the other
// kernels (whose loops are not asked for) keep no mark.
// CHECK-LABEL: func.func private @k(
// CHECK-NEXT:    affine.for %k_o = 0 to 4 {
// CHECK-NEXT:      %w_pack = memref.alloca() : memref<16xf32>
// CHECK-NEXT:      affine.for %k_o_cr_i0 = 0 to 16 {
// CHECK-NEXT:        %0 = affine.load %w[%k_o_cr_i0 + %k_o * 16] : memref<64xf32>
// CHECK-NEXT:        affine.store %0, %w_pack[%k_o_cr_i0] : memref<16xf32>
// CHECK-NEXT:      } {qd.loop = "k_o_cr_i0"}
// CHECK-NEXT:      affine.for %k_i = 0 to 16 {
// CHECK-NEXT:        %a = affine.load %w_pack[%k_i] : memref<16xf32>
// CHECK-NEXT:        %b = affine.load %out[0] : memref<1xf32>
// CHECK-NEXT:        %c = arith.addf %a, %b : f32
// CHECK-NEXT:        affine.store %c, %out[0] : memref<1xf32>
// CHECK-NEXT:      } {qd.loop = "k_i"}
// CHECK-NEXT:    } {qd.loop = "k_o", qd.double_buffer}
// CHECK-NEXT:    func.return
// CHECK-NOT:   qd.double_buffer
func.func private @k(%w: memref<64xf32> {llvm.noalias}, %out: memref<1xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %k_o = 0 to 4 {
    %w_pack = memref.alloca() : memref<16xf32>
    affine.for %k_o_cr_i0 = 0 to 16 {
      %0 = affine.load %w[%k_o_cr_i0 + %k_o * 16] : memref<64xf32>
      affine.store %0, %w_pack[%k_o_cr_i0] : memref<16xf32>
    } {qd.loop = "k_o_cr_i0"}
    affine.for %k_i = 0 to 16 {
      %a = affine.load %w_pack[%k_i] : memref<16xf32>
      %b = affine.load %out[0] : memref<1xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %out[0] : memref<1xf32>
    } {qd.loop = "k_i"}
  } {qd.loop = "k_o"}
  func.return
}

// The matmul's shape: A's copy at the top of k_o_o, B's at the top of k_o_i, a
// loop of one trip; B's index uses k_o_i's counter (0) and a counter from outside.
// MM-LABEL: func.func private @k_mm(
// MM:           } {qd.loop = "k_o_i"}
// MM-NEXT:    } {qd.loop = "k_o_o", qd.double_buffer}
func.func private @k_mm(%a: memref<4x32xf32> {llvm.noalias}, %b: memref<32x4xf32> {llvm.noalias}, %out: memref<4x4xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %j = 0 to 4 {
    affine.for %k_o_o = 0 to 4 {
      %a_pack = memref.alloca() : memref<4x8xf32>
      affine.for %k_o_o_cr_i0 = 0 to 4 {
        affine.for %k_o_o_cr_i1 = 0 to 8 {
          %0 = affine.load %a[%k_o_o_cr_i0, %k_o_o_cr_i1 + %k_o_o * 8] : memref<4x32xf32>
          affine.store %0, %a_pack[%k_o_o_cr_i0, %k_o_o_cr_i1] : memref<4x8xf32>
        } {qd.loop = "k_o_o_cr_i1"}
      } {qd.loop = "k_o_o_cr_i0"}
      affine.for %k_o_i = 0 to 1 {
        %b_pack = memref.alloca() : memref<8xf32>
        affine.for %k_o_i_cr_i0 = 0 to 8 {
          %1 = affine.load %b[%k_o_i_cr_i0 + %k_o_o * 8 + %k_o_i * 8, %j] : memref<32x4xf32>
          affine.store %1, %b_pack[%k_o_i_cr_i0] : memref<8xf32>
        } {qd.loop = "k_o_i_cr_i0"}
        affine.for %k_i = 0 to 8 {
          %x = affine.load %a_pack[0, %k_i] : memref<4x8xf32>
          %y = affine.load %b_pack[%k_i] : memref<8xf32>
          %p = arith.mulf %x, %y : f32
          affine.store %p, %out[0, %j] : memref<4x4xf32>
        } {qd.loop = "k_i"}
      } {qd.loop = "k_o_i"}
    } {qd.loop = "k_o_o"}
  } {qd.loop = "j"}
  func.return
}

// ERR-LOOP: double-buffer: loop 'nope' in kernel 'k': no such loop

// One trip: nothing to overlap.
// ERR-ONE: double-buffer: loop 'k_o' in kernel 'k_one': it runs 1 iteration(s) ([0, 1)); double buffering overlaps the copy of one iteration with the work of the one before, so it needs at least 2
func.func private @k_one(%w: memref<16xf32> {llvm.noalias}, %out: memref<16xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %k_o = 0 to 1 {
    %w_pack = memref.alloca() : memref<16xf32>
    affine.for %k_o_cr_i0 = 0 to 16 {
      %0 = affine.load %w[%k_o_cr_i0] : memref<16xf32>
      affine.store %0, %w_pack[%k_o_cr_i0] : memref<16xf32>
    } {qd.loop = "k_o_cr_i0"}
    affine.for %k_i = 0 to 16 {
      %a = affine.load %w_pack[%k_i] : memref<16xf32>
      affine.store %a, %out[%k_i] : memref<16xf32>
    } {qd.loop = "k_i"}
  } {qd.loop = "k_o"}
  func.return
}

// ERR-BOUNDS: double-buffer: loop 'k_o' in kernel 'k_tri': its bounds are not constants
func.func private @k_tri(%w: memref<64xf32> {llvm.noalias}, %out: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 4 {
    affine.for %k_o = 0 to affine_map<(d0) -> (d0)>(%i) {
      %w_pack = memref.alloca() : memref<16xf32>
      affine.for %k_o_cr_i0 = 0 to 16 {
        %0 = affine.load %w[%k_o_cr_i0 + %k_o * 16] : memref<64xf32>
        affine.store %0, %w_pack[%k_o_cr_i0] : memref<16xf32>
      } {qd.loop = "k_o_cr_i0"}
      %a = affine.load %w_pack[0] : memref<16xf32>
      affine.store %a, %out[%i] : memref<4xf32>
    } {qd.loop = "k_o"}
  } {qd.loop = "i"}
  func.return
}

// ERR-BOUND: double-buffer: loop 'k_o' in kernel 'k_bound': it is bound to blockIdx.x; only a serial loop runs its iterations one after the other
func.func private @k_bound(%w: memref<64xf32> {llvm.noalias}, %out: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %k_o = 0 to 4 {
    %w_pack = memref.alloca() : memref<16xf32>
    affine.for %k_o_cr_i0 = 0 to 16 {
      %0 = affine.load %w[%k_o_cr_i0 + %k_o * 16] : memref<64xf32>
      affine.store %0, %w_pack[%k_o_cr_i0] : memref<16xf32>
    } {qd.loop = "k_o_cr_i0"}
    %a = affine.load %w_pack[0] : memref<16xf32>
    affine.store %a, %out[%k_o] : memref<4xf32>
  } {qd.loop = "k_o", qd.bind = "blockIdx.x"}
  func.return
}

// No staging copy at the top of the body: nothing to double-buffer.
// ERR-NOCOPY: double-buffer: loop 'k_o' in kernel 'k_plain': its body does not start with a cache_read staging copy
func.func private @k_plain(%w: memref<64xf32> {llvm.noalias}, %out: memref<1xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %k_o = 0 to 4 {
    affine.for %k_i = 0 to 16 {
      %a = affine.load %w[%k_o * 16 + %k_i] : memref<64xf32>
      affine.store %a, %out[0] : memref<1xf32>
    } {qd.loop = "k_i"}
  } {qd.loop = "k_o"}
  func.return
}

// The kernel writes the copy's source: the next iteration's copy could read it
// before this iteration wrote it.
// ERR-WRITTEN: double-buffer: loop 'k_o' in kernel 'k_written': the copy into %w_pack reads %w, which the kernel writes
func.func private @k_written(%w: memref<64xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %k_o = 0 to 4 {
    %w_pack = memref.alloca() : memref<16xf32>
    affine.for %k_o_cr_i0 = 0 to 16 {
      %0 = affine.load %w[%k_o_cr_i0 + %k_o * 16] : memref<64xf32>
      affine.store %0, %w_pack[%k_o_cr_i0] : memref<16xf32>
    } {qd.loop = "k_o_cr_i0"}
    %a = affine.load %w_pack[0] : memref<16xf32>
    affine.store %a, %w[%k_o] : memref<64xf32>
  } {qd.loop = "k_o"}
  func.return
}

// A loop that carries a value (iter_args) is refused.
// ERR-CARRY: double-buffer: loop 'k_o' in kernel 'k_carry': it carries values (iter_args); expected a loop without them
func.func private @k_carry(%w: memref<64xf32> {llvm.noalias}, %out: memref<1xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  %sum = affine.for %k_o = 0 to 4 iter_args(%acc = %zero) -> (f32) {
    %w_pack = memref.alloca() : memref<16xf32>
    affine.for %k_o_cr_i0 = 0 to 16 {
      %0 = affine.load %w[%k_o_cr_i0 + %k_o * 16] : memref<64xf32>
      affine.store %0, %w_pack[%k_o_cr_i0] : memref<16xf32>
    } {qd.loop = "k_o_cr_i0"}
    %a = affine.load %w_pack[0] : memref<16xf32>
    %next = arith.addf %acc, %a : f32
    affine.yield %next : f32
  } {qd.loop = "k_o"}
  affine.store %sum, %out[0] : memref<1xf32>
  func.return
}

// ERR-TWICE: double-buffer: loop 'k_o' in kernel 'k': it is double-buffered already
