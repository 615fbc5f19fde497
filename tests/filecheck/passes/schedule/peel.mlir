// RUN: qidao-opt %s -p 'peel{kernel="k" loop="i_o"}' | filecheck %s
// RUN: qidao-opt %s -p 'peel{kernel="k_acc" loop="r_o"}' | filecheck %s --check-prefix=ACC
// RUN: qidao-opt %s -p 'peel{kernel="k_mixed" loop="i_o"}' | filecheck %s --check-prefix=MIXED
// RUN: qidao-opt %s -p 'peel{kernel="k_mixed" loop="j_o"}' | filecheck %s --check-prefix=OUTER
// RUN: qidao-opt %s -p 'split{kernel="k_split" loop="i" factor=8},peel{kernel="k_split" loop="i_o"},unroll{kernel="k_split" loop="i_i"},unroll{kernel="k_split" loop="i_i_t"}' | filecheck %s --check-prefix=SPLIT
// RUN: not qidao-opt %s -p 'peel{kernel="k" loop="nope"}' 2>&1 | filecheck %s --check-prefix=ERR-LOOP
// RUN: not qidao-opt %s -p 'peel{kernel="nope" loop="i_o"}' 2>&1 | filecheck %s --check-prefix=ERR-KERNEL
// RUN: not qidao-opt %s -p 'peel{kernel="k_refuse" loop="u"}' 2>&1 | filecheck %s --check-prefix=ERR-BOUNDS
// RUN: not qidao-opt %s -p 'peel{kernel="k_refuse" loop="one"}' 2>&1 | filecheck %s --check-prefix=ERR-ONE
// RUN: not qidao-opt %s -p 'peel{kernel="k_refuse" loop="i_o"}' 2>&1 | filecheck %s --check-prefix=ERR-NOTHING
// RUN: not qidao-opt %s -p 'peel{kernel="k_refuse" loop="t"}' 2>&1 | filecheck %s --check-prefix=ERR-NAME
// RUN: qidao-opt %s -p 'peel{kernel="k" loop="i_o" suffix="_last"}' | filecheck %s --check-prefix=SUFFIX
// RUN: not qidao-opt %s -p 'peel{kernel="k" loop="i_o" suffix="t"}' 2>&1 | filecheck %s --check-prefix=ERR-SUFFIX

// The docstring's example: after `split` of 10 by 4, tiles of 4, 4 and 2. The main
// part runs exactly 4 iterations in its inner loop, the copy of the last tile 2.
// CHECK-LABEL: func.func private @k(
// CHECK-NEXT:    affine.for %i_o = 0 to 2 {
// CHECK-NEXT:      affine.for %i_i = 0 to 4 {
// CHECK-NEXT:        %v = affine.load %x[%i_o * 4 + %i_i] : memref<10xf32>
// CHECK-NEXT:        affine.store %v, %y[%i_o * 4 + %i_i] : memref<10xf32>
// CHECK-NEXT:      } {qd.loop = "i_i"}
// CHECK-NEXT:    } {qd.loop = "i_o"}
// CHECK-NEXT:    affine.for %i_o_t = 2 to 3 {
// CHECK-NEXT:      affine.for %i_i_t = 0 to 2 {
// CHECK-NEXT:        %v_1 = affine.load %x[%i_o_t * 4 + %i_i_t] : memref<10xf32>
// CHECK-NEXT:        affine.store %v_1, %y[%i_o_t * 4 + %i_i_t] : memref<10xf32>
// CHECK-NEXT:      } {qd.loop = "i_i_t"}
// CHECK-NEXT:    } {qd.loop = "i_o_t"}
// CHECK-NEXT:    func.return
func.func private @k(%x: memref<10xf32>, %y: memref<10xf32>) attributes {qd.kernel = "t"} {
  affine.for %i_o = 0 to 3 {
    affine.for %i_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%i_o) {
      %v = affine.load %x[%i_o * 4 + %i_i] : memref<10xf32>
      affine.store %v, %y[%i_o * 4 + %i_i] : memref<10xf32>
    } {qd.loop = "i_i"}
  } {qd.loop = "i_o"}
  func.return
}

