// RUN: qidao-opt %s -p cse | filecheck %s

// xDSL's cse on tg: two Pure ops with the same name, operands and properties
// compute the same value, so the second is replaced by the first.

// Two identical adds merge.
// CHECK-LABEL: func.func @identical_adds
// CHECK-NEXT:    %a = tg.add %x, %y
// CHECK-NEXT:    %c = tg.mul %a, %a
// CHECK-NEXT:    func.return %c
func.func @identical_adds(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = tg.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = tg.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = tg.mul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// Must not fire: the operands are swapped (cse does not know add commutes).
// CHECK-LABEL: func.func @swapped_operands
// CHECK-NEXT:    %a = tg.add %x, %y
// CHECK-NEXT:    %b = tg.add %y, %x
func.func @swapped_operands(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = tg.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = tg.add %y, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = tg.mul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// Must not fire: transposes with different perms are different values.
// CHECK-LABEL: func.func @different_perms
// CHECK-NEXT:    %a = tg.transpose %x perm = [0, 2, 1]
// CHECK-NEXT:    %b = tg.transpose %x perm = [2, 1, 0]
func.func @different_perms(%x: tensor<2x2x2xf32>) -> tensor<2x2x2xf32> {
  %a = tg.transpose %x perm = [0, 2, 1] : tensor<2x2x2xf32> -> tensor<2x2x2xf32, strided<[4, 1, 2]>>
  %b = tg.transpose %x perm = [2, 1, 0] : tensor<2x2x2xf32> -> tensor<2x2x2xf32, strided<[1, 2, 4]>>
  %c = tg.add %a, %b : (tensor<2x2x2xf32, strided<[4, 1, 2]>>, tensor<2x2x2xf32, strided<[1, 2, 4]>>) -> tensor<2x2x2xf32>
  func.return %c : tensor<2x2x2xf32>
}

// Identical transposes merge.
// CHECK-LABEL: func.func @same_perms
// CHECK-NEXT:    %a = tg.transpose %x perm = [1, 0]
// CHECK-NEXT:    %c = tg.add %a, %a
func.func @same_perms(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %a = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %b = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %c = tg.add %a, %b : (tensor<3x2xf32, strided<[1, 3]>>, tensor<3x2xf32, strided<[1, 3]>>) -> tensor<3x2xf32>
  func.return %c : tensor<3x2xf32>
}

// Identical constants merge.
// CHECK-LABEL: func.func @identical_constants
// CHECK-NEXT:    %a = tg.constant dense<[1.000000e+00, 2.000000e+00]>
// CHECK-NEXT:    %c = tg.add %a, %a
func.func @identical_constants() -> tensor<2xf32> {
  %a = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = tg.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %c : tensor<2xf32>
}

// Must not fire: constants with different values.
// CHECK-LABEL: func.func @different_constants
// CHECK-NEXT:    %a = tg.constant dense<[1.000000e+00, 2.000000e+00]>
// CHECK-NEXT:    %b = tg.constant dense<[1.000000e+00, 3.000000e+00]>
// CHECK-NEXT:    %c = tg.add %a, %b
func.func @different_constants() -> tensor<2xf32> {
  %a = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = tg.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %c = tg.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %c : tensor<2xf32>
}

// Must not fire: -0.0 and 0.0 are different constants (their bits differ).
// CHECK-LABEL: func.func @signed_zeros
// CHECK-NEXT:    %a = tg.constant dense<0.000000e+00>
// CHECK-NEXT:    %b = tg.constant dense<-0.000000e+00>
func.func @signed_zeros() -> tensor<2xf32> {
  %a = tg.constant dense<0.0> : tensor<2xf32>
  %b = tg.constant dense<-0.0> : tensor<2xf32>
  %c = tg.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %c : tensor<2xf32>
}

// Must not fire: same op and operand, different reduction axes.
// CHECK-LABEL: func.func @different_axes
// CHECK-NEXT:    %a = tg.reduce_sum %x axes = [0]
// CHECK-NEXT:    %b = tg.reduce_sum %x axes = [1]
func.func @different_axes(%x: tensor<3x3xf32>) -> tensor<3xf32> {
  %a = tg.reduce_sum %x axes = [0] : tensor<3x3xf32> -> tensor<3xf32>
  %b = tg.reduce_sum %x axes = [1] : tensor<3x3xf32> -> tensor<3xf32>
  %c = tg.add %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %c : tensor<3xf32>
}
