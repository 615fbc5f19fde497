// RUN: qidao-opt %s -p 'vectorize{kernel="k" loop="j" width=4}' | filecheck %s
// RUN: qidao-opt %s -p 'vectorize{kernel="k_bcast" loop="j" width=8}' | filecheck %s --check-prefix=BCAST
// RUN: qidao-opt %s -p 'vectorize{kernel="k_fma" loop="j"}' | filecheck %s --check-prefix=FMA
// RUN: qidao-opt %s -p 'vectorize{kernel="k_bcast" loop="j" width=8},lower-affine,convert-scf-to-cf,convert-to-llvm' | filecheck %s --check-prefix=LLVM
// RUN: not qidao-opt %s -p 'vectorize{kernel="k" loop="i" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-INNER
// RUN: qidao-opt %s -p 'vectorize{kernel="k" loop="j" width=3}' | filecheck %s --check-prefix=TAIL
// RUN: qidao-opt %s -p 'vectorize{kernel="k_contract" loop="j" width=4}' | filecheck %s --check-prefix=CONTRACT
// RUN: qidao-opt %s -p 'vectorize{kernel="k_min" loop="j_i" width=16}' | filecheck %s --check-prefix=MIN
// RUN: qidao-opt %s -p 'vectorize{kernel="k_min_even" loop="j_i" width=16}' | filecheck %s --check-prefix=NOTAIL
// RUN: qidao-opt %s -p 'vectorize{kernel="k_red" loop="j" width=4}' | filecheck %s --check-prefix=RED
// RUN: qidao-opt %s -p 'vectorize{kernel="k_dot" loop="j" width=4}' | filecheck %s --check-prefix=DOT
// RUN: qidao-opt %s -p 'vectorize{kernel="k_max" loop="j" width=8}' | filecheck %s --check-prefix=MAX
// RUN: qidao-opt %s -p 'vectorize{kernel="k_row" loop="r" width=64},vectorize{kernel="k_row" loop="r_tail" width=16}' | filecheck %s --check-prefix=ROW
// RUN: qidao-opt %s -p 'vectorize{kernel="k_dot" loop="j" width=4},lower-affine,convert-scf-to-cf,convert-to-llvm' | filecheck %s --check-prefix=LLVM-DOT
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_notred" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-RED
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_iter" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-ITER
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_taken" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-TAKEN
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_maxlb" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-MAXLB
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_stride" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-STRIDE
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_col" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-COL
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_dep" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-DEP
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_op" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-OP
// RUN: qidao-opt %s -p 'vectorize{kernel="k_mask" loop="j" width=4},vectorize{kernel="k_mask_outer" loop="j" width=4}' | filecheck %s --check-prefix=MASK
// RUN: qidao-opt %s -p 'vectorize{kernel="k_mask" loop="j" width=4},vectorize{kernel="k_mask_outer" loop="j" width=4},lower-affine,convert-scf-to-cf,convert-to-llvm' | filecheck %s --check-prefix=LLVM-MASK
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_mask_cast" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-MASK
// RUN: not qidao-opt %s -p 'vectorize{kernel="k" loop="j" width=0}' 2>&1 | filecheck %s --check-prefix=ERR-WIDTH
// RUN: not qidao-opt %s -p 'vectorize{kernel="k" loop="j" width=1048576}' 2>&1 | filecheck %s --check-prefix=ERR-WIDE

