// RUN: qidao-opt %s -p dce | filecheck %s

// xDSL's dce on tg: every tg op is Pure, so an op whose results nobody uses is
// dead, and so, in turn, is what only it used (Toy chapter 3's lesson).

// An unused chain disappears; the returned value's op stays.
// CHECK-LABEL: func.func @unused_chain
// CHECK-NEXT:    %y = tg.relu %x
// CHECK-NEXT:    func.return %y
func.func @unused_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = tg.constant dense<2.0> : tensor<4xf32>
  %a = tg.mul %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = tg.exp %a : tensor<4xf32> -> tensor<4xf32>
  %t = tg.transpose %b perm = [0] : tensor<4xf32> -> tensor<4xf32>
  %y = tg.relu %x : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// Must not fire: every op feeds the returned value.
// CHECK-LABEL: func.func @all_used
// CHECK-NEXT:    %c = tg.constant
// CHECK-NEXT:    %a = tg.mul %x, %c
// CHECK-NEXT:    %y = tg.exp %a
// CHECK-NEXT:    func.return %y
func.func @all_used(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = tg.constant dense<2.0> : tensor<4xf32>
  %a = tg.mul %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y = tg.exp %a : tensor<4xf32> -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// A tg.fused whose result is unused disappears with its whole body.
// CHECK-LABEL: func.func @unused_fused
// CHECK-NOT:     tg.fused
// CHECK:         func.return %x
func.func @unused_fused(%x: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %f = tg.fused %x, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%xa: tensor<8xf32>, %ba: tensor<8xf32>):
    %s = tg.add %xa, %ba : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %r = tg.relu %s : tensor<8xf32> -> tensor<8xf32>
    tg.yield %r : tensor<8xf32>
  }
  func.return %x : tensor<8xf32>
}

// Must not fire: a used tg.fused stays, body and all.
// CHECK-LABEL: func.func @used_fused
// CHECK:         %f = tg.fused %x, %b
// CHECK:           tg.add
// CHECK:           tg.relu
// CHECK:           tg.yield
// CHECK:         func.return %f
func.func @used_fused(%x: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %f = tg.fused %x, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%xa: tensor<8xf32>, %ba: tensor<8xf32>):
    %s = tg.add %xa, %ba : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %r = tg.relu %s : tensor<8xf32> -> tensor<8xf32>
    tg.yield %r : tensor<8xf32>
  }
  func.return %f : tensor<8xf32>
}

// An unused op inside a fused body is dead too; the yielded chain stays.
// CHECK-LABEL: func.func @dead_op_in_fused_body
// CHECK:         ^bb0
// CHECK-NEXT:      %r = tg.relu %xa
// CHECK-NEXT:      tg.yield %r
func.func @dead_op_in_fused_body(%x: tensor<8xf32>) -> tensor<8xf32> {
  %f = tg.fused %x : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%xa: tensor<8xf32>):
    %e = tg.exp %xa : tensor<8xf32> -> tensor<8xf32>
    %r = tg.relu %xa : tensor<8xf32> -> tensor<8xf32>
    tg.yield %r : tensor<8xf32>
  }
  func.return %f : tensor<8xf32>
}
