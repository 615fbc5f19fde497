// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of x86vector.avx512.vpdpbusd.

// CHECK: x86vector.avx512.vpdpbusd: the accumulator must be vector<16xi32>, got vector<8xi32>
func.func @acc(%c: vector<8xi32>, %a: vector<4xi8>, %b: vector<64xi8>) {
  %d = x86vector.avx512.vpdpbusd %c, %a, %b : vector<8xi32>, vector<4xi8>, vector<64xi8> -> vector<16xi32>
  func.return
}

// -----

// CHECK: x86vector.avx512.vpdpbusd: the result must be vector<16xi32>, got vector<16xf32>
func.func @result(%c: vector<16xi32>, %a: vector<4xi8>, %b: vector<64xi8>) {
  %d = x86vector.avx512.vpdpbusd %c, %a, %b : vector<16xi32>, vector<4xi8>, vector<64xi8> -> vector<16xf32>
  func.return
}

// -----

// CHECK: x86vector.avx512.vpdpbusd: a (four bytes, broadcast) must be vector<4xi8>, got vector<8xi8>
func.func @a(%c: vector<16xi32>, %a: vector<8xi8>, %b: vector<64xi8>) {
  %d = x86vector.avx512.vpdpbusd %c, %a, %b : vector<16xi32>, vector<8xi8>, vector<64xi8> -> vector<16xi32>
  func.return
}

// -----

// CHECK: x86vector.avx512.vpdpbusd: b (four bytes per lane) must be vector<64xi8>, got vector<16xi32>
func.func @b(%c: vector<16xi32>, %a: vector<4xi8>, %b: vector<16xi32>) {
  %d = x86vector.avx512.vpdpbusd %c, %a, %b : vector<16xi32>, vector<4xi8>, vector<16xi32> -> vector<16xi32>
  func.return
}
