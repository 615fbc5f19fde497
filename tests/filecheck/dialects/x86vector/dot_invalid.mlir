// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of x86vector.avx512.dot.

// CHECK: x86vector.avx512.dot: the accumulator must be vector<16xf32>, got vector<16xi32>
func.func @acc(%c: vector<16xi32>, %a: vector<2xi16>, %b: vector<32xi16>) {
  %d = x86vector.avx512.dot %c, %a, %b : vector<16xi32>, vector<2xi16>, vector<32xi16> -> vector<16xf32>
  func.return
}

// -----

// CHECK: x86vector.avx512.dot: the result must be vector<16xf32>, got vector<8xf32>
func.func @result(%c: vector<16xf32>, %a: vector<2xi16>, %b: vector<32xi16>) {
  %d = x86vector.avx512.dot %c, %a, %b : vector<16xf32>, vector<2xi16>, vector<32xi16> -> vector<8xf32>
  func.return
}

// -----

// CHECK: x86vector.avx512.dot: a (two bfloat16s, broadcast) must be vector<2xi16>, got vector<2xbf16>
func.func @a(%c: vector<16xf32>, %a: vector<2xbf16>, %b: vector<32xi16>) {
  %d = x86vector.avx512.dot %c, %a, %b : vector<16xf32>, vector<2xbf16>, vector<32xi16> -> vector<16xf32>
  func.return
}

// -----

// CHECK: x86vector.avx512.dot: a (two bfloat16s, broadcast) must be vector<2xi16>, got vector<4xi16>
func.func @a_wide(%c: vector<16xf32>, %a: vector<4xi16>, %b: vector<32xi16>) {
  %d = x86vector.avx512.dot %c, %a, %b : vector<16xf32>, vector<4xi16>, vector<32xi16> -> vector<16xf32>
  func.return
}

// -----

// CHECK: x86vector.avx512.dot: b (two bfloat16s per lane) must be vector<32xi16>, got vector<64xi8>
func.func @b(%c: vector<16xf32>, %a: vector<2xi16>, %b: vector<64xi8>) {
  %d = x86vector.avx512.dot %c, %a, %b : vector<16xf32>, vector<2xi16>, vector<64xi8> -> vector<16xf32>
  func.return
}