// iter_args: the main part's result is the copy's init, and the copy's result
// replaces the loop's result after it.
// ACC-LABEL: func.func private @k_acc(
// ACC:         %[[S:.*]] = affine.for %r_o = 0 to 2 iter_args(%a = %zero) -> (f32) {
// ACC-NEXT:      %{{.*}} = affine.for %r_i = 0 to 4 iter_args(%b = %a) -> (f32) {
// ACC:         } {qd.loop = "r_o"}
// ACC-NEXT:    %[[T:.*]] = affine.for %r_o_t = 2 to 3 iter_args(%{{.*}} = %[[S]]) -> (f32) {
// ACC-NEXT:      %{{.*}} = affine.for %r_i_t = 0 to 3 iter_args
// ACC:         } {qd.loop = "r_o_t"}
// ACC-NEXT:    affine.store %[[T]], %out[0] : memref<1xf32>
func.func private @k_acc(%x: memref<11xf32>, %out: memref<1xf32>) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  %s = affine.for %r_o = 0 to 3 iter_args(%a = %zero) -> (f32) {
    %t = affine.for %r_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 11))>(%r_o) iter_args(%b = %a) -> (f32) {
      %v = affine.load %x[%r_o * 4 + %r_i] : memref<11xf32>
      %n = arith.addf %b, %v : f32
      affine.yield %n : f32
    } {qd.loop = "r_i"}
    affine.yield %t : f32
  } {qd.loop = "r_o"}
  affine.store %s, %out[0] : memref<1xf32>
  func.return
}

// Only the bounds that read the peeled loop alone are rewritten: j_i's reads j_o
// and stays a min in both parts; h's (a `mod`, not linear) stays in the main part,
// which has two iterations, and is a constant in the copy, which has one.
// MIXED-LABEL: func.func private @k_mixed(
// MIXED:         affine.for %i_o = 0 to 2 {
// MIXED-NEXT:      affine.for %i_i = 0 to 4 {
// MIXED-NEXT:        affine.for %j_i = 0 to min affine_map<(d0) -> (16, ((d0 * -16) + 20))>(%j_o) {
// MIXED-NEXT:          affine.for %h = affine_map<(d0) -> ((d0 mod 2))>(%i_o) to affine_map<(d0) -> (((d0 mod 2) + 1))>(%i_o) {
// MIXED:         } {qd.loop = "i_o"}
// MIXED-NEXT:    affine.for %i_o_t = 2 to 3 {
// MIXED-NEXT:      affine.for %i_i_t = 0 to 2 {
// MIXED-NEXT:        affine.for %j_i_t = 0 to min affine_map<(d0) -> (16, ((d0 * -16) + 20))>(%j_o) {
// MIXED-NEXT:          affine.for %h_t = 0 to 1 {
// MIXED-NEXT:            affine.store %c, %y[%i_o_t * 4 + %i_i_t, %j_o * 16 + %j_i_t + %h_t] : memref<10x20xf32>
// MIXED:         } {qd.loop = "i_o_t"}
// MIXED-NEXT:  } {qd.loop = "j_o"}

// Peeling an outer loop copies the whole nest inside it, renaming every loop.
// OUTER-LABEL: func.func private @k_mixed(
// OUTER:         affine.for %j_o = 0 to 1 {
// OUTER-NEXT:      affine.for %i_o = 0 to 3 {
// OUTER-NEXT:        affine.for %i_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%i_o) {
// OUTER-NEXT:          affine.for %j_i = 0 to 16 {
// OUTER:         } {qd.loop = "j_o"}
// OUTER-NEXT:    affine.for %j_o_t = 1 to 2 {
// OUTER-NEXT:      affine.for %i_o_t = 0 to 3 {
// OUTER-NEXT:        affine.for %i_i_t = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%i_o_t) {
// OUTER-NEXT:          affine.for %j_i_t = 0 to 4 {
// OUTER-NEXT:            affine.for %h_t = affine_map<(d0) -> ((d0 mod 2))>(%i_o_t) to affine_map<(d0) -> (((d0 mod 2) + 1))>(%i_o_t) {
// OUTER:         } {qd.loop = "j_o_t"}
func.func private @k_mixed(%y: memref<10x20xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 1.000000e+00 : f32
  affine.for %j_o = 0 to 2 {
    affine.for %i_o = 0 to 3 {
      affine.for %i_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%i_o) {
        affine.for %j_i = 0 to min affine_map<(d0) -> (16, ((d0 * -16) + 20))>(%j_o) {
          affine.for %h = affine_map<(d0) -> (d0 mod 2)>(%i_o) to affine_map<(d0) -> ((d0 mod 2) + 1)>(%i_o) {
            affine.store %c, %y[%i_o * 4 + %i_i, %j_o * 16 + %j_i + %h] : memref<10x20xf32>
          } {qd.loop = "h"}
        } {qd.loop = "j_i"}
      } {qd.loop = "i_i"}
    } {qd.loop = "i_o"}
  } {qd.loop = "j_o"}
  func.return
}