// The docstring's example: x[i, j] and y[i, j] are contiguous in j, s[i] is invariant.
// CHECK-LABEL: func.func private @k(
// CHECK-NEXT:    affine.for %i = 0 to 2 {
// CHECK-NEXT:      affine.for %j = 0 to 8 step 4 {
// CHECK-NEXT:        %a = vector.load %x[%i, %j] : memref<2x8xf32>, vector<4xf32>
// CHECK-NEXT:        %b = affine.load %s[%i] : memref<2xf32>
// CHECK-NEXT:        %b_1 = vector.broadcast %b : f32 to vector<4xf32>
// CHECK-NEXT:        %c = arith.mulf %a, %b_1 : vector<4xf32>
// CHECK-NEXT:        vector.store %c, %y[%i, %j] : memref<2x8xf32>, vector<4xf32>
// CHECK-NEXT:      } {qd.loop = "j"}
// CHECK-NEXT:    } {qd.loop = "i"}
func.func private @k(%x: memref<2x8xf32>, %s: memref<2xf32>, %y: memref<2x8xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 8 {
      %a = affine.load %x[%i, %j] : memref<2x8xf32>
      %b = affine.load %s[%i] : memref<2xf32>
      %c = arith.mulf %a, %b : f32
      affine.store %c, %y[%i, %j] : memref<2x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// An invariant load becomes a broadcast; a constant in the body and a scalar from
// outside the loop are broadcast once, before it. An offset index (j + 1) on a
// strided view is still contiguous (innermost stride 1). v * s0 + z contracts to
// one fma.
// BCAST-LABEL: func.func private @k_bcast(
// BCAST-NEXT:    %z = arith.constant 2.000000e+00 : f32
// BCAST-NEXT:    %h = arith.constant 5.000000e-01 : f32
// BCAST-NEXT:    %z_1 = vector.broadcast %z : f32 to vector<8xf32>
// BCAST-NEXT:    %h_1 = vector.broadcast %h : f32 to vector<8xf32>
// BCAST-NEXT:    affine.for %j = 0 to 16 step 8 {
// BCAST-NEXT:      %s0 = affine.load %s[0] : memref<4xf32>
// BCAST-NEXT:      %s0_1 = vector.broadcast %s0 : f32 to vector<8xf32>
// BCAST-NEXT:      %[[J1:.*]] = affine.apply affine_map<()[s0] -> ((s0 + 1))> ()[%j]
// BCAST-NEXT:      %v = vector.load %x[%[[J1]]] : memref<17xf32, strided<[1]>>, vector<8xf32>
// BCAST-NEXT:      %n = math.fma %v, %s0_1, %z_1 : vector<8xf32>
// BCAST-NEXT:      %p = arith.maximumf %n, %h_1 : vector<8xf32>
// BCAST-NEXT:      vector.store %p, %y[%j] : memref<16xf32>, vector<8xf32>
// BCAST-NEXT:    } {qd.loop = "j"}
func.func private @k_bcast(%x: memref<17xf32, strided<[1]>>, %s: memref<4xf32>, %y: memref<16xf32>) attributes {qd.kernel = "t"} {
  %z = arith.constant 2.000000e+00 : f32
  affine.for %j = 0 to 16 {
    %h = arith.constant 5.000000e-01 : f32
    %s0 = affine.load %s[0] : memref<4xf32>
    %v = affine.load %x[%j + 1] : memref<17xf32, strided<[1]>>
    %m = arith.mulf %v, %s0 : f32
    %n = arith.addf %m, %z : f32
    %p = arith.maximumf %n, %h : f32
    affine.store %p, %y[%j] : memref<16xf32>
  } {qd.loop = "j"}
  func.return
}

// math.fma on vectors, the default width 16, a load and store of the same element.
// FMA-LABEL: func.func private @k_fma(
// FMA:         affine.for %j = 0 to 32 step 16 {
// FMA-NEXT:      %a = vector.load %x[%i, %j] : memref<2x32xf32>, vector<16xf32>
// FMA-NEXT:      %o = vector.load %out[%i, %j] : memref<2x32xf32>, vector<16xf32>
// FMA-NEXT:      %f = math.fma %a, %a, %o : vector<16xf32>
// FMA-NEXT:      vector.store %f, %out[%i, %j] : memref<2x32xf32>, vector<16xf32>
func.func private @k_fma(%x: memref<2x32xf32>, %out: memref<2x32xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 32 {
      %a = affine.load %x[%i, %j] : memref<2x32xf32>
      %o = affine.load %out[%i, %j] : memref<2x32xf32>
      %f = math.fma %a, %a, %o : f32
      affine.store %f, %out[%i, %j] : memref<2x32xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// A tail: 8 is not a multiple of 3, so j covers [0, 6) and j_tail [6, 8), scalar.
// TAIL-LABEL: func.func private @k(
// TAIL:            affine.for %j = 0 to 6 step 3 {
// TAIL-NEXT:         %a = vector.load %x[%i, %j] : memref<2x8xf32>, vector<3xf32>
// TAIL:            } {qd.loop = "j"}
// TAIL-NEXT:       affine.for %j_tail = 6 to 8 {
// TAIL-NEXT:         %a_1 = affine.load %x[%i, %j_tail] : memref<2x8xf32>
// TAIL-NEXT:         %[[B:.*]] = affine.load %s[%i] : memref<2xf32>
// TAIL-NEXT:         %c_1 = arith.mulf %a_1, %[[B]] : f32
// TAIL-NEXT:         affine.store %c_1, %y[%i, %j_tail] : memref<2x8xf32>
// TAIL-NEXT:       } {qd.loop = "j_tail"}
// TAIL-NEXT:     } {qd.loop = "i"}

// The lowering: a splat is insertelement + shufflevector; vector loads/stores go
// through one GEP to the first element, alignment 4.
// LLVM-LABEL: llvm.func @k_bcast(
// LLVM:         %{{.*}} = llvm.insertelement %{{.*}}, %{{.*}}[%{{.*}} : i32] : vector<8xf32>
// LLVM-NEXT:    %{{.*}} = llvm.shufflevector %{{.*}}, %{{.*}} [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xf32>
// LLVM:         %[[P:.*]] = llvm.getelementptr inbounds %x{{[_0-9]*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// LLVM-NEXT:    %v = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// LLVM:         %{{.*}} = llvm.call_intrinsic "llvm.maximum.v8f32"(%{{.*}}, %{{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// LLVM:         llvm.store %p, %{{.*}} {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr

// Not innermost: `i` has `j` inside it.
// ERR-INNER: IllegalScheduleError: vectorize: loop 'i' in kernel 'k': it is not innermost: loop 'j' is inside it
// ERR-WIDTH: InvalidArgumentError: vectorize: loop 'j' in kernel 'k': width must be between 1 and 256 lanes, got 0
// ERR-WIDE: InvalidArgumentError: vectorize: loop 'j' in kernel 'k': width must be between 1 and 256 lanes, got 1048576

// Stride 2 in the loop.
// ERR-STRIDE: IllegalScheduleError: vectorize: loop 'j' in kernel 'k_stride': a load from memref<16xf32> with indices {{.*}} is not unit-stride in the loop
func.func private @k_stride(%x: memref<16xf32>, %y: memref<8xf32>) attributes {qd.kernel = "t"} {
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%j * 2] : memref<16xf32>
    affine.store %v, %y[%j] : memref<8xf32>
  } {qd.loop = "j"}
  func.return
}

// The loop indexes the outer dimension: a column, stride 8 in memory.
// ERR-COL: IllegalScheduleError: vectorize: loop 'j' in kernel 'k_col': a store to memref<8x8xf32> with indices {{.*}} is not unit-stride in the loop
func.func private @k_col(%x: memref<8x8xf32>, %y: memref<8x8xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<8x8xf32>
      affine.store %v, %y[%j, %i] : memref<8x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// y[j + 1] = y[j] * 2: each iteration reads what the previous one wrote.
// ERR-DEP: IllegalScheduleError: vectorize: loop 'j' in kernel 'k_dep': memref<9xf32> is stored at {{.*}} and loaded at {{.*}}: a dependence across iterations
func.func private @k_dep(%y: memref<9xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 2.000000e+00 : f32
  affine.for %j = 0 to 8 {
    %v = affine.load %y[%j] : memref<9xf32>
    %w = arith.mulf %v, %c : f32
    affine.store %w, %y[%j + 1] : memref<9xf32>
  } {qd.loop = "j"}
  func.return
}

// A comparison feeding a select (Clip's lower bound, NaN kept): lanes.cmpf makes a
// vector<4xi1> mask, lanes.select blends by it; the invariant 0.0 is broadcast once.
// MASK-LABEL: func.func private @k_mask(
// MASK:         %[[Z:.*]] = vector.broadcast %c : f32 to vector<4xf32>
// MASK-NEXT:    affine.for %j = 0 to 8 step 4 {
// MASK-NEXT:      %v = vector.load %x[%j] : memref<8xf32>, vector<4xf32>
// MASK-NEXT:      %p = lanes.cmpf oge, %v, %[[Z]] : vector<4xf32>
// MASK-NEXT:      %m = arith.maximumf %v, %[[Z]] : vector<4xf32>
// MASK-NEXT:      %w = lanes.select %p, %v, %m : vector<4xi1>, vector<4xf32>
// MASK-NEXT:      vector.store %w, %y[%j] : memref<8xf32>, vector<4xf32>
// LLVM-MASK-LABEL: llvm.func @k_mask(
// LLVM-MASK:         %[[P:p[_0-9]*]] = llvm.fcmp "oge" %[[V:v[_0-9]*]], %{{.*}} : vector<4xf32>
// LLVM-MASK:         %{{.*}} = llvm.select %[[P]], %[[V]], %{{.*}} : vector<4xi1>, vector<4xf32>
func.func private @k_mask(%x: memref<8xf32>, %y: memref<8xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 0.000000e+00 : f32
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%j] : memref<8xf32>
    %p = arith.cmpf oge, %v, %c : f32
    %m = arith.maximumf %v, %c : f32
    %w = arith.select %p, %v, %m : f32
    affine.store %w, %y[%j] : memref<8xf32>
  } {qd.loop = "j"}
  func.return
}

// A select on a condition from outside the loop stays arith.select: one scalar i1
// picks a whole vector.
// MASK-LABEL: func.func private @k_mask_outer(
// MASK:         %w = arith.select %p, %{{.*}}, %{{.*}} : vector<4xf32>
// LLVM-MASK-LABEL: llvm.func @k_mask_outer(
// LLVM-MASK:         %{{.*}} = llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, vector<4xf32>
func.func private @k_mask_outer(%x: memref<8xf32>, %y: memref<8xf32>, %p: i1) attributes {qd.kernel = "t"} {
  %c = arith.constant 0.000000e+00 : f32
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%j] : memref<8xf32>
    %w = arith.select %p, %v, %c : f32
    affine.store %w, %y[%j] : memref<8xf32>
  } {qd.loop = "j"}
  func.return
}

