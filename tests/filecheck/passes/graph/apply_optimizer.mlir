// RUN: qidao-opt %s -p 'apply-optimizer{wrt=w optimizer=sgd}' | filecheck %s --check-prefix=SGD
// RUN: qidao-opt %s -p 'apply-optimizer{wrt=w optimizer=sgd momentum=0.9 weight_decay=0.01}' | filecheck %s --check-prefix=MOMENTUM
// RUN: qidao-opt %s -p 'apply-optimizer{wrt=w optimizer=adam}' | filecheck %s --check-prefix=ADAM
// RUN: qidao-opt %s -p 'apply-optimizer' | filecheck %s --check-prefix=NONE
// RUN: not qidao-opt %s -p 'apply-optimizer{wrt=x optimizer=sgd}' 2>&1 | filecheck %s --check-prefix=NOGRAD
// RUN: not qidao-opt %s -p 'apply-optimizer{wrt=w optimizer=rmsprop}' 2>&1 | filecheck %s --check-prefix=UNKNOWN

// What autodiff{wrt=w} leaves (here grad_w is simply %x, as for sum(x * w)).
func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {qd.input_names = ["x", "w"], qd.output_names = ["loss", "grad_w"]} {
  %p = tg.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %loss = tg.reduce_sum %p axes = [0] : tensor<4xf32> -> tensor<f32>
  func.return %loss, %x : tensor<f32>, tensor<4xf32>
}

// Plain sgd gives new_w = w - lr * g; the scalars enter as f32 inputs (damp is unused
// without momentum). The update goes right after the gradient and the weight's last
// reader (%p), not at the end, and its ops are marked qd.update (fuse keeps them out
// of matmul epilogues, so update-in-place can write new_w over w).
// SGD:      func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>, %lr: tensor<f32>, %damp: tensor<f32>) -> (tensor<f32>, tensor<4xf32>)
// SGD-SAME:   qd.input_names = ["x", "w", "lr", "damp"], qd.output_names = ["loss", "new_w"]
// SGD:        %p = tg.mul %x, %w
// SGD-NEXT:   %[[STEP:.*]] = tg.mul %lr, %x {qd.update = "w"}
// SGD-NEXT:   %[[NEW:.*]] = tg.sub %w, %[[STEP]] {qd.update = "w"}
// SGD-NEXT:   %loss = tg.reduce_sum %p
// SGD-NEXT:   func.return %loss, %[[NEW]]

// Momentum and weight decay: g = grad + 0.01 w, buf = 0.9 buf + damp g,
// new_w = w - lr buf; the buffer is an input and its update a result.
// MOMENTUM:      func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>, %lr: tensor<f32>, %damp: tensor<f32>, %momentum_w: tensor<4xf32>)
// MOMENTUM-SAME:   qd.output_names = ["loss", "new_w", "new_momentum_w"]
// MOMENTUM:        %[[WD:.*]] = tg.constant dense<1.000000e-02>
// MOMENTUM:        %[[G:.*]] = tg.add %x, %{{.*}}
// MOMENTUM:        %[[MU:.*]] = tg.constant dense<9.000000e-01>
// MOMENTUM:        %[[OLD:.*]] = tg.mul %momentum_w, %[[MU]]
// MOMENTUM:        %[[DG:.*]] = tg.mul %damp, %[[G]]
// MOMENTUM:        %[[BUF:.*]] = tg.add %[[OLD]], %[[DG]]
// MOMENTUM:        %[[STEP:.*]] = tg.mul %lr, %[[BUF]]
// MOMENTUM:        %[[NEW:.*]] = tg.sub %w, %[[STEP]]
// MOMENTUM:        func.return %loss, %[[NEW]], %[[BUF]]

// Adam has two state tensors; step_size and sqrt(1 - b2^t) are inputs.
// ADAM:      func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>, %step_size: tensor<f32>, %bias_correction2_sqrt: tensor<f32>, %exp_avg_w: tensor<4xf32>, %exp_avg_sq_w: tensor<4xf32>)
// ADAM-SAME:   qd.output_names = ["loss", "new_w", "new_exp_avg_w", "new_exp_avg_sq_w"]
// ADAM:        tg.sqrt
// ADAM:        tg.div %{{.*}}, %bias_correction2_sqrt
// ADAM:        %[[NEW:.*]] = tg.sub %w, %{{.*}}
// ADAM:        func.return %loss, %[[NEW]], %{{.*}}, %{{.*}}

// Without wrt the pass does not fire.
// NONE:      func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
// NONE-NEXT:   tg.mul
// NONE-NEXT:   tg.reduce_sum
// NONE-NEXT:   func.return %loss, %x

// NOGRAD: apply-optimizer: no input 'x' with a result 'grad_x' (run autodiff with the same wrt first)
// UNKNOWN: apply-optimizer: unknown optimizer 'rmsprop'; the optimizers are sgd, adam
