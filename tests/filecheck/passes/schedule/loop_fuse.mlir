// RUN: qidao-opt %s -p 'loop-fuse{kernel="k" outer="i" inner="j"}' | filecheck %s
// RUN: qidao-opt %s -p 'loop-fuse{kernel="k_acc" outer="i" inner="r"}' | filecheck %s --check-prefix=ACC
// RUN: not qidao-opt %s -p 'loop-fuse{kernel="k_two" outer="i" inner="j"}' 2>&1 | filecheck %s --check-prefix=ERR-NEST
// RUN: not qidao-opt %s -p 'loop-fuse{kernel="k" outer="j" inner="i"}' 2>&1 | filecheck %s --check-prefix=ERR-ORDER
// RUN: not qidao-opt %s -p 'loop-fuse{kernel="k_tri" outer="i" inner="j"}' 2>&1 | filecheck %s --check-prefix=ERR-BOUNDS
// RUN: not qidao-opt %s -p 'loop-fuse{kernel="k" outer="i" inner="nope"}' 2>&1 | filecheck %s --check-prefix=ERR-LOOP

// The docstring's example: one loop over 4 * 8 iterations.
// CHECK-LABEL: func.func private @k(
// CHECK-NEXT:    affine.for %i_j = 0 to 32 {
// CHECK-NEXT:      %v = affine.load %x[%i_j floordiv 8, %i_j mod 8] : memref<4x8xf32>
// CHECK-NEXT:      affine.store %v, %y[%i_j floordiv 8, %i_j mod 8] : memref<4x8xf32>
// CHECK-NEXT:    } {qd.loop = "i_j"}
// CHECK-NEXT:    func.return
func.func private @k(%x: memref<4x8xf32>, %y: memref<4x8xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      affine.store %v, %y[%i, %j] : memref<4x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// Must not change anything else: the same names in another kernel stay.
// CHECK-LABEL: func.func private @k_acc(
// CHECK:         affine.for %i = 1 to 3 iter_args
// CHECK:         } {qd.loop = "i"}

// Lower bounds are added back; the accumulator passes through both loops, so it
// stays on the fused loop.
// ACC-LABEL: func.func private @k_acc(
// ACC:         %{{.*}} = affine.for %i_r = 0 to 10 iter_args(%[[A:.*]] = %zero) -> (f32) {
// ACC-NEXT:      %v = affine.load %x[%i_r floordiv 5 + 1, %i_r mod 5 + 2] : memref<4x8xf32>
// ACC-NEXT:      %{{.*}} = arith.addf %[[A]], %v : f32
// ACC-NEXT:      affine.yield
// ACC-NEXT:    } {qd.loop = "i_r"}
func.func private @k_acc(%x: memref<4x8xf32>, %out: memref<1xf32>) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  %s = affine.for %i = 1 to 3 iter_args(%a = %zero) -> (f32) {
    %t = affine.for %r = 2 to 7 iter_args(%b = %a) -> (f32) {
      %v = affine.load %x[%i, %r] : memref<4x8xf32>
      %n = arith.addf %b, %v : f32
      affine.yield %n : f32
    } {qd.loop = "r"}
    affine.yield %t : f32
  } {qd.loop = "i"}
  affine.store %s, %out[0] : memref<1xf32>
  func.return
}

// Not perfectly nested: i holds two loops.
func.func private @k_two(%y: memref<4x8xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      affine.store %c, %y[%i, %j] : memref<4x8xf32>
    } {qd.loop = "j"}
    affine.for %j2 = 0 to 8 {
      affine.store %c, %y[%i, %j2] : memref<4x8xf32>
    } {qd.loop = "j2"}
  } {qd.loop = "i"}
  func.return
}

// A bound that depends on the outer loop.
func.func private @k_tri(%y: memref<8x8xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      affine.store %c, %y[%i, %j] : memref<8x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// ERR-NEST: NotPerfectlyNestedError: loop-fuse: loop 'j' in kernel 'k_two': 'j' is not perfectly nested in 'i'
// ERR-ORDER: NotPerfectlyNestedError: loop-fuse: loop 'i' in kernel 'k': 'i' is not perfectly nested in 'j'
// ERR-BOUNDS: NonConstantBoundsError: loop-fuse: loop 'j' in kernel 'k_tri': its bounds are not constants
// ERR-LOOP: LoopNotFoundError: loop-fuse: loop 'nope' in kernel 'k': no such loop; the kernel's loops are: i, j
