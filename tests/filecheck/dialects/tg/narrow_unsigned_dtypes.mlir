// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip, in custom form and (second RUN line) through the generic form, of the
// narrow and unsigned element types: i8 and i16 (signed, signless as i32/i64 are),
// ui8 .. ui64 (unsigned), f16. Arithmetic, comparisons, select, cast and constants.

// CHECK-LABEL: func.func @unsigned_arithmetic
func.func @unsigned_arithmetic(%a: tensor<4xui8>, %b: tensor<4xui8>, %n: tensor<2x3xui64>, %s: tensor<ui64>) {
  // CHECK: %add = tg.add %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %add = tg.add %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  // CHECK: %div = tg.div %n, %s : (tensor<2x3xui64>, tensor<ui64>) -> tensor<2x3xui64>
  %div = tg.div %n, %s : (tensor<2x3xui64>, tensor<ui64>) -> tensor<2x3xui64>
  // CHECK: %max = tg.max %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %max = tg.max %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  // CHECK: %neg = tg.neg %n : tensor<2x3xui64> -> tensor<2x3xui64>
  %neg = tg.neg %n : tensor<2x3xui64> -> tensor<2x3xui64>
  // CHECK: %abs = tg.abs %a : tensor<4xui8> -> tensor<4xui8>
  %abs = tg.abs %a : tensor<4xui8> -> tensor<4xui8>
  // CHECK: %relu = tg.relu %a : tensor<4xui8> -> tensor<4xui8>
  %relu = tg.relu %a : tensor<4xui8> -> tensor<4xui8>
  func.return
}

// CHECK-LABEL: func.func @narrow_signed
func.func @narrow_signed(%a: tensor<4xi8>, %b: tensor<4xi16>, %c: tensor<4xui16>, %d: tensor<4xui32>) {
  // CHECK: %sub = tg.sub %a, %a : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %sub = tg.sub %a, %a : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  // CHECK: %mul = tg.mul %b, %b : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  %mul = tg.mul %b, %b : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  // CHECK: %min = tg.min %c, %c : (tensor<4xui16>, tensor<4xui16>) -> tensor<4xui16>
  %min = tg.min %c, %c : (tensor<4xui16>, tensor<4xui16>) -> tensor<4xui16>
  // CHECK: %lt = tg.less %d, %d : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
  %lt = tg.less %d, %d : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
  func.return
}

// CHECK-LABEL: func.func @half
func.func @half(%x: tensor<2x4xf16>, %y: tensor<4xf16>, %c: tensor<2x4xi1>) {
  // CHECK: %sum = tg.add %x, %y : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  %sum = tg.add %x, %y : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  // CHECK: %e = tg.exp %x : tensor<2x4xf16> -> tensor<2x4xf16>
  %e = tg.exp %x : tensor<2x4xf16> -> tensor<2x4xf16>
  // CHECK: %p = tg.pow %x, %y : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  %p = tg.pow %x, %y : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  // CHECK: %ge = tg.greater_equal %x, %y : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xi1>
  %ge = tg.greater_equal %x, %y : (tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xi1>
  // CHECK: %pick = tg.select %c, %x, %y : (tensor<2x4xi1>, tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  %pick = tg.select %c, %x, %y : (tensor<2x4xi1>, tensor<2x4xf16>, tensor<4xf16>) -> tensor<2x4xf16>
  func.return
}

// Casts between every family: unsigned <-> signed, integers <-> f16, f16 <-> f64.
// CHECK-LABEL: func.func @casts
func.func @casts(%u: tensor<3xui8>, %h: tensor<3xf16>, %d: tensor<3xf64>) {
  // CHECK: %u2i = tg.cast %u : tensor<3xui8> -> tensor<3xi8>
  %u2i = tg.cast %u : tensor<3xui8> -> tensor<3xi8>
  // CHECK: %u2l = tg.cast %u : tensor<3xui8> -> tensor<3xui64>
  %u2l = tg.cast %u : tensor<3xui8> -> tensor<3xui64>
  // CHECK: %u2h = tg.cast %u : tensor<3xui8> -> tensor<3xf16>
  %u2h = tg.cast %u : tensor<3xui8> -> tensor<3xf16>
  // CHECK: %h2u = tg.cast %h : tensor<3xf16> -> tensor<3xui16>
  %h2u = tg.cast %h : tensor<3xf16> -> tensor<3xui16>
  // CHECK: %d2h = tg.cast %d : tensor<3xf64> -> tensor<3xf16>
  %d2h = tg.cast %d : tensor<3xf64> -> tensor<3xf16>
  // CHECK: %h2b = tg.cast %h : tensor<3xf16> -> tensor<3xi1>
  %h2b = tg.cast %h : tensor<3xf16> -> tensor<3xi1>
  func.return
}

// Dense constants of the new element types keep their values (255 in ui8, the
// uint64 maximum, f16's largest finite value).
// CHECK-LABEL: func.func @constants
func.func @constants() {
  // CHECK: %u8 = tg.constant dense<[0, 255, 7]> : tensor<3xui8>
  %u8 = tg.constant dense<[0, 255, 7]> : tensor<3xui8>
  // CHECK: %u64 = tg.constant dense<18446744073709551615> : tensor<2xui64>
  %u64 = tg.constant dense<18446744073709551615> : tensor<2xui64>
  // CHECK: %i8 = tg.constant dense<[-128, 127]> : tensor<2xi8>
  %i8 = tg.constant dense<[-128, 127]> : tensor<2xi8>
  // CHECK: %i16 = tg.constant dense<-32768> : tensor<i16>
  %i16 = tg.constant dense<-32768> : tensor<i16>
  // CHECK: %f16 = tg.constant dense<[6.550400e+04, -1.500000e+00]> : tensor<2xf16>
  %f16 = tg.constant dense<[6.550400e+04, -1.500000e+00]> : tensor<2xf16>
  func.return
}
