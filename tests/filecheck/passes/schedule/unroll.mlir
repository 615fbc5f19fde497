// RUN: qidao-opt %s -p 'unroll{kernel="k" loop="i" factor=2}' | filecheck %s
// RUN: qidao-opt %s -p 'unroll{kernel="k" loop="i"}' | filecheck %s --check-prefix=FULL
// RUN: qidao-opt %s -p 'unroll{kernel="k_acc" loop="r" factor=2}' | filecheck %s --check-prefix=ACC
// RUN: qidao-opt %s -p 'unroll{kernel="k_nest" loop="i" factor=2}' | filecheck %s --check-prefix=NEST
// RUN: qidao-opt %s -p 'unroll{kernel="k" loop="i" factor=1}' | filecheck %s --check-prefix=ONE
// RUN: qidao-opt %s -p 'unroll{kernel="k_tri" loop="j" factor=1}' | filecheck %s --check-prefix=ONE-TRI
// RUN: not qidao-opt %s -p 'unroll{kernel="k" loop="i" factor=-1}' 2>&1 | filecheck %s --check-prefix=ERR-FACTOR
// RUN: not qidao-opt %s -p 'unroll{kernel="k_tri" loop="j" factor=2}' 2>&1 | filecheck %s --check-prefix=ERR-BOUNDS
// RUN: not qidao-opt %s -p 'unroll{kernel="k_huge" loop="i"}' 2>&1 | filecheck %s --check-prefix=ERR-HUGE

// The docstring's example: two copies per iteration, a remainder loop for 5 mod 2.
// CHECK-LABEL: func.func private @k(
// CHECK-NEXT:    affine.for %i = 0 to 4 step 2 {
// CHECK-NEXT:      %v = affine.load %x[%i] : memref<5xf32>
// CHECK-NEXT:      affine.store %v, %y[%i] : memref<5xf32>
// CHECK-NEXT:      %v_1 = affine.load %x[%i + 1] : memref<5xf32>
// CHECK-NEXT:      affine.store %v_1, %y[%i + 1] : memref<5xf32>
// CHECK-NEXT:    } {qd.loop = "i"}
// CHECK-NEXT:    affine.for %i_rem = 4 to 5 {
// CHECK-NEXT:      %v_2 = affine.load %x[%i_rem] : memref<5xf32>
// CHECK-NEXT:      affine.store %v_2, %y[%i_rem] : memref<5xf32>
// CHECK-NEXT:    } {qd.loop = "i_rem"}
// CHECK-NEXT:    func.return
// FULL-LABEL: func.func private @k(
// FULL-NEXT:    %v = affine.load %x[0] : memref<5xf32>
// FULL-NEXT:    affine.store %v, %y[0] : memref<5xf32>
// FULL-COUNT-3: affine.store
// FULL-NEXT:    %v_4 = affine.load %x[4] : memref<5xf32>
// FULL-NEXT:    affine.store %v_4, %y[4] : memref<5xf32>
// FULL-NEXT:    func.return
// Factor 1 copies nothing: the loop stays as it was, marked to stay rolled.
// ONE-LABEL: func.func private @k(
// ONE-NEXT:    affine.for %i = 0 to 5 {
// ONE-NEXT:      %v = affine.load %x[%i] : memref<5xf32>
// ONE-NEXT:      affine.store %v, %y[%i] : memref<5xf32>
// ONE-NEXT:    } {qd.loop = "i", qd.rolled}
// ONE-NEXT:    func.return
func.func private @k(%x: memref<5xf32>, %y: memref<5xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 5 {
    %v = affine.load %x[%i] : memref<5xf32>
    affine.store %v, %y[%i] : memref<5xf32>
  } {qd.loop = "i"}
  func.return
}

// Must not change anything else: another kernel's loop of the same name.
// CHECK-LABEL: func.func private @k_acc(
// CHECK:         affine.for %r = 0 to 5 iter_args

// iter_args are threaded through the copies and into the remainder loop.
// ACC-LABEL: func.func private @k_acc(
// ACC:         %[[M:.*]] = affine.for %r = 0 to 4 step 2 iter_args(%[[A:.*]] = %zero) -> (f32) {
// ACC-NEXT:      %v = affine.load %x[%r] : memref<5xf32>
// ACC-NEXT:      %[[N1:.*]] = arith.addf %[[A]], %v : f32
// ACC-NEXT:      %v_1 = affine.load %x[%r + 1] : memref<5xf32>
// ACC-NEXT:      %[[N2:.*]] = arith.addf %[[N1]], %v_1 : f32
// ACC-NEXT:      affine.yield %[[N2]] : f32
// ACC-NEXT:    } {qd.loop = "r"}
// ACC-NEXT:    %{{.*}} = affine.for %r_rem = 4 to 5 iter_args(%{{.*}} = %[[M]]) -> (f32) {
func.func private @k_acc(%x: memref<5xf32>, %out: memref<1xf32>) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  %s = affine.for %r = 0 to 5 iter_args(%a = %zero) -> (f32) {
    %v = affine.load %x[%r] : memref<5xf32>
    %n = arith.addf %a, %v : f32
    affine.yield %n : f32
  } {qd.loop = "r"}
  affine.store %s, %out[0] : memref<1xf32>
  func.return
}

// Loops inside the body stay uniquely named: j in copy 1 is j_u1, in the remainder j_rem.
// NEST-LABEL: func.func private @k_nest(
// NEST:          affine.for %i = 0 to 2 step 2 {
// NEST-NEXT:       affine.for %j = 0 to 2 {
// NEST:            } {qd.loop = "j"}
// NEST-NEXT:       affine.for %j_u1 = 0 to 2 {
// NEST-NEXT:         affine.store %c, %y[%i + 1, %j_u1] : memref<3x2xf32>
// NEST-NEXT:       } {qd.loop = "j_u1"}
// NEST-NEXT:     } {qd.loop = "i"}
// NEST-NEXT:     affine.for %i_rem = 2 to 3 {
// NEST-NEXT:       affine.for %j_rem = 0 to 2 {
// NEST-NEXT:         affine.store %c, %y[%i_rem, %j_rem] : memref<3x2xf32>
// NEST-NEXT:       } {qd.loop = "j_rem"}
// NEST-NEXT:     } {qd.loop = "i_rem"}
func.func private @k_nest(%y: memref<3x2xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 2 {
      affine.store %c, %y[%i, %j] : memref<3x2xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// A bound that depends on another loop.
func.func private @k_tri(%y: memref<8x8xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      affine.store %c, %y[%i, %j] : memref<8x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// ERR-FACTOR: InvalidArgumentError: unroll: loop 'i' in kernel 'k': factor must be 0 (full unroll) or positive, got -1
// ERR-BOUNDS: NonConstantBoundsError: unroll: loop 'j' in kernel 'k_tri': its bounds are not constants

// Must not fire: a full unroll of 2^20 iterations would make 2^22 ops.
// ERR-HUGE: IllegalScheduleError: unroll: loop 'i' in kernel 'k_huge': 1048576 copies of its body (3 ops) would be 3145728 ops, more than 65536: unroll by a smaller factor
func.func private @k_huge(%x: memref<1048576xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 1048576 {
    %v = affine.load %x[%i] : memref<1048576xf32>
    affine.store %v, %x[%i] : memref<1048576xf32>
  } {qd.loop = "i"}
  func.return
}

// Factor 1 needs no constant bounds: the triangular loop is marked.
// ONE-TRI-LABEL: func.func private @k_tri(
// ONE-TRI:         } {qd.loop = "j", qd.rolled}
// ONE-TRI-NEXT:  } {qd.loop = "i"}
