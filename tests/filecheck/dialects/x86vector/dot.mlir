// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of x86vector.avx512.dot (AVX512_BF16's vdpbf16ps with a broadcast
// pair as its first source, the bfloat16s as their i16 bits), custom and
// generic forms.

// CHECK-LABEL: func.func @dot
// CHECK: %d = x86vector.avx512.dot %c, %a, %b : vector<16xf32>, vector<2xi16>, vector<32xi16> -> vector<16xf32>
func.func @dot(%c: vector<16xf32>, %a: vector<2xi16>, %b: vector<32xi16>) -> vector<16xf32> {
  %d = x86vector.avx512.dot %c, %a, %b : vector<16xf32>, vector<2xi16>, vector<32xi16> -> vector<16xf32>
  func.return %d : vector<16xf32>
}
