// RUN: qidao-opt %s -p 'vectorize{kernel="k" loop="j" width=4}' | filecheck %s
// RUN: qidao-opt %s -p 'vectorize{kernel="k_bcast" loop="j" width=8}' | filecheck %s --check-prefix=BCAST
// RUN: qidao-opt %s -p 'vectorize{kernel="k_fma" loop="j"}' | filecheck %s --check-prefix=FMA
// RUN: qidao-opt %s -p 'vectorize{kernel="k_bcast" loop="j" width=8},lower-affine,convert-scf-to-cf,convert-to-llvm' | filecheck %s --check-prefix=LLVM
// RUN: not qidao-opt %s -p 'vectorize{kernel="k" loop="i" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-INNER
// RUN: not qidao-opt %s -p 'vectorize{kernel="k" loop="j" width=3}' 2>&1 | filecheck %s --check-prefix=ERR-DIV
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_red" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-RED
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_stride" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-STRIDE
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_col" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-COL
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_dep" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-DEP
// RUN: not qidao-opt %s -p 'vectorize{kernel="k_op" loop="j" width=4}' 2>&1 | filecheck %s --check-prefix=ERR-OP
// RUN: not qidao-opt %s -p 'vectorize{kernel="k" loop="j" width=0}' 2>&1 | filecheck %s --check-prefix=ERR-WIDTH

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
// strided view is still contiguous (innermost stride 1).
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
// BCAST-NEXT:      %m = arith.mulf %v, %s0_1 : vector<8xf32>
// BCAST-NEXT:      %n = arith.addf %m, %z_1 : vector<8xf32>
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
// ERR-DIV: IllegalScheduleError: vectorize: loop 'j' in kernel 'k': its extent 8 is not divisible by width 3; split it first (split{kernel="k" loop="j" factor=3}) and vectorize 'j_i'
// ERR-WIDTH: InvalidArgumentError: vectorize: loop 'j' in kernel 'k': width must be at least 1, got 0

// A sum carried through memory: out[0] is loaded, accumulated and stored every iteration.
// ERR-RED: IllegalScheduleError: vectorize: loop 'j' in kernel 'k_red': a store to memref<1xf32> writes the same element every iteration (a reduction through memory): not supported yet
func.func private @k_red(%x: memref<8xf32>, %out: memref<1xf32>) attributes {qd.kernel = "t"} {
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%j] : memref<8xf32>
    %a = affine.load %out[0] : memref<1xf32>
    %s = arith.addf %a, %v : f32
    affine.store %s, %out[0] : memref<1xf32>
  } {qd.loop = "j"}
  func.return
}

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

// ERR-OP: IllegalScheduleError: vectorize: loop 'j' in kernel 'k_op': its body has 'arith.cmpf', which is not vectorized
func.func private @k_op(%x: memref<8xf32>, %y: memref<8xf32>) attributes {qd.kernel = "t"} {
  %c = arith.constant 0.000000e+00 : f32
  affine.for %j = 0 to 8 {
    %v = affine.load %x[%j] : memref<8xf32>
    %p = arith.cmpf ogt, %v, %c : f32
    %w = arith.select %p, %v, %c : f32
    affine.store %w, %y[%j] : memref<8xf32>
  } {qd.loop = "j"}
  func.return
}