// Must not fire: a comparison whose result is not a select's condition (here it is
// cast to a float) would need the mask as a value.
// ERR-MASK: IllegalScheduleError: vectorize: loop 'j' in kernel 'k_mask_cast': its body has 'arith.cmpf', a comparison whose result is used other than as a select's condition, which is not vectorized
func.func private @k_mask_cast(%x: memref<8xf32>, %y: memref<8xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 0.000000e+00 : f32
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%j] : memref<8xf32>
    %p = arith.cmpf ogt, %v, %c : f32
    %w = arith.uitofp %p : i1 to f32
    affine.store %w, %y[%j] : memref<8xf32>
  } {qd.loop = "j"}
  func.return
}

// ERR-OP: IllegalScheduleError: vectorize: loop 'j' in kernel 'k_op': its body has 'math.atan', which is not vectorized
func.func private @k_op(%x: memref<8xf32>, %y: memref<8xf32>) attributes {qd.kernel = "t"} {
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%j] : memref<8xf32>
    %w = math.atan %v : f32
    affine.store %w, %y[%j] : memref<8xf32>
  } {qd.loop = "j"}
  func.return
}

// FMA contraction, and where it must not fire: %e = b * b feeds only %f = a + e
// (the product on the right) and becomes fma(b, b, a); %m is used twice (by %r
// and %d) and %p is also stored, so both stay mulf; a subf is never contracted.
// CONTRACT-LABEL: func.func private @k_contract(
// CONTRACT:        affine.for %j = 0 to 16 step 4 {
// CONTRACT-NEXT:     %a = vector.load %x[%j] : memref<16xf32>, vector<4xf32>
// CONTRACT-NEXT:     %b = vector.load %y[%j] : memref<16xf32>, vector<4xf32>
// CONTRACT-NEXT:     %m = arith.mulf %a, %b : vector<4xf32>
// CONTRACT-NEXT:     %r = arith.addf %b, %m : vector<4xf32>
// CONTRACT-NEXT:     %p = arith.mulf %a, %a : vector<4xf32>
// CONTRACT-NEXT:     %q = arith.addf %p, %b : vector<4xf32>
// CONTRACT-NEXT:     %d = arith.subf %m, %q : vector<4xf32>
// CONTRACT-NEXT:     %f = math.fma %b, %b, %a : vector<4xf32>
// CONTRACT-NEXT:     %g = arith.addf %d, %f : vector<4xf32>
// CONTRACT-NEXT:     vector.store %r, %s[%j] : memref<16xf32>, vector<4xf32>
// CONTRACT-NEXT:     vector.store %p, %u[%j] : memref<16xf32>, vector<4xf32>
// CONTRACT-NEXT:     vector.store %g, %t[%j] : memref<16xf32>, vector<4xf32>
// CONTRACT-NEXT:   } {qd.loop = "j"}
func.func private @k_contract(%x: memref<16xf32>, %y: memref<16xf32>, %s: memref<16xf32>, %u: memref<16xf32>, %t: memref<16xf32>) attributes {qd.kernel = "t"} {
  affine.for %j = 0 to 16 {
    %a = affine.load %x[%j] : memref<16xf32>
    %b = affine.load %y[%j] : memref<16xf32>
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %b, %m : f32
    %p = arith.mulf %a, %a : f32
    %q = arith.addf %p, %b : f32
    %d = arith.subf %m, %q : f32
    %e = arith.mulf %b, %b : f32
    %f = arith.addf %a, %e : f32
    %g = arith.addf %d, %f : f32
    affine.store %r, %s[%j] : memref<16xf32>
    affine.store %p, %u[%j] : memref<16xf32>
    affine.store %g, %t[%j] : memref<16xf32>
  } {qd.loop = "j"}
  func.return
}

