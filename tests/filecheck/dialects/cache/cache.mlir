// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of cache.prefetch, in custom form and (second RUN line) through the
// generic form: a rank-3 memref, a rank-1 one with locality 3, a strided view.

// CHECK-LABEL: func.func @prefetch
func.func @prefetch(%b: memref<16x4608x32xf32>, %v: memref<64xf32>, %s: memref<4x8xf32, strided<[16, 1]>>, %i: index, %j: index) {
  // CHECK: cache.prefetch %b[%i, %j, %i] locality = 2 : memref<16x4608x32xf32>
  cache.prefetch %b[%i, %j, %i] locality = 2 : memref<16x4608x32xf32>
  // CHECK: cache.prefetch %v[%j] locality = 3 : memref<64xf32>
  cache.prefetch %v[%j] locality = 3 : memref<64xf32>
  // CHECK: cache.prefetch %s[%i, %j] locality = 0 : memref<4x8xf32, strided<[16, 1]>>
  cache.prefetch %s[%i, %j] locality = 0 : memref<4x8xf32, strided<[16, 1]>>
  func.return
}
