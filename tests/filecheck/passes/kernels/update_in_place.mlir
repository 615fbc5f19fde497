// RUN: qidao-opt %s --split-input-file -p 'autodiff{wrt=w0,w1},apply-optimizer{wrt=w0,w1},simplify,cse,fuse,convert-tg-to-affine,update-in-place{wrt=w0,w1}' | filecheck %s
// RUN: qidao-opt %s --split-input-file -p 'autodiff{wrt=w0,w1},apply-optimizer{wrt=w0,w1},simplify,cse,fuse,convert-tg-to-affine,update-in-place' | filecheck %s --check-prefix=OFF

// Two layers trained with SGD: new_w1 = w1 - lr * dW1 is an elementwise kernel
// (apply-optimizer marks its ops qd.update, so fuse keeps them out of the weight
// gradient's matmul). w1 is read once more after its update was placed: by the
// input gradient's matmul (k6, g . w1^T); the update moves after that reader,
// with the dealloc of dW1's buffer, and writes over w1: the kernel stores through
// its %w1 argument, and both lose llvm.noalias. The host records the pairs
// (output new_w1 = #2 over input w1 = #2, new_w0 = #1 over w0 = #1).
// CHECK:       func.func private @main_k4_fused(%lr: memref<f32> {llvm.noalias}, %in1: memref<8x2xf32> {llvm.noalias}, %w1: memref<8x2xf32>, %out: memref<8x2xf32>)
// CHECK-NOT:     affine.store %{{.*}}, %out
// CHECK:         affine.store %{{.*}}, %w1
// CHECK-LABEL: func.func @main(
// CHECK-SAME:    qd.in_place = {{\[}}[1 : i64, 1 : i64], [2 : i64, 2 : i64]]
// CHECK:         func.call @main_k3_matmul(%{{.*}}, %{{.*}}, %[[DW1:.*]]) :
// CHECK:         func.call @main_k6_fused(%{{.*}}, %{{.*}}, %{{.*}}) :
// CHECK-NEXT:    func.call @main_k4_fused(%lr, %[[DW1]], %w1, %w1) :
// CHECK-NEXT:    memref.dealloc %[[DW1]]
// CHECK:         func.call @main_k8_fused(%lr, %{{.*}}, %w0, %w0) :
// CHECK-NOT:     %out1
// CHECK:         func.return

// Without wrt the pass does not fire: the updates go to their outputs.
// OFF-LABEL:   func.func @main(
// OFF-NOT:       qd.in_place
// OFF:           func.call @main_k4_fused(%lr, %{{.*}}, %w1, %out2) :
func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x2xf32>) -> tensor<f32> attributes {qd.input_names = ["x", "w0", "w1"], qd.output_names = ["loss"]} {
  %a0 = tg.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h0 = tg.relu %a0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = tg.matmul %h0, %w1 : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %loss = tg.reduce_sum %a1 axes = [0, 1] : tensor<4x2xf32> -> tensor<f32>
  func.return %loss : tensor<f32>
}
