// RUN: qidao-opt %s --split-input-file -p 'autodiff{wrt=w,b}' | filecheck %s
// RUN: qidao-opt %s --split-input-file -p 'autodiff' | filecheck %s --check-prefix=NONE
// RUN: not qidao-opt %s --split-input-file -p 'autodiff{wrt=nope}' 2>&1 | filecheck %s --check-prefix=UNKNOWN

// The book's y = relu(x * w + b): the gradient of relu (select(y > 0, 1, 0): the
// output's sign, as PyTorch's threshold_backward, so the backward keeps y, not
// the pre-activation; relu'(0) = 0) flows to b unchanged and to w times x; the
// results are appended after y, named grad_<input>, in wrt order.
// CHECK-LABEL: func.func @main(%x: tensor<f32>, %w: tensor<f32>, %b: tensor<f32>)
// CHECK-SAME:    -> (tensor<f32>, tensor<f32>, tensor<f32>)
// CHECK-SAME:    qd.output_names = ["y", "grad_w", "grad_b"]
// CHECK:         %[[PRE:.*]] = tg.add
// CHECK:         %y = tg.relu %[[PRE]]
// CHECK:         %[[ONE:.*]] = tg.constant dense<1.000000e+00> : tensor<f32>
// CHECK:         %[[POS:.*]] = tg.greater %y, %{{.*}}
// CHECK:         %[[G:.*]] = tg.select %[[POS]], %[[ONE]], %{{.*}}
// CHECK:         %[[GW:.*]] = tg.mul %[[G]], %x
// CHECK:         func.return %y, %[[GW]], %[[G]] : tensor<f32>, tensor<f32>, tensor<f32>

// Without wrt the pass does not fire.
// NONE-LABEL: func.func @main(%x: tensor<f32>, %w: tensor<f32>, %b: tensor<f32>) -> tensor<f32>
// NONE-NOT:     tg.select
// NONE:         func.return %y : tensor<f32>

// UNKNOWN: autodiff of @main: wrt names 'nope', which is not an input; the inputs are x, w, b
func.func @main(%x: tensor<f32>, %w: tensor<f32>, %b: tensor<f32>) -> tensor<f32> attributes {qd.input_names = ["x", "w", "b"], qd.output_names = ["y"]} {
  %0 = tg.mul %x, %w : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %1 = tg.add %0, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %y = tg.relu %1 : tensor<f32> -> tensor<f32>
  func.return %y : tensor<f32>
}

// -----

// A value used twice (x * w and w * w) sums its gradients; broadcasting (b is a
// row added to every row) is summed back over the broadcast dimension.
// CHECK-LABEL: func.func @main(%x: tensor<2x3xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>)
// CHECK-SAME:    qd.output_names = ["y", "grad_w", "grad_b"]
// CHECK:         tg.reduce_sum %{{.*}} axes = [0] keepdims : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK:         tg.add %{{.*}}, %{{.*}} : (tensor<3xf32>, tensor<3xf32>)
// CHECK:         %[[SUM:.*]] = tg.add %{{.*}}, %{{.*}} : (tensor<3xf32>, tensor<3xf32>)
// CHECK-NEXT:    func.return %y, %[[SUM]], %{{.*}} : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>
// NONE-LABEL: func.func @main(%x: tensor<2x3xf32>
func.func @main(%x: tensor<2x3xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> attributes {qd.input_names = ["x", "w", "b"], qd.output_names = ["y"]} {
  %0 = tg.mul %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = tg.mul %w, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = tg.add %0, %1 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %y = tg.add %2, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// b does not reach output 0 (only output 1): its gradient is zeros, and no op
// that leads only to output 1 is differentiated.
// CHECK-LABEL: func.func @main(%w: tensor<2xf32>, %b: tensor<2xf32>)
// CHECK-SAME:    qd.output_names = ["y", "z", "grad_w", "grad_b"]
// CHECK-NOT:     tg.greater
// CHECK:         %[[Z:.*]] = tg.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK:         func.return %y, %z, %{{.*}}, %[[Z]]
// NONE-LABEL: func.func @main(%w: tensor<2xf32>
func.func @main(%w: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) attributes {qd.input_names = ["w", "b"], qd.output_names = ["y", "z"]} {
  %y = tg.exp %w : tensor<2xf32> -> tensor<2xf32>
  %z = tg.relu %b : tensor<2xf32> -> tensor<2xf32>
  func.return %y, %z : tensor<2xf32>, tensor<2xf32>
}

// -----

// Output 0 is the input w itself, which another op (the mul of output 1) also
// uses: no op lies between w and output 0, so w's gradient is the seed, ones (the
// derivative of sum(w)), and the mul is not differentiated; b does not reach
// output 0: zeros.
// CHECK-LABEL: func.func @main(%w: tensor<2xf32>, %b: tensor<2xf32>)
// CHECK-SAME:    qd.output_names = ["y", "z", "grad_w", "grad_b"]
// CHECK:         %z = tg.mul %w, %b
// CHECK-NEXT:    %[[ONE:.*]] = tg.constant dense<1.000000e+00> : tensor<2xf32>
// CHECK-NOT:     tg.mul
// CHECK:         %[[ZERO:.*]] = tg.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    func.return %w, %z, %[[ONE]], %[[ZERO]]
// NONE-LABEL: func.func @main(%w: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
// NONE:         func.return %w, %z : tensor<2xf32>, tensor<2xf32>
func.func @main(%w: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) attributes {qd.input_names = ["w", "b"], qd.output_names = ["y", "z"]} {
  %z = tg.mul %w, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %w, %z : tensor<2xf32>, tensor<2xf32>
}
