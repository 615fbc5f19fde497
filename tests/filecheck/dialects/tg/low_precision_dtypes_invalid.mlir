// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every op but tg.cast, tg.constant, the views and tg.fused refuses the
// storage-only element types, naming the op, the operand and the type.

// CHECK: tg.add does not compute on bf16 (operand #0 is tensor<4xbf16>): it is a storage-only element type; tg.cast it to f32 (a small integer to i8 or ui8) first
func.func @add_bf16(%x: tensor<4xbf16>) {
  %r = tg.add %x, %x : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  func.return
}

// -----

// CHECK: tg.relu does not compute on f8E4M3FN (operand #0 is tensor<4xf8E4M3FN>): it is a storage-only element type
func.func @relu_float8(%x: tensor<4xf8E4M3FN>) {
  %r = tg.relu %x : tensor<4xf8E4M3FN> -> tensor<4xf8E4M3FN>
  func.return
}

// -----

// CHECK: tg.mul does not compute on i4 (operand #0 is tensor<4xi4>): it is a storage-only element type
func.func @mul_int4(%x: tensor<4xi4>) {
  %r = tg.mul %x, %x : (tensor<4xi4>, tensor<4xi4>) -> tensor<4xi4>
  func.return
}

// -----

// CHECK: tg.reduce_sum does not compute on ui2 (operand #0 is tensor<2x4xui2>): it is a storage-only element type
func.func @reduce_uint2(%x: tensor<2x4xui2>) {
  %r = tg.reduce_sum %x axes = [1] : tensor<2x4xui2> -> tensor<2xui2>
  func.return
}

// -----

// CHECK: tg.matmul does not compute on f4E2M1FN (operand #0 is tensor<2x2xf4E2M1FN>): it is a storage-only element type
func.func @matmul_float4(%x: tensor<2x2xf4E2M1FN>) {
  %r = tg.matmul %x, %x : (tensor<2x2xf4E2M1FN>, tensor<2x2xf4E2M1FN>) -> tensor<2x2xf4E2M1FN>
  func.return
}

// -----

// CHECK: tg.cast on (tensor<4xf32>) must produce tensor<4xbf16>, but its result type is tensor<3xbf16>
func.func @cast_shape(%x: tensor<4xf32>) {
  %r = tg.cast %x : tensor<4xf32> -> tensor<3xbf16>
  func.return
}
