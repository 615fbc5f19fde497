// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.custom and tg.custom_yield, in custom form and (second RUN line)
// through the generic form: with a vjp, without one, several results, a strided
// operand.

// CHECK-LABEL: func.func @swish
// CHECK-NEXT:    %y = tg.custom "demo::swish" %x : (tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%a: tensor<4xf32>):
// CHECK-NEXT:      %s = tg.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:      %r = tg.mul %a, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:      tg.custom_yield %r : tensor<4xf32>
// CHECK-NEXT:    } grad {
// CHECK-NEXT:    ^bb0(%a_1: tensor<4xf32>, %r_1: tensor<4xf32>, %dr: tensor<4xf32>):
// CHECK-NEXT:      %s_1 = tg.sigmoid %a_1 : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT:      %da = tg.mul %dr, %s_1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:      tg.custom_yield %da : tensor<4xf32>
// CHECK-NEXT:    }
func.func @swish(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tg.custom "demo::swish" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %s = tg.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
    %r = tg.mul %a, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    tg.custom_yield %r : tensor<4xf32>
  } grad {
  ^bb0(%a: tensor<4xf32>, %r: tensor<4xf32>, %dr: tensor<4xf32>):
    %s = tg.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
    %da = tg.mul %dr, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    tg.custom_yield %da : tensor<4xf32>
  }
  func.return %y : tensor<4xf32>
}

// CHECK-LABEL: func.func @no_vjp
// CHECK:         %y = tg.custom "com.example::twice" %x : (tensor<2x3xf64>) -> tensor<2x3xf64> {
// CHECK:         } grad {
// CHECK-NEXT:    }
func.func @no_vjp(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %y = tg.custom "com.example::twice" %x : (tensor<2x3xf64>) -> tensor<2x3xf64> {
  ^bb0(%a: tensor<2x3xf64>):
    %r = tg.add %a, %a : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
    tg.custom_yield %r : tensor<2x3xf64>
  } grad {
  }
  func.return %y : tensor<2x3xf64>
}

// CHECK-LABEL: func.func @two_results_strided_operand
// CHECK:         %y, %y_1 = tg.custom "demo::pair" %t, %b : (tensor<3x2xf32, strided<[1, 3]>>, tensor<2xf32>) -> tensor<3x2xf32>, tensor<2xf32> {
// CHECK-NEXT:    ^bb0(%ta: tensor<3x2xf32, strided<[1, 3]>>, %ba: tensor<2xf32>):
// CHECK:           tg.custom_yield %s, %ba : tensor<3x2xf32>, tensor<2xf32>
func.func @two_results_strided_operand(%t: tensor<3x2xf32, strided<[1, 3]>>, %b: tensor<2xf32>) {
  %y:2 = tg.custom "demo::pair" %t, %b : (tensor<3x2xf32, strided<[1, 3]>>, tensor<2xf32>) -> tensor<3x2xf32>, tensor<2xf32> {
  ^bb0(%ta: tensor<3x2xf32, strided<[1, 3]>>, %ba: tensor<2xf32>):
    %s = tg.add %ta, %ba : (tensor<3x2xf32, strided<[1, 3]>>, tensor<2xf32>) -> tensor<3x2xf32>
    tg.custom_yield %s, %ba : tensor<3x2xf32>, tensor<2xf32>
  } grad {
  }
  func.return
}
