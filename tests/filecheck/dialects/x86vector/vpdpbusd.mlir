// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of x86vector.avx512.vpdpbusd (AVX-512 VNNI's byte dot product with
// a broadcast first source), custom and generic forms.

// CHECK-LABEL: func.func @dot
// CHECK: %d = x86vector.avx512.vpdpbusd %c, %a, %b : vector<16xi32>, vector<4xi8>, vector<64xi8> -> vector<16xi32>
func.func @dot(%c: vector<16xi32>, %a: vector<4xi8>, %b: vector<64xi8>) -> vector<16xi32> {
  %d = x86vector.avx512.vpdpbusd %c, %a, %b : vector<16xi32>, vector<4xi8>, vector<64xi8> -> vector<16xi32>
  func.return %d : vector<16xi32>
}
