// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule about the narrow and unsigned element types: signed
// integers are signless (i8, not si8), unsigned and signed never mix, float-only
// and bool-only ops keep their kinds, and the ops that accumulate take f32/f64
// only (f16 goes through tg.cast to f32).

// CHECK: tg.add operand #0 has element type si8, which qidao does not support (supported: f32, f64, f16, i8, i16, i32, i64, ui8, ui16, ui32, ui64, i1, bf16, f8E4M3FN, f8E4M3FNUZ, f8E5M2, f8E5M2FNUZ, f4E2M1FN, i4, ui4, i2, ui2)
func.func @explicitly_signed(%x: tensor<4xsi8>) {
  %r = tg.add %x, %x : (tensor<4xsi8>, tensor<4xsi8>) -> tensor<4xsi8>
  func.return
}

// -----

// CHECK: tg.relu operand #0 has element type ui1, which qidao does not support
func.func @unsigned_bool(%x: tensor<4xui1>) {
  %r = tg.relu %x : tensor<4xui1> -> tensor<4xui1>
  func.return
}

// -----

// CHECK: tg.sub expects operands of one element type, got (tensor<4xui8>, tensor<4xi8>)
func.func @unsigned_and_signed(%x: tensor<4xui8>, %y: tensor<4xi8>) {
  %r = tg.sub %x, %y : (tensor<4xui8>, tensor<4xi8>) -> tensor<4xui8>
  func.return
}

// -----

// CHECK: tg.less expects operands of one element type, got (tensor<4xf16>, tensor<4xf32>)
func.func @half_and_float(%x: tensor<4xf16>, %y: tensor<4xf32>) {
  %r = tg.less %x, %y : (tensor<4xf16>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.exp expects float tensors, but operand #0 is tensor<4xui16>
func.func @exp_of_unsigned(%x: tensor<4xui16>) {
  %r = tg.exp %x : tensor<4xui16> -> tensor<4xui16>
  func.return
}

// -----

// CHECK: tg.logical_and expects bool (i1) tensors, but operand #0 is tensor<4xui8>
func.func @logical_and_of_bytes(%x: tensor<4xui8>) {
  %r = tg.logical_and %x, %x : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  func.return
}

// -----

// CHECK: tg.add on (tensor<4xi8>, tensor<4xi8>) must produce tensor<4xi8>, but its result type is tensor<4xi16>
func.func @add_does_not_widen(%x: tensor<4xi8>) {
  %r = tg.add %x, %x : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi16>
  func.return
}

// -----

// CHECK: tg.select expects true and false values of one element type
func.func @select_mixed_signedness(%c: tensor<4xi1>, %x: tensor<4xui32>, %y: tensor<4xi32>) {
  %r = tg.select %c, %x, %y : (tensor<4xi1>, tensor<4xui32>, tensor<4xi32>) -> tensor<4xui32>
  func.return
}

// -----

// CHECK: tg.matmul expects f32 or f64 tensors, but operand #0 is tensor<8x16xf16> (f16 goes through tg.cast to f32 and back)
func.func @matmul_of_halves(%x: tensor<8x16xf16>, %w: tensor<16x4xf16>) {
  %y = tg.matmul %x, %w : (tensor<8x16xf16>, tensor<16x4xf16>) -> tensor<8x4xf16>
  func.return
}

// -----

// CHECK: tg.reduce_sum expects f32 or f64 tensors, but operand #0 is tensor<4x8xf16>
func.func @reduce_of_halves(%x: tensor<4x8xf16>) {
  %y = tg.reduce_sum %x axes = [1] : tensor<4x8xf16> -> tensor<4xf16>
  func.return
}

// -----

// CHECK: tg.matmul expects float tensors, but operand #0 is tensor<8x16xui8>
func.func @matmul_of_bytes(%x: tensor<8x16xui8>, %w: tensor<16x4xui8>) {
  %y = tg.matmul %x, %w : (tensor<8x16xui8>, tensor<16x4xui8>) -> tensor<8x4xui8>
  func.return
}
