// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of cache.prefetch.

// CHECK: cache.prefetch: a rank-2 memref takes 2 indices, got 1
func.func @indices(%b: memref<4x8xf32>, %i: index) {
  cache.prefetch %b[%i] locality = 2 : memref<4x8xf32>
  func.return
}

// -----

// CHECK: cache.prefetch: locality must be 0..3 (LLVM's hint), got 4
func.func @locality(%b: memref<8xf32>, %i: index) {
  cache.prefetch %b[%i] locality = 4 : memref<8xf32>
  func.return
}
