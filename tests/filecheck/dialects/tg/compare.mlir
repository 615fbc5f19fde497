// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip, in custom form and (second RUN line) through the generic form, of the
// ops on dtypes beyond float32: integer arithmetic, tg.abs and tg.pow, the
// comparisons (i1 results), the logical ops, tg.select and tg.cast.

// CHECK-LABEL: func.func @integer_arithmetic
func.func @integer_arithmetic(%a: tensor<4xi32>, %b: tensor<4xi32>, %n: tensor<2x3xi64>, %s: tensor<i64>) {
  // CHECK: %add = tg.add %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %add = tg.add %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK: %sub = tg.sub %n, %s : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
  %sub = tg.sub %n, %s : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
  // CHECK: %mul = tg.mul %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %mul = tg.mul %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK: %div = tg.div %n, %s : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
  %div = tg.div %n, %s : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi64>
  // CHECK: %max = tg.max %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %max = tg.max %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK: %min = tg.min %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %min = tg.min %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK: %neg = tg.neg %n : tensor<2x3xi64> -> tensor<2x3xi64>
  %neg = tg.neg %n : tensor<2x3xi64> -> tensor<2x3xi64>
  // CHECK: %abs = tg.abs %n : tensor<2x3xi64> -> tensor<2x3xi64>
  %abs = tg.abs %n : tensor<2x3xi64> -> tensor<2x3xi64>
  // CHECK: %relu = tg.relu %a : tensor<4xi32> -> tensor<4xi32>
  %relu = tg.relu %a : tensor<4xi32> -> tensor<4xi32>
  func.return
}

// CHECK-LABEL: func.func @abs_and_pow
func.func @abs_and_pow(%x: tensor<4xf32>, %e: tensor<f32>, %d: tensor<2x2xf64>) {
  // CHECK: %absf = tg.abs %x : tensor<4xf32> -> tensor<4xf32>
  %absf = tg.abs %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %pow = tg.pow %x, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %pow = tg.pow %x, %e : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  // CHECK: %pow64 = tg.pow %d, %d : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  %pow64 = tg.pow %d, %d : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  func.return
}

// Comparisons broadcast like every binary op and give i1.
// CHECK-LABEL: func.func @comparisons
func.func @comparisons(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %i: tensor<4xi64>, %j: tensor<4xi64>, %p: tensor<4xi1>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %lt = tg.less %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %lt = tg.less %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: %le = tg.less_equal %i, %j : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %le = tg.less_equal %i, %j : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  // CHECK: %gt = tg.greater %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %gt = tg.greater %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK: %ge = tg.greater_equal %i, %j : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %ge = tg.greater_equal %i, %j : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  // CHECK: %eq = tg.equal %p, %p : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %eq = tg.equal %p, %p : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  // A strided operand gives a fresh row-major result.
  // CHECK: %ne = tg.not_equal %t, %t : (tensor<3x2xf32, strided<[1, 3]>>, tensor<3x2xf32, strided<[1, 3]>>) -> tensor<3x2xi1>
  %ne = tg.not_equal %t, %t : (tensor<3x2xf32, strided<[1, 3]>>, tensor<3x2xf32, strided<[1, 3]>>) -> tensor<3x2xi1>
  func.return
}

// CHECK-LABEL: func.func @logic
func.func @logic(%a: tensor<2x4xi1>, %b: tensor<4xi1>) {
  // CHECK: %and = tg.logical_and %a, %b : (tensor<2x4xi1>, tensor<4xi1>) -> tensor<2x4xi1>
  %and = tg.logical_and %a, %b : (tensor<2x4xi1>, tensor<4xi1>) -> tensor<2x4xi1>
  // CHECK: %or = tg.logical_or %a, %b : (tensor<2x4xi1>, tensor<4xi1>) -> tensor<2x4xi1>
  %or = tg.logical_or %a, %b : (tensor<2x4xi1>, tensor<4xi1>) -> tensor<2x4xi1>
  // CHECK: %xor = tg.logical_xor %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %xor = tg.logical_xor %b, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  // CHECK: %not = tg.logical_not %a : tensor<2x4xi1> -> tensor<2x4xi1>
  %not = tg.logical_not %a : tensor<2x4xi1> -> tensor<2x4xi1>
  func.return
}

// The three operands of tg.select broadcast together.
// CHECK-LABEL: func.func @select
func.func @select(%c: tensor<2x1xi1>, %x: tensor<3xf32>, %s: tensor<f32>, %i: tensor<2x3xi64>) {
  // CHECK: %sel = tg.select %c, %x, %s : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %sel = tg.select %c, %x, %s : (tensor<2x1xi1>, tensor<3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK: %seli = tg.select %c, %i, %i : (tensor<2x1xi1>, tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %seli = tg.select %c, %i, %i : (tensor<2x1xi1>, tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  func.return
}

// CHECK-LABEL: func.func @cast
func.func @cast(%x: tensor<2x3xf32>, %i: tensor<4xi64>, %b: tensor<4xi1>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %to_i64 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xi64>
  %to_i64 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xi64>
  // CHECK: %to_f64 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf64>
  %to_f64 = tg.cast %x : tensor<2x3xf32> -> tensor<2x3xf64>
  // CHECK: %to_i32 = tg.cast %i : tensor<4xi64> -> tensor<4xi32>
  %to_i32 = tg.cast %i : tensor<4xi64> -> tensor<4xi32>
  // CHECK: %to_bool = tg.cast %i : tensor<4xi64> -> tensor<4xi1>
  %to_bool = tg.cast %i : tensor<4xi64> -> tensor<4xi1>
  // CHECK: %from_bool = tg.cast %b : tensor<4xi1> -> tensor<4xf32>
  %from_bool = tg.cast %b : tensor<4xi1> -> tensor<4xf32>
  // CHECK: %same = tg.cast %b : tensor<4xi1> -> tensor<4xi1>
  %same = tg.cast %b : tensor<4xi1> -> tensor<4xi1>
  // CHECK: %strided = tg.cast %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xi32>
  %strided = tg.cast %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xi32>
  func.return
}

// Bool constants print as true/false and round-trip.
// CHECK-LABEL: func.func @bool_constant
func.func @bool_constant() -> tensor<3xi1> {
  // CHECK: %mask = tg.constant dense<[true, false, true]> : tensor<3xi1>
  %mask = tg.constant dense<[true, false, true]> : tensor<3xi1>
  func.return %mask : tensor<3xi1>
}
