// RUN: qidao-opt %s -p instrument-kernels --split-input-file | filecheck %s

// The docstring's example: the kernel call is bracketed by the timers, the host
// lists its kernels, and the two timers are declared once.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    attributes {qd.profile_kernels = ["main_k0_exp"]}
// CHECK-NEXT:    %[[T:.*]] = func.call @qidao_profile_start() : () -> i64
// CHECK-NEXT:    func.call @main_k0_exp(%x, %out0)
// CHECK-NEXT:    %[[K:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    func.call @qidao_profile_stop(%[[K]], %[[T]]) : (i64, i64) -> ()
// CHECK-NEXT:    func.return
// CHECK:       func.func private @qidao_profile_start() -> i64
// CHECK-NEXT:  func.func private @qidao_profile_stop(i64, i64) -> ()
func.func private @main_k0_exp(%x: memref<8xf32>, %out: memref<8xf32>) attributes {qd.kernel = "tg.exp"} {
  func.return
}
func.func @main(%x: memref<8xf32>, %out0: memref<8xf32>) {
  func.call @main_k0_exp(%x, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}

// -----

// A kernel called twice keeps its one index (the counters add both calls); the
// second kernel gets the next index.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    qd.profile_kernels = ["main_k0_exp", "main_k1_neg"]
// CHECK:         func.call @main_k0_exp
// CHECK-NEXT:    arith.constant 0 : i64
// CHECK:         func.call @main_k1_neg
// CHECK-NEXT:    arith.constant 1 : i64
// CHECK:         func.call @main_k0_exp
// CHECK-NEXT:    arith.constant 0 : i64
func.func private @main_k0_exp(%x: memref<8xf32>, %out: memref<8xf32>) attributes {qd.kernel = "tg.exp"} {
  func.return
}
func.func private @main_k1_neg(%x: memref<8xf32>, %out: memref<8xf32>) attributes {qd.kernel = "tg.neg"} {
  func.return
}
func.func @main(%x: memref<8xf32>, %out0: memref<8xf32>) {
  %0 = memref.alloc() : memref<8xf32>
  func.call @main_k0_exp(%x, %0) : (memref<8xf32>, memref<8xf32>) -> ()
  func.call @main_k1_neg(%0, %0) : (memref<8xf32>, memref<8xf32>) -> ()
  func.call @main_k0_exp(%0, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %0 : memref<8xf32>
  func.return
}

// -----

// Must not fire: no kernel is called (a graph that is all views), so nothing is
// timed and no timer is declared.
// CHECK-LABEL: func.func @main
// CHECK-NOT:     qd.profile_kernels
// CHECK-NOT:     qidao_profile
func.func @main(%x: memref<8xf32>, %out0: memref<8xf32>) {
  func.return
}
