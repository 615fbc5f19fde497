// RUN: qidao-opt %s -p collapse-unary | filecheck %s

// The docstring's example: relu(relu(x)) and a double negation.
// CHECK-LABEL: func.func @docstring
// CHECK-NEXT:    %a = tg.relu %x : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    func.return %a : tensor<4xf32>
func.func @docstring(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = tg.relu %x : tensor<4xf32> -> tensor<4xf32>
  %b = tg.relu %a : tensor<4xf32> -> tensor<4xf32>
  %c = tg.neg %b : tensor<4xf32> -> tensor<4xf32>
  %d = tg.neg %c : tensor<4xf32> -> tensor<4xf32>
  func.return %d : tensor<4xf32>
}

// abs is idempotent, on integers too.
// CHECK-LABEL: func.func @abs_abs_i32
// CHECK-NEXT:    %a = tg.abs %x : tensor<3xi32> -> tensor<3xi32>
// CHECK-NEXT:    func.return %a : tensor<3xi32>
func.func @abs_abs_i32(%x: tensor<3xi32>) -> tensor<3xi32> {
  %a = tg.abs %x : tensor<3xi32> -> tensor<3xi32>
  %b = tg.abs %a : tensor<3xi32> -> tensor<3xi32>
  func.return %b : tensor<3xi32>
}

// abs(neg(x)) reads x itself; the neg goes when nothing else uses it.
// CHECK-LABEL: func.func @abs_of_neg
// CHECK-NEXT:    %{{.*}} = tg.abs %x : tensor<2x2xf32> -> tensor<2x2xf32>
// CHECK-NOT:     tg.neg
func.func @abs_of_neg(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %n = tg.neg %x : tensor<2x2xf32> -> tensor<2x2xf32>
  %a = tg.abs %n : tensor<2x2xf32> -> tensor<2x2xf32>
  func.return %a : tensor<2x2xf32>
}

// The inner op stays while something else uses it.
// CHECK-LABEL: func.func @inner_used_twice
// CHECK-NEXT:    %a = tg.relu %x
// CHECK-NEXT:    %s = tg.add %a, %a
// CHECK-NEXT:    func.return %a, %s
func.func @inner_used_twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = tg.relu %x : tensor<4xf32> -> tensor<4xf32>
  %b = tg.relu %a : tensor<4xf32> -> tensor<4xf32>
  %s = tg.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %b, %s : tensor<4xf32>, tensor<4xf32>
}

// Must not fire: different ops (relu(neg(x)) is not neg(x) or relu(x)).
// CHECK-LABEL: func.func @relu_of_neg
// CHECK-NEXT:    %n = tg.neg %x
// CHECK-NEXT:    %r = tg.relu %n
// CHECK-NEXT:    func.return %r
func.func @relu_of_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %n = tg.neg %x : tensor<4xf32> -> tensor<4xf32>
  %r = tg.relu %n : tensor<4xf32> -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// Must not fire: x is strided (a transpose), neg(neg(x)) is row-major.
// CHECK-LABEL: func.func @strided_double_negation
// CHECK:         %m = tg.neg %n
// CHECK-NEXT:    func.return %m
func.func @strided_double_negation(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %n = tg.neg %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %m = tg.neg %n : tensor<3x2xf32> -> tensor<3x2xf32>
  func.return %m : tensor<3x2xf32>
}

// Must not fire: logical_not is not an involution on bytes (not(not(2)) is 1).
// CHECK-LABEL: func.func @double_not
// CHECK-COUNT-2: tg.logical_not
func.func @double_not(%x: tensor<4xi1>) -> tensor<4xi1> {
  %a = tg.logical_not %x : tensor<4xi1> -> tensor<4xi1>
  %b = tg.logical_not %a : tensor<4xi1> -> tensor<4xi1>
  func.return %b : tensor<4xi1>
}