// What peel is for: split 11 by 8, peel, and both parts unroll (8 and 3 copies).
// SPLIT-LABEL: func.func private @k_split(
// SPLIT-NEXT:    affine.for %i_o = 0 to 1 {
// SPLIT-NEXT:      affine.store %c, %y[%i_o * 8] : memref<11xf32>
// SPLIT-NEXT:      affine.store %c, %y[%i_o * 8 + 1] : memref<11xf32>
// SPLIT-COUNT-5:   affine.store %c, %y[%i_o * 8 + {{[2-6]}}] : memref<11xf32>
// SPLIT-NEXT:      affine.store %c, %y[%i_o * 8 + 7] : memref<11xf32>
// SPLIT-NEXT:    } {qd.loop = "i_o"}
// SPLIT-NEXT:    affine.for %i_o_t = 1 to 2 {
// SPLIT-NEXT:      affine.store %c, %y[%i_o_t * 8] : memref<11xf32>
// SPLIT-NEXT:      affine.store %c, %y[%i_o_t * 8 + 1] : memref<11xf32>
// SPLIT-NEXT:      affine.store %c, %y[%i_o_t * 8 + 2] : memref<11xf32>
// SPLIT-NEXT:    } {qd.loop = "i_o_t"}
func.func private @k_split(%c: f32, %y: memref<11xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 11 {
    affine.store %c, %y[%i] : memref<11xf32>
  } {qd.loop = "i"}
  func.return
}

// Refused: u's bounds read t; `one` has a single iteration; i_o's body has no
// bound that reads it (split by a factor that divides: nothing to peel); peeling
// t would name a copy of u `u_t`, a name the kernel already uses.
func.func private @k_refuse(%y: memref<8xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 1.000000e+00 : f32
  affine.for %i_o = 0 to 2 {
    affine.for %i_i = 0 to 4 {
      affine.store %c, %y[%i_o * 4 + %i_i] : memref<8xf32>
    } {qd.loop = "i_i"}
  } {qd.loop = "i_o"}
  affine.for %one = 0 to 1 {
    affine.for %i = 0 to min affine_map<(d0) -> (4, d0 + 2)>(%one) {
      affine.store %c, %y[%i] : memref<8xf32>
    } {qd.loop = "i"}
  } {qd.loop = "one"}
  affine.for %t = 0 to 3 {
    affine.for %u = 0 to affine_map<(d0) -> (d0)>(%t) {
      affine.store %c, %y[%u] : memref<8xf32>
    } {qd.loop = "u"}
  } {qd.loop = "t"}
  affine.for %u_t = 0 to 2 {
    affine.store %c, %y[%u_t] : memref<8xf32>
  } {qd.loop = "u_t"}
  func.return
}

// ERR-LOOP: LoopNotFoundError: peel: loop 'nope' in kernel 'k': no such loop; the kernel's loops are: i_o, i_i
// ERR-KERNEL: KernelNotFoundError: peel: loop 'i_o' in kernel 'nope': no such kernel
// ERR-BOUNDS: NonConstantBoundsError: peel: loop 'u' in kernel 'k_refuse': its bounds are not constants
// ERR-ONE: IllegalScheduleError: peel: loop 'one' in kernel 'k_refuse': it runs 1 iteration(s): there is no last one to peel
// ERR-NOTHING: IllegalScheduleError: peel: loop 'i_o' in kernel 'k_refuse': no loop bound in its body depends on it in a way peeling makes constant: there is nothing to peel
// ERR-NAME: DuplicateLoopNameError: peel: loop 't' in kernel 'k_refuse': the new loop name 'u_t' is already used in the kernel

// Another suffix names the copy's loops: the docstring's example with "_last".
// SUFFIX-LABEL: func.func private @k(
// SUFFIX:         } {qd.loop = "i_o"}
// SUFFIX-NEXT:    affine.for %i_o_last = 2 to 3 {
// SUFFIX-NEXT:      affine.for %i_i_last = 0 to 2 {
// SUFFIX:           } {qd.loop = "i_i_last"}
// SUFFIX-NEXT:    } {qd.loop = "i_o_last"}

// ERR-SUFFIX: InvalidArgumentError: peel: loop 'i_o' in kernel 'k': the suffix must be '_' and letters, digits or '_', got 't'
