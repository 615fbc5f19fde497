// RUN: qidao-opt %s -p lower-affine | filecheck %s

// The docstring example: a named loop with step and a `mod` index.
// CHECK-LABEL: func.func @loop_mod
// CHECK:         %[[LB:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[UB:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 2 : index
// CHECK-NEXT:    scf.for %i = %[[LB]] to %[[UB]] step %[[STEP]] {
// CHECK-NEXT:      %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %[[REM:.*]] = arith.remsi %i, %[[C4]] : index
// CHECK-NEXT:      %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[NEG:.*]] = arith.cmpi slt, %[[REM]], %[[C0]] : index
// CHECK-NEXT:      %[[ADD:.*]] = arith.addi %[[REM]], %[[C4]] : index
// CHECK-NEXT:      %[[MOD:.*]] = arith.select %[[NEG]], %[[ADD]], %[[REM]] : index
// CHECK-NEXT:      %v = memref.load %a[%[[MOD]]] : memref<4xf32>
// CHECK-NEXT:      memref.store %v, %b[%i] : memref<8xf32>
// CHECK-NEXT:    } {qd.loop = "i"}
func.func @loop_mod(%a: memref<4xf32>, %b: memref<8xf32>) {
  affine.for %i = 0 to 8 step 2 {
    %v = affine.load %a[%i mod 4] : memref<4xf32>
    affine.store %v, %b[%i] : memref<8xf32>
  } {qd.loop = "i"}
  func.return
}

// Loop-carried values become scf.for iter_args; affine.yield becomes scf.yield.
// CHECK-LABEL: func.func @reduction
// CHECK:         %r = scf.for %j = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%acc = %zero) -> (f32) {
// CHECK:           %s = arith.addf %acc, %x fastmath<reassoc,contract> : f32
// CHECK-NEXT:      scf.yield %s : f32
// CHECK-NEXT:    } {qd.loop = "j"}
// CHECK-NEXT:    memref.store %r, %o[] : memref<f32>
func.func @reduction(%a: memref<16xf32>, %o: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %r = affine.for %j = 0 to 16 iter_args(%acc = %zero) -> (f32) {
    %x = affine.load %a[%j] : memref<16xf32>
    %s = arith.addf %acc, %x fastmath<reassoc, contract> : f32
    affine.yield %s : f32
  } {qd.loop = "j"}
  affine.store %r, %o[] : memref<f32>
  func.return
}

// Strided/broadcast maps: constants fold, `0 * d0` and `+ 0` vanish, floordiv expands.
// CHECK-LABEL: func.func @maps
// CHECK:         %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[N:.*]] = arith.muli %i, %[[C2]] : index
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[I:.*]] = arith.addi %[[N]], %[[C1]] : index
// CHECK-NEXT:    %x = memref.load %a[%[[I]]] : memref<16xf32>
// CHECK-NEXT:    %y = memref.load %b[%j] : memref<8xf32>
// CHECK:         arith.divsi
// CHECK:         %z = memref.load %c[%{{.*}}] : memref<4xf32>
func.func @maps(%a: memref<16xf32>, %b: memref<8xf32>, %c: memref<4xf32>, %i: index, %j: index) -> (f32, f32, f32) {
  %x = affine.load %a[%i * 2 + 1] : memref<16xf32>
  %y = affine.load %b[%i * 0 + %j + 0] : memref<8xf32>
  %z = affine.load %c[%j floordiv 2] : memref<4xf32>
  func.return %x, %y, %z : f32, f32, f32
}

// affine.if -> scf.if on the conjunction of its constraints.
// CHECK-LABEL: func.func @if_else
// CHECK:         %[[GE:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK:         %[[EQ:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[AND:.*]] = arith.andi %[[GE]], %[[EQ]] : i1
// CHECK-NEXT:    %r = scf.if %[[AND]] -> (f32) {
// CHECK-NEXT:      scf.yield %x : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %y : f32
// CHECK-NEXT:    }
func.func @if_else(%i: index, %x: f32, %y: f32) -> f32 {
  %r = "affine.if"(%i) <{condition = affine_set<(d0) : (d0 - 2 >= 0, d0 - 3 == 0)>}> ({
    affine.yield %x : f32
  }, {
    affine.yield %y : f32
  }) : (index) -> f32
  func.return %r : f32
}

