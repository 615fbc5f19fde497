// RUN: qidao-opt %s | filecheck %s

// CHECK-LABEL: func.func @relu_affine
func.func @relu_affine(%x: tensor<1x1xf32>, %w: tensor<1x1xf32>, %b: tensor<1xf32>) -> tensor<1x1xf32> {
  // CHECK: tg.matmul %x, %w : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
  %0 = tg.matmul %x, %w : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
  %1 = tg.add %0, %b : (tensor<1x1xf32>, tensor<1xf32>) -> tensor<1x1xf32>
  %2 = tg.relu %1 : tensor<1x1xf32> -> tensor<1x1xf32>
  func.return %2 : tensor<1x1xf32>
}
