// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of the storage-only element types (bf16, the float8s, f4E2M1FN, i4,
// ui4, i2, ui2) in the ops that take them: tg.cast both ways, tg.constant, the
// views, and a tg.fused group of those.

// CHECK-LABEL: func.func @casts
func.func @casts(%x: tensor<2x3xf32>, %h: tensor<4xbf16>, %q: tensor<4xf8E4M3FN>, %n: tensor<4xi4>) {
  // CHECK: %b = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xbf16>
  %b = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xbf16>
  // CHECK: %e4 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf8E4M3FN>
  %e4 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf8E4M3FN>
  // CHECK: %e4z = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf8E4M3FNUZ>
  %e4z = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf8E4M3FNUZ>
  // CHECK: %e5 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf8E5M2>
  %e5 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf8E5M2>
  // CHECK: %e5z = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf8E5M2FNUZ>
  %e5z = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf8E5M2FNUZ>
  // CHECK: %f4 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf4E2M1FN>
  %f4 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf4E2M1FN>
  // CHECK: %i4 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xi4>
  %i4 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xi4>
  // CHECK: %u4 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xui4>
  %u4 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xui4>
  // CHECK: %i2 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xi2>
  %i2 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xi2>
  // CHECK: %u2 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xui2>
  %u2 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xui2>
  // CHECK: %wide = tg.cast %h : tensor<4xbf16> -> tensor<4xf64>
  %wide = tg.cast %h : tensor<4xbf16> -> tensor<4xf64>
  // CHECK: %other = tg.cast %q : tensor<4xf8E4M3FN> -> tensor<4xf8E5M2>
  %other = tg.cast %q : tensor<4xf8E4M3FN> -> tensor<4xf8E5M2>
  // CHECK: %byte = tg.cast %n : tensor<4xi4> -> tensor<4xi8>
  %byte = tg.cast %n : tensor<4xi4> -> tensor<4xi8>
  func.return
}

// CHECK-LABEL: func.func @constants_and_views
func.func @constants_and_views(%h: tensor<2x3xbf16>) -> tensor<3x2xbf16> {
  // CHECK: %c = tg.constant dense<[1.000000e+00, -2.500000e+00]> : tensor<2xbf16>
  %c = tg.constant dense<[1.0, -2.5]> : tensor<2xbf16>
  // CHECK: %k = tg.constant dense<[-8, 7]> : tensor<2xi4>
  %k = tg.constant dense<[-8, 7]> : tensor<2xi4>
  // CHECK: %t = tg.transpose %h perm = [1, 0] : tensor<2x3xbf16> -> tensor<3x2xbf16, strided<[1, 3]>>
  %t = tg.transpose %h perm = [1, 0] : tensor<2x3xbf16> -> tensor<3x2xbf16, strided<[1, 3]>>
  // CHECK: %r = tg.reshape %h : tensor<2x3xbf16> -> tensor<3x2xbf16>
  %r = tg.reshape %h : tensor<2x3xbf16> -> tensor<3x2xbf16>
  func.return %r : tensor<3x2xbf16>
}

// CHECK-LABEL: func.func @fused
func.func @fused(%x: tensor<8xf8E5M2>) -> tensor<8xbf16> {
  // CHECK: tg.fused %x : (tensor<8xf8E5M2>) -> tensor<8xbf16>
  %y = tg.fused %x : (tensor<8xf8E5M2>) -> tensor<8xbf16> {
  ^bb0(%a: tensor<8xf8E5M2>):
    // CHECK: tg.cast %a : tensor<8xf8E5M2> -> tensor<8xbf16>
    %b = tg.cast %a : tensor<8xf8E5M2> -> tensor<8xbf16>
    tg.yield %b : tensor<8xbf16>
  }
  func.return %y : tensor<8xbf16>
}