// A min upper bound (split by 48, which does not divide 100): the vector loop stops
// at the last multiple of 16 in each tile, an affine.min computes that point again
// and the tail runs from there to the tile's end.
// MIN-LABEL: func.func private @k_min(
// MIN-NEXT:    affine.for %j_o = 0 to 3 {
// MIN-NEXT:      affine.for %j_i = 0 to min affine_map<(d0) -> (48, ((((d0 * -12) + 25) floordiv 4) * 16))>(%j_o) step 16 {
// MIN:             %n = arith.negf %a : vector<16xf32>
// MIN:           } {qd.loop = "j_i"}
// MIN-NEXT:      %[[STOP:.*]] = affine.min affine_map<(d0) -> (48, ((((d0 * -12) + 25) floordiv 4) * 16))> (%j_o)
// MIN-NEXT:      affine.for %j_i_tail = max affine_map<(d0) -> (0, d0)>(%[[STOP]]) to min affine_map<(d0) -> (48, ((d0 * -48) + 100))>(%j_o) {
// MIN-NEXT:        %a_1 = affine.load %x[%j_o * 48 + %j_i_tail] : memref<100xf32>
// MIN-NEXT:        %n_1 = arith.negf %a_1 : f32
// MIN-NEXT:        affine.store %n_1, %y[%j_o * 48 + %j_i_tail] : memref<100xf32>
// MIN-NEXT:      } {qd.loop = "j_i_tail"}
// MIN-NEXT:    } {qd.loop = "j_o"}
func.func private @k_min(%x: memref<100xf32>, %y: memref<100xf32>) attributes {qd.kernel = "t"} {
  affine.for %j_o = 0 to 3 {
    affine.for %j_i = 0 to min affine_map<(d0) -> (48, d0 * -48 + 100)>(%j_o) {
      %a = affine.load %x[%j_o * 48 + %j_i] : memref<100xf32>
      %n = arith.negf %a : f32
      affine.store %n, %y[%j_o * 48 + %j_i] : memref<100xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  func.return
}

// A min bound whose every result is a multiple of 16 (tiles of 48 over 96 + 16):
// no tail.
// NOTAIL-LABEL: func.func private @k_min_even(
// NOTAIL:         affine.for %j_i = 0 to min affine_map<(d0) -> (48, ((d0 * -48) + 112))>(%j_o) step 16 {
// NOTAIL-NOT:     j_i_tail
// NOTAIL:         func.return
func.func private @k_min_even(%x: memref<112xf32>, %y: memref<112xf32>) attributes {qd.kernel = "t"} {
  affine.for %j_o = 0 to 3 {
    affine.for %j_i = 0 to min affine_map<(d0) -> (48, d0 * -48 + 112)>(%j_o) {
      %a = affine.load %x[%j_o * 48 + %j_i] : memref<112xf32>
      %n = arith.negf %a : f32
      affine.store %n, %y[%j_o * 48 + %j_i] : memref<112xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  func.return
}

// A row sum through memory, acc[i] += x[i, j]: W partial sums in registers from
// -0.0, then acc[i] is reloaded, the lanes added to it, and stored once.
// RED-LABEL: func.func private @k_red(
// RED-NEXT:    affine.for %i = 0 to 2 {
// RED-NEXT:      %a_init = arith.constant -0.000000e+00 : f32
// RED-NEXT:      %a_init_1 = vector.broadcast %a_init : f32 to vector<4xf32>
// RED-NEXT:      %a_lanes = affine.for %j = 0 to 8 step 4 iter_args(%a = %a_init_1) -> (vector<4xf32>) {
// RED-NEXT:        %v = vector.load %x[%i, %j] : memref<2x8xf32>, vector<4xf32>
// RED-NEXT:        %s = arith.addf %a, %v : vector<4xf32>
// RED-NEXT:        affine.yield %s : vector<4xf32>
// RED-NEXT:      } {qd.loop = "j"}
// RED-NEXT:      %a_1 = affine.load %acc[%i] : memref<2xf32>
// RED-NEXT:      %a_sum = vector.reduction <add>, %a_lanes, %a_1 : vector<4xf32> into f32
// RED-NEXT:      affine.store %a_sum, %acc[%i] : memref<2xf32>
// RED-NEXT:    } {qd.loop = "i"}
func.func private @k_red(%x: memref<2x8xf32>, %acc: memref<2xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<2x8xf32>
      %a = affine.load %acc[%i] : memref<2xf32>
      %s = arith.addf %a, %v : f32
      affine.store %s, %acc[%i] : memref<2xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// The docstring's dot product: iter_args, acc + a * b contracted into an fma on the
// vector accumulator, and a scalar tail (10 = 8 + 2) that continues from the sum.
// DOT-LABEL: func.func private @k_dot(
// DOT-NEXT:    %zero = arith.constant 0.000000e+00 : f32
// DOT-NEXT:    %acc_init = arith.constant -0.000000e+00 : f32
// DOT-NEXT:    %acc_init_1 = vector.broadcast %acc_init : f32 to vector<4xf32>
// DOT-NEXT:    %acc_lanes = affine.for %j = 0 to 8 step 4 iter_args(%acc = %acc_init_1) -> (vector<4xf32>) {
// DOT-NEXT:      %a = vector.load %x[%j] : memref<10xf32>, vector<4xf32>
// DOT-NEXT:      %b = vector.load %y[%j] : memref<10xf32>, vector<4xf32>
// DOT-NEXT:      %s = math.fma %a, %b, %acc : vector<4xf32>
// DOT-NEXT:      affine.yield %s : vector<4xf32>
// DOT-NEXT:    } {qd.loop = "j"}
// DOT-NEXT:    %sum = vector.reduction <add>, %acc_lanes, %zero : vector<4xf32> into f32
// DOT-NEXT:    %sum_1 = affine.for %j_tail = 8 to 10 iter_args(%acc_1 = %sum) -> (f32) {
// DOT-NEXT:      %a_1 = affine.load %x[%j_tail] : memref<10xf32>
// DOT-NEXT:      %b_1 = affine.load %y[%j_tail] : memref<10xf32>
// DOT-NEXT:      %s_1 = math.fma %a_1, %b_1, %acc_1 : f32
// DOT-NEXT:      affine.yield %s_1 : f32
// DOT-NEXT:    } {qd.loop = "j_tail"}
// DOT-NEXT:    affine.store %sum_1, %out[0] : memref<1xf32>
func.func private @k_dot(%x: memref<10xf32>, %y: memref<10xf32>, %out: memref<1xf32>) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  %sum = affine.for %j = 0 to 10 iter_args(%acc = %zero) -> (f32) {
    %a = affine.load %x[%j] : memref<10xf32>
    %b = affine.load %y[%j] : memref<10xf32>
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    affine.yield %s : f32
  } {qd.loop = "j"}
  affine.store %sum, %out[0] : memref<1xf32>
  func.return
}

// The lowering of the dot product: the vector fma is llvm.intr.fma on vector<4xf32>
// (llvm.fma.v4f32 in LLVM IR), the reduction a shuffle tree of fadds, its last lane
// a bitcast, then the start value added.
// LLVM-DOT-LABEL: llvm.func @k_dot(
// LLVM-DOT:         %{{.*}} = llvm.intr.fma(%{{.*}}, %{{.*}}, %{{.*}}) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// LLVM-DOT:         %[[LO:.*]] = llvm.shufflevector %[[V:.*]], %[[V]] [0, 1] : vector<4xf32>
// LLVM-DOT-NEXT:    %[[HI:.*]] = llvm.shufflevector %[[V]], %[[V]] [2, 3] : vector<4xf32>
// LLVM-DOT-NEXT:    %[[H:.*]] = llvm.fadd %[[LO]], %[[HI]] : vector<2xf32>
// LLVM-DOT:         %[[L:.*]] = llvm.fadd %{{.*}}, %{{.*}} : vector<1xf32>
// LLVM-DOT-NEXT:    %[[F:.*]] = llvm.bitcast %[[L]] : vector<1xf32> to f32
// LLVM-DOT-NEXT:    %sum = llvm.fadd %zero, %[[F]] : f32
// LLVM-DOT:         %{{.*}} = llvm.intr.fma(%{{.*}}, %{{.*}}, %{{.*}}) : (f32, f32, f32) -> f32

// A max reduction: identity -inf, vector.reduction <maximumf>; 8 lanes, no tail.
// MAX-LABEL: func.func private @k_max(
// MAX:         %acc_init = arith.constant 0xff800000 : f32
// MAX:         %acc_lanes = affine.for %j = 0 to 8 step 8 iter_args(%acc = %acc_init_1) -> (vector<8xf32>) {
// MAX:           %m = arith.maximumf %acc, %a : vector<8xf32>
// MAX:         %top = vector.reduction <maximumf>, %acc_lanes, %low : vector<8xf32> into f32
// MAX-NEXT:    affine.store %top, %out[0] : memref<1xf32>
// MAX-NEXT:    func.return
func.func private @k_max(%x: memref<8xf32>, %out: memref<1xf32>) attributes {qd.kernel = "t"} {
  %low = arith.constant 0xFF800000 : f32
  %top = affine.for %j = 0 to 8 iter_args(%acc = %low) -> (f32) {
    %a = affine.load %x[%j] : memref<8xf32>
    %m = arith.maximumf %acc, %a : f32
    affine.yield %m : f32
  } {qd.loop = "j"}
  affine.store %top, %out[0] : memref<1xf32>
  func.return
}

// A row sum as the default rows schedule vectorizes it (defaults/rows.py): 64 lanes
// (four <16 x float> registers: four independent accumulators), then the tail
// vectorized again by 16, each reduction continuing from the one before, and the
// last 100 mod 16 = 4 elements scalar: 100 = 64 + 2 * 16 + 4.
// ROW-LABEL: func.func private @k_row(
// ROW:         %acc_lanes = affine.for %r = 0 to 64 step 64 iter_args(%acc = %acc_init_1) -> (vector<64xf32>) {
// ROW-NEXT:      %a = vector.load %x[%i, %r] : memref<2x100xf32>, vector<64xf32>
// ROW-NEXT:      %s = arith.addf %acc, %a fastmath<reassoc,contract> : vector<64xf32>
// ROW:         %sum = vector.reduction <add>, %acc_lanes, %zero : vector<64xf32> into f32
// ROW:         %acc_lanes_1 = affine.for %r_tail = 64 to 96 step 16 iter_args(%acc_1 = %acc_init_3) -> (vector<16xf32>) {
// ROW:         %sum_1 = vector.reduction <add>, %acc_lanes_1, %sum : vector<16xf32> into f32
// ROW-NEXT:    %sum_2 = affine.for %r_tail_tail = 96 to 100 iter_args(%acc_2 = %sum_1) -> (f32) {
// ROW-NEXT:      %a_2 = affine.load %x[%i, %r_tail_tail] : memref<2x100xf32>
// ROW:         affine.store %sum_2, %out[%i] : memref<2xf32>
func.func private @k_row(%x: memref<2x100xf32>, %out: memref<2xf32>) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 2 {
    %sum = affine.for %r = 0 to 100 iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %x[%i, %r] : memref<2x100xf32>
      %s = arith.addf %acc, %a fastmath<reassoc,contract> : f32
      affine.yield %s : f32
    } {qd.loop = "r"}
    affine.store %sum, %out[%i] : memref<2xf32>
  } {qd.loop = "i"}
  func.return
}

// out[0] = out[0] * x[j] is not a reassociable accumulation (mulf is not one of
// add/max/min): refused.
// ERR-RED: IllegalScheduleError: vectorize: loop 'j' in kernel 'k_notred': a store to memref<1xf32> writes the same element every iteration but is not a pure accumulation
func.func private @k_notred(%x: memref<8xf32>, %out: memref<1xf32>) attributes {qd.kernel = "t"} {
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%j] : memref<8xf32>
    %a = affine.load %out[0] : memref<1xf32>
    %s = arith.mulf %a, %v : f32
    affine.store %s, %out[0] : memref<1xf32>
  } {qd.loop = "j"}
  func.return
}

