// RUN: qidao-opt %s -p 'fuse,convert-tg-to-affine,update-in-place{wrt=w}' | filecheck %s

// An update that is a matmul's epilogue (not marked qd.update, so fuse takes it)
// is not written in place: the matmul accumulates into its output before the
// epilogue reads the old weight, so one buffer for both would read partial sums.
// CHECK-LABEL: func.func @main(
// CHECK-NOT:     qd.in_place
// CHECK:         func.call @main_k1_fused(%g, %x, %w, %out1) :
func.func @main(%g: tensor<8x4xf32>, %x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<f32>, tensor<8x8xf32>) attributes {qd.input_names = ["g", "x", "w"], qd.output_names = ["loss", "new_w"]} {
  %loss = tg.reduce_sum %w axes = [0, 1] : tensor<8x8xf32> -> tensor<f32>
  %d = tg.matmul %g, %x : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %new = tg.sub %w, %d : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %loss, %new : tensor<f32>, tensor<8x8xf32>
}
