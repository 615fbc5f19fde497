// RUN: qidao-opt %s -p fuse | filecheck %s

// An optimizer's update (ops marked qd.update by apply-optimizer) stays out of the
// weight gradient's matmul epilogue: update-in-place writes it over the weight,
// which an epilogue cannot (the matmul accumulates into the output first). The
// update's own ops still fuse with each other.
// CHECK-LABEL: func.func @main
// CHECK:         %[[D:.*]] = tg.matmul %g, %x
// CHECK-NEXT:    tg.fused %lr, %[[D]], %w
// CHECK:           tg.mul
// CHECK-NEXT:      tg.sub
// Without the mark the same ops are the matmul's epilogue.
// CHECK:         tg.fused %g, %x, %lr, %w
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tg.matmul
func.func @main(%g: tensor<8x4xf32>, %x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %lr: tensor<f32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %d = tg.matmul %g, %x : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %s = tg.mul %lr, %d {qd.update = "w"} : (tensor<f32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %new = tg.sub %w, %s {qd.update = "w"} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %d2 = tg.matmul %g, %x : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %s2 = tg.mul %lr, %d2 : (tensor<f32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %new2 = tg.sub %w, %s2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %new, %new2 : tensor<8x8xf32>, tensor<8x8xf32>
}
