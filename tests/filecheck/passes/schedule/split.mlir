// RUN: qidao-opt %s -p 'split{kernel="k" loop="i" factor=4}' | filecheck %s
// RUN: qidao-opt %s -p 'split{kernel="k_even" loop="i" factor=4}' | filecheck %s --check-prefix=EVEN
// RUN: qidao-opt %s -p 'split{kernel="k_acc" loop="r" factor=3}' | filecheck %s --check-prefix=ACC
// RUN: not qidao-opt %s -p 'split{kernel="k" loop="nope" factor=4}' 2>&1 | filecheck %s --check-prefix=ERR-LOOP
// RUN: not qidao-opt %s -p 'split{kernel="k" loop="i" factor=0}' 2>&1 | filecheck %s --check-prefix=ERR-FACTOR
// RUN: not qidao-opt %s -p 'split{kernel="k_tri" loop="j" factor=2}' 2>&1 | filecheck %s --check-prefix=ERR-BOUNDS
// RUN: not qidao-opt %s -p 'split{kernel="nope" loop="i" factor=2}' 2>&1 | filecheck %s --check-prefix=ERR-KERNEL
// RUN: qidao-opt %s -p 'split{kernel="k_panels" loop="j" factor=32}' | filecheck %s --check-prefix=PANELS
// RUN: qidao-opt %s -p 'split{kernel="k_panels" loop="j" factor=16}' | filecheck %s --check-prefix=PANELS16

// The docstring's example: 10 = 4 + 4 + 2, so the inner bound is a min (the tail).
// CHECK-LABEL: func.func private @k(
// CHECK-NEXT:    affine.for %i_o = 0 to 3 {
// CHECK-NEXT:      affine.for %i_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%i_o) {
// CHECK-NEXT:        %v = affine.load %x[%i_o * 4 + %i_i] : memref<10xf32>
// CHECK-NEXT:        affine.store %v, %y[%i_o * 4 + %i_i] : memref<10xf32>
// CHECK-NEXT:      } {qd.loop = "i_i"}
// CHECK-NEXT:    } {qd.loop = "i_o"}
func.func private @k(%x: memref<10xf32>, %y: memref<10xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 10 {
    %v = affine.load %x[%i] : memref<10xf32>
    affine.store %v, %y[%i] : memref<10xf32>
  } {qd.loop = "i"}
  func.return
}

// Must not change anything else: the other kernel, with the same loop name, is untouched.
// CHECK-LABEL: func.func private @k_even(
// CHECK:         affine.for %i = 0 to 8 {
// CHECK-NEXT:      affine.for %j = 0 to 3 {
// CHECK:         } {qd.loop = "i"}

// The factor divides the extent: a constant inner bound, no min; the inner loop `j`
// and the ops outside the split loop are untouched.
// EVEN-LABEL: func.func private @k_even(
// EVEN-NEXT:    %c = arith.constant 1.000000e+00 : f32
// EVEN-NEXT:    affine.for %i_o = 0 to 2 {
// EVEN-NEXT:      affine.for %i_i = 0 to 4 {
// EVEN-NEXT:        affine.for %j = 0 to 3 {
// EVEN-NEXT:          affine.store %c, %y[%i_o * 4 + %i_i, %j] : memref<8x3xf32>
// EVEN-NEXT:        } {qd.loop = "j"}
// EVEN-NEXT:      } {qd.loop = "i_i"}
// EVEN-NEXT:    } {qd.loop = "i_o"}
// EVEN-NEXT:    affine.for %z = 0 to 5 {
func.func private @k_even(%y: memref<8x3xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 3 {
      affine.store %c, %y[%i, %j] : memref<8x3xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  affine.for %z = 0 to 5 {
    affine.store %c, %y[0, 0] : memref<8x3xf32>
  } {qd.loop = "z"}
  func.return
}

// iter_args are carried through both loops; a lower bound of 2 is added back.
// ACC-LABEL: func.func private @k_acc(
// ACC:         %{{.*}} = affine.for %r_o = 0 to 2 iter_args(%[[A:.*]] = %zero) -> (f32) {
// ACC-NEXT:      %[[R:.*]] = affine.for %r_i = 0 to min affine_map<(d0) -> (3, ((d0 * -3) + 5))>(%r_o) iter_args(%[[B:.*]] = %[[A]]) -> (f32) {
// ACC-NEXT:        %v = affine.load %x[%r_o * 3 + %r_i + 2] : memref<8xf32>
// ACC-NEXT:        %{{.*}} = arith.addf %[[B]], %v : f32
// ACC-NEXT:        affine.yield
// ACC-NEXT:      } {qd.loop = "r_i"}
// ACC-NEXT:      affine.yield %[[R]] : f32
// ACC-NEXT:    } {qd.loop = "r_o"}
func.func private @k_acc(%x: memref<8xf32>, %out: memref<1xf32>) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  %s = affine.for %r = 2 to 7 iter_args(%a = %zero) -> (f32) {
    %v = affine.load %x[%r] : memref<8xf32>
    %n = arith.addf %a, %v : f32
    affine.yield %n : f32
  } {qd.loop = "r"}
  affine.store %s, %out[0] : memref<1xf32>
  func.return
}

// Bounds that depend on another loop cannot be split.
func.func private @k_tri(%y: memref<8x8xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      affine.store %c, %y[%i, %j] : memref<8x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// ERR-LOOP: LoopNotFoundError: split: loop 'nope' in kernel 'k': no such loop; the kernel's loops are: i
// ERR-FACTOR: InvalidArgumentError: split: loop 'i' in kernel 'k': factor must be at least 1, got 0
// ERR-BOUNDS: NonConstantBoundsError: split: loop 'j' in kernel 'k_tri': its bounds are not constants
// ERR-KERNEL: KernelNotFoundError: split: loop 'i' in kernel 'nope': no such kernel; the kernels are: k, k_even, k_acc, k_tri

// A rhs in column panels (tg.matmul's rhs_layout = "panels") is read at
// [j floordiv 32, k, j mod 32]; split by 32 writes j = 32 * j_o + j_i with
// 0 <= j_i < 32, so the index is [j_o, k, j_i] (quotients.py).
// PANELS-LABEL: func.func private @k_panels(
// PANELS:         affine.for %j_o = 0 to 2 {
// PANELS-NEXT:      affine.for %j_i = 0 to 32 {
// PANELS-NEXT:        %v = affine.load %b[%j_o, %k, %j_i] : memref<2x8x32xf32>
// PANELS-NEXT:        affine.store %v, %y[%k, %j_o * 32 + %j_i] : memref<8x64xf32>
// Must not fire: by 16, j = 16 * j_o + j_i, and j_o's 16 * j_o does not divide by
// 32: the quotient stays (a copy's loops as they are).
// PANELS16-LABEL: func.func private @k_panels(
// PANELS16:         %v = affine.load %b[(%j_o * 16 + %j_i) floordiv 32, %k, (%j_o * 16 + %j_i) mod 32] : memref<2x8x32xf32>
func.func private @k_panels(%b: memref<2x8x32xf32>, %y: memref<8x64xf32>) attributes {qd.kernel = "t"} {
  affine.for %k = 0 to 8 {
    affine.for %j = 0 to 64 {
      %v = affine.load %b[%j floordiv 32, %k, %j mod 32] : memref<2x8x32xf32>
      affine.store %v, %y[%k, %j] : memref<8x64xf32>
    } {qd.loop = "j"}
  } {qd.loop = "k"}
  func.return
}
