// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.matmul_integer (8-bit operands, int32 result), in custom form
// and (second RUN line) through the generic form: unsigned x signed, signed x
// unsigned, broadcast batch dimensions, and a rhs packed for VNNI ([K/4, N, 4]).

// CHECK-LABEL: func.func @matmul_integer
func.func @matmul_integer(%a: tensor<4x8xui8>, %b: tensor<8x16xi8>, %c: tensor<2x4x8xi8>, %d: tensor<8x5xui8>, %p: tensor<2x16x4xi8>) {
  // CHECK: %y = tg.matmul_integer %a, %b : (tensor<4x8xui8>, tensor<8x16xi8>) -> tensor<4x16xi32>
  %y = tg.matmul_integer %a, %b : (tensor<4x8xui8>, tensor<8x16xi8>) -> tensor<4x16xi32>
  // CHECK: %z = tg.matmul_integer %c, %d : (tensor<2x4x8xi8>, tensor<8x5xui8>) -> tensor<2x4x5xi32>
  %z = tg.matmul_integer %c, %d : (tensor<2x4x8xi8>, tensor<8x5xui8>) -> tensor<2x4x5xi32>
  // CHECK: %v = tg.matmul_integer %a, %p rhs_layout = "vnni" : (tensor<4x8xui8>, tensor<2x16x4xi8>) -> tensor<4x16xi32>
  %v = tg.matmul_integer %a, %p rhs_layout = "vnni" : (tensor<4x8xui8>, tensor<2x16x4xi8>) -> tensor<4x16xi32>
  func.return
}