// affine.min -> arith.minsi; a multi-result lower bound is a max; affine.apply.
// CHECK-LABEL: func.func @min_max_apply
// CHECK:         %[[M:.*]] = arith.minsi %n, %{{.*}} : index
// CHECK:         %[[LB:.*]] = arith.maxsi %{{.*}}, %n : index
// CHECK:         scf.for %k = %[[LB]] to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      memref.store %f, %o[%k] : memref<10xf32>
// CHECK-NEXT:    } {qd.loop = "k"}
// CHECK-NEXT:    %[[A:.*]] = arith.addi %[[M]], %n : index
// CHECK-NEXT:    func.return %[[A]] : index
func.func @min_max_apply(%n: index, %o: memref<10xf32>, %f: f32) -> index {
  %m = affine.min affine_map<(d0) -> (d0, 7)> (%n)
  affine.for %k = max affine_map<(d0) -> (0, d0)> (%n) to 10 {
    affine.store %f, %o[%k] : memref<10xf32>
  } {qd.loop = "k"}
  %a = affine.apply affine_map<(d0, d1) -> (d0 + d1)> (%m, %n)
  func.return %a : index
}

// Must not fire: scf and arith are left untouched.
// CHECK-LABEL: func.func @already_scf
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    scf.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %x = memref.load %a[%i] : memref<4xf32>
// CHECK-NEXT:      %y = arith.addf %x, %x : f32
// CHECK-NEXT:      memref.store %y, %a[%i] : memref<4xf32>
// CHECK-NEXT:    } {qd.loop = "i"}
// CHECK-NEXT:    func.return
func.func @already_scf(%a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %x = memref.load %a[%i] : memref<4xf32>
    %y = arith.addf %x, %x : f32
    memref.store %y, %a[%i] : memref<4xf32>
  } {qd.loop = "i"}
  func.return
}

// A loop of one iteration: its index becomes the constant lower bound (an in-place
// kernel's load a[0, j] and store a[%i, j] then share one address for LLVM).
// CHECK-LABEL: func.func @one_iteration
// CHECK:         %[[LB:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[UB:.*]] = arith.constant 1 : index
// CHECK:         scf.for %i = %[[LB]] to %[[UB]] step %{{.*}} {
// CHECK:           %v = memref.load %a[%{{.*}}, %j] : memref<1x8xf32>
// CHECK-NEXT:      memref.store %v, %a[%[[LB]], %j] : memref<1x8xf32>
func.func @one_iteration(%a: memref<1x8xf32>) {
  affine.for %i = 0 to 1 {
    affine.for %j = 0 to 8 {
      %v = affine.load %a[0, %j] : memref<1x8xf32>
      affine.store %v, %a[%i, %j] : memref<1x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// Two iterations (or bounds not known): the index stays.
// CHECK-LABEL: func.func @two_iterations
// CHECK:         scf.for %i = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      memref.store %x, %a[%i] : memref<2xf32>
// CHECK-LABEL: func.func @step_covers_one
// CHECK:         %[[LB:.*]] = arith.constant 0 : index
// CHECK:         scf.for %i = %[[LB]] to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      memref.store %x, %a[%[[LB]]] : memref<5xf32>
func.func @two_iterations(%a: memref<2xf32>, %x: f32) {
  affine.for %i = 0 to 2 {
    affine.store %x, %a[%i] : memref<2xf32>
  } {qd.loop = "i"}
  func.return
}
func.func @step_covers_one(%a: memref<5xf32>, %x: f32) {
  affine.for %i = 0 to 5 step 8 {
    affine.store %x, %a[%i] : memref<5xf32>
  } {qd.loop = "i"}
  func.return
}
