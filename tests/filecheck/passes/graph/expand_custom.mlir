// RUN: qidao-opt %s -p expand-custom | filecheck %s

// The docstring's example: the body takes the op's place, on the operand.
// CHECK-LABEL: func.func @docstring
// CHECK-NEXT:    %s = tg.sigmoid %x : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:    %r = tg.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %r : tensor<4xf32>
func.func @docstring(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tg.custom "demo::swish" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %s = tg.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
    %r = tg.mul %a, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    tg.custom_yield %r : tensor<4xf32>
  } grad {
  }
  func.return %y : tensor<4xf32>
}

// The grad region goes with the op; the ops around it stay in order.
// CHECK-LABEL: func.func @with_vjp
// CHECK-NEXT:    %n = tg.neg %x
// CHECK-NEXT:    %r = tg.mul %n, %n
// CHECK-NEXT:    %z = tg.relu %r
// CHECK-NEXT:    func.return %z
// CHECK-NOT:     grad
func.func @with_vjp(%x: tensor<3xf32>) -> tensor<3xf32> {
  %n = tg.neg %x : tensor<3xf32> -> tensor<3xf32>
  %y = tg.custom "demo::square" %n : (tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<3xf32>):
    %r = tg.mul %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    tg.custom_yield %r : tensor<3xf32>
  } grad {
  ^bb0(%a: tensor<3xf32>, %r: tensor<3xf32>, %dr: tensor<3xf32>):
    %t = tg.add %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %da = tg.mul %dr, %t : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    tg.custom_yield %da : tensor<3xf32>
  }
  %z = tg.relu %y : tensor<3xf32> -> tensor<3xf32>
  func.return %z : tensor<3xf32>
}

// Several results, one of them an operand yielded as it is.
// CHECK-LABEL: func.func @two_results
// CHECK-NEXT:    %s = tg.add %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    func.return %s, %x : tensor<2xf32>, tensor<2xf32>
func.func @two_results(%x: tensor<2xf32>, %w: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %y:2 = tg.custom "demo::sum_and_first" %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>, tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
    %s = tg.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    tg.custom_yield %s, %a : tensor<2xf32>, tensor<2xf32>
  } grad {
  }
  func.return %y#0, %y#1 : tensor<2xf32>, tensor<2xf32>
}

// A custom op in another's body is expanded too.
// CHECK-LABEL: func.func @nested
// CHECK-NEXT:    %s = tg.sigmoid %x
// CHECK-NEXT:    %e = tg.exp %s
// CHECK-NEXT:    func.return %e
// CHECK-NOT:     tg.custom
func.func @nested(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tg.custom "demo::outer" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %i = tg.custom "demo::inner" %a : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%b: tensor<4xf32>):
      %s = tg.sigmoid %b : tensor<4xf32> -> tensor<4xf32>
      tg.custom_yield %s : tensor<4xf32>
    } grad {
    }
    %e = tg.exp %i : tensor<4xf32> -> tensor<4xf32>
    tg.custom_yield %e : tensor<4xf32>
  } grad {
  }
  func.return %y : tensor<4xf32>
}

// Must not fire: no tg.custom, nothing changes (a tg.fused body included).
// CHECK-LABEL: func.func @no_custom
// CHECK-NEXT:    %y = tg.fused %x : (tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%a: tensor<4xf32>):
// CHECK-NEXT:      %r = tg.relu %a : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:      tg.yield %r : tensor<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y : tensor<4xf32>
func.func @no_custom(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tg.fused %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %r = tg.relu %a : tensor<4xf32> -> tensor<4xf32>
    tg.yield %r : tensor<4xf32>
  }
  func.return %y : tensor<4xf32>
}
