// RUN: qidao-opt %s -p lower-scf-to-cf | filecheck %s
// RUN: qidao-opt %s -p lower-scf-to-cf,convert-to-llvm | filecheck %s --check-prefix=LLVM

// A rolled loop (unroll by 1): only its back edge carries qd.rolled; the branch
// into the header and the loop without the mark come out as xDSL's pass makes them.
// CHECK-LABEL: func.func @rolled
// CHECK:         cf.br ^bb1(%lb : index)
// CHECK-NEXT:  ^bb1(%i: index):
// CHECK-NEXT:    %0 = arith.cmpi slt, %i, %ub : index
// CHECK-NEXT:    cf.cond_br %0, ^bb2, ^bb3
// CHECK:         %1 = arith.addi %i, %s : index
// CHECK-NEXT:    cf.br ^bb1(%1 : index) {qd.rolled}
// CHECK-NEXT:  ^bb3:
// CHECK-NEXT:    cf.br ^bb4(%lb : index)
// CHECK:         %3 = arith.addi %j, %s : index
// CHECK-NEXT:    cf.br ^bb4(%3 : index){{$}}
// CHECK-NOT:     qd.rolled
// LLVM-LABEL: llvm.func @rolled
// LLVM:         llvm.br ^bb1(%{{.*}} : i64) {qd.rolled}
// LLVM-NOT:     qd.rolled
func.func @rolled(%x: memref<8xf32>, %n: index) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 8 : index
  %s = arith.constant 1 : index
  scf.for %i = %lb to %ub step %s {
    %v = memref.load %x[%i] : memref<8xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %x[%i] : memref<8xf32>
  } {qd.loop = "i", qd.rolled}
  scf.for %j = %lb to %n step %s {
    %v = memref.load %x[%j] : memref<8xf32>
    memref.store %v, %x[%j] : memref<8xf32>
  } {qd.loop = "j"}
  func.return
}

// A rolled reduction nested in a loop that is not: the inner back edge (which also
// carries the accumulator) is marked, the outer one is not.
// CHECK-LABEL: func.func @nested
// CHECK:         %[[NEXT:.*]] = arith.addi %r, %s : index
// CHECK-NEXT:    cf.br ^[[HEADER:bb[0-9]+]](%[[NEXT]], %{{.*}} : index, f32) {qd.rolled}
// CHECK:         %[[ROW:.*]] = arith.addi %i, %s : index
// CHECK-NEXT:    cf.br ^bb1(%[[ROW]] : index){{$}}
// LLVM-LABEL: llvm.func @nested
// LLVM:         llvm.br ^{{bb[0-9]+}}(%{{.*}}, %{{.*}} : i64, f32) {qd.rolled}
func.func @nested(%x: memref<4x8xf32>, %y: memref<4xf32>) {
  %lb = arith.constant 0 : index
  %rows = arith.constant 4 : index
  %ub = arith.constant 8 : index
  %s = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %lb to %rows step %s {
    %sum = scf.for %r = %lb to %ub step %s iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%i, %r] : memref<4x8xf32>
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    } {qd.loop = "r", qd.rolled}
    memref.store %sum, %y[%i] : memref<4xf32>
  } {qd.loop = "i"}
  func.return
}