// The carried value feeds a subf: not an accumulation.
// ERR-ITER: IllegalScheduleError: vectorize: loop 'j' in kernel 'k_iter': its iter_arg #0 is not an accumulation
func.func private @k_iter(%x: memref<8xf32>, %out: memref<1xf32>) attributes {qd.kernel = "t"} {
  %zero = arith.constant 0.000000e+00 : f32
  %d = affine.for %j = 0 to 8 iter_args(%acc = %zero) -> (f32) {
    %a = affine.load %x[%j] : memref<8xf32>
    %s = arith.subf %a, %acc : f32
    affine.yield %s : f32
  } {qd.loop = "j"}
  affine.store %d, %out[0] : memref<1xf32>
  func.return
}

// 6 is not a multiple of 4 and the kernel already has a loop named j_tail.
// ERR-TAKEN: DuplicateLoopNameError: vectorize: loop 'j' in kernel 'k_taken': the new loop name 'j_tail' is already used in the kernel
func.func private @k_taken(%x: memref<6xf32>) attributes {qd.kernel = "t"} {
  affine.for %j = 0 to 6 {
    %a = affine.load %x[%j] : memref<6xf32>
    affine.store %a, %x[%j] : memref<6xf32>
  } {qd.loop = "j"}
  affine.for %t = 0 to 6 {
    %a = affine.load %x[%t] : memref<6xf32>
    affine.store %a, %x[%t] : memref<6xf32>
  } {qd.loop = "j_tail"}
  func.return
}

// A lower bound that is a max of two values.
// ERR-MAXLB: IllegalScheduleError: vectorize: loop 'j' in kernel 'k_maxlb': its lower bound {{.*}} is a max of several values
func.func private @k_maxlb(%x: memref<16xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 4 {
    affine.for %j = max affine_map<(d0) -> (0, d0 * 4 - 2)>(%i) to 16 {
      %a = affine.load %x[%j] : memref<16xf32>
      affine.store %a, %x[%j] : memref<16xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}
