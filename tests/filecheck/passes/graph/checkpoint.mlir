// RUN: qidao-opt %s --split-input-file -p 'autodiff{wrt=w0,w1,w2},checkpoint{every=2}' | filecheck %s
// RUN: qidao-opt %s --split-input-file -p 'autodiff{wrt=w0,w1,w2},checkpoint{every=3}' | filecheck %s --check-prefix=ALL
// RUN: qidao-opt %s --split-input-file -p 'autodiff{wrt=w0,w1,w2},checkpoint{every=1}' | filecheck %s --check-prefix=K1
// RUN: qidao-opt %s --split-input-file -p 'autodiff{wrt=w0,w1,w2},checkpoint{budget=100000}' | filecheck %s --check-prefix=ALL
// RUN: qidao-opt %s --split-input-file -p 'autodiff{wrt=w0,w1,w2},checkpoint{budget=100000 exact=true}' | filecheck %s --check-prefix=ALL
// RUN: qidao-opt %s --split-input-file -p 'autodiff{wrt=w0,w1,w2},checkpoint' | filecheck %s --check-prefix=OFF
// RUN: not qidao-opt %s --split-input-file -p 'autodiff{wrt=w0,w1,w2},checkpoint{budget=100}' 2>&1 | filecheck %s --check-prefix=BUDGET
// RUN: not qidao-opt %s --split-input-file -p 'autodiff{wrt=w0,w1,w2},checkpoint{every=2 budget=100}' 2>&1 | filecheck %s --check-prefix=BOTH

// Three segments (one per matmul, with the relu after it); their boundaries are
// %h0 and %h1. every=2 keeps %h1 (the end of segment 2); segments 1-2 form a
// group that the backward recomputes from %x: the clones of the matmul and the
// relu go right before the first backward op that reads %h0 (the weight
// gradient of w1), and the backward reads the clone. The last group (segment 3)
// is never recomputed: its activations are alive when the backward starts.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    qd.checkpoint = {segments = 3 : i64, kept = [1 : i64], recompute_flops = 544 : i64}
// CHECK:         %h0 = tg.relu %a0
// CHECK:         %loss = tg.reduce_sum
// CHECK:         tg.greater %h1,
// CHECK:         %[[A:.*]] = tg.matmul %x, %w0 {qd.recompute = 0 : i64}
// CHECK-NEXT:    %[[H:.*]] = tg.relu %[[A]] {qd.recompute = 0 : i64}
// CHECK-NEXT:    tg.transpose %[[H]] perm = [1, 0]
// CHECK:         tg.greater %[[H]],
// CHECK-NOT:     %h0
// CHECK:         func.return

// every=3 (k = N) keeps no boundary: one group, the last, nothing recomputed.
// A budget that needs no recomputation recomputes nothing (greedy or exact).
// ALL-LABEL: func.func @main
// ALL-SAME:    recompute_flops = 0 : i64
// ALL-NOT:     qd.recompute =

// every=1 keeps both boundaries, and the backward reads nothing else of these
// segments: nothing to recompute.
// K1-LABEL: func.func @main
// K1-SAME:    kept = [0 : i64, 1 : i64], recompute_flops = 0 : i64
// K1-NOT:     qd.recompute =

// Without an option the pass does not fire.
// OFF-LABEL: func.func @main
// OFF-NOT:     qd.checkpoint
// OFF-NOT:     qd.recompute

// BUDGET: checkpoint: no plan keeps the peak under budget=100 bytes; the smallest modelled peak is 416 bytes (3 segments)
// BOTH: checkpoint: every=2 sqrt=False budget=100; give one of every=k (k >= 1), sqrt=true or budget=bytes (> 0)
func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x2xf32>) -> tensor<f32> attributes {qd.input_names = ["x", "w0", "w1", "w2"], qd.output_names = ["loss"]} {
  %a0 = tg.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h0 = tg.relu %a0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = tg.matmul %h0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h1 = tg.relu %a1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a2 = tg.matmul %h1, %w2 : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %loss = tg.reduce_sum %a2 axes = [0, 1] : tensor<4x2xf32> -> tensor<f32>
  func.return %loss : tensor<f32>
}

// -----

// A residual block: inside it the skip input %h0 is live beside the block's
// hidden %r, so there is no cut and the block is one segment (two matmuls).
// Segments: [stem], [block], [head]; every=2 keeps the block's output %h1 and
// recomputes the stem's %h0 and the block's %r from %x.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    qd.checkpoint = {segments = 3 : i64, kept = [1 : i64]
// CHECK:         %h1 = tg.add %h0, %b1
// CHECK:         %loss = tg.reduce_sum
// CHECK:         tg.matmul %x, %w0 {qd.recompute = 0 : i64}
// CHECK:         tg.relu %{{.*}} {qd.recompute = 0 : i64}
// CHECK:         tg.matmul %{{.*}}, %w1 {qd.recompute = 0 : i64}
// CHECK:         tg.relu %{{.*}} {qd.recompute = 0 : i64}
// CHECK:         func.return
// ALL-LABEL: func.func @main
// ALL-NOT:     qd.recompute =
// every=1 recomputes inside the block from the kept %h0: its hidden %r, which
// the backward reads (the relu's mask, the second matmul's weight gradient).
// K1-LABEL: func.func @main
// K1:         %[[A:.*]] = tg.matmul %h0, %w1 {qd.recompute = 1 : i64}
// K1-NEXT:    tg.relu %[[A]] {qd.recompute = 1 : i64}
// K1-NOT:     qd.recompute =
// OFF-LABEL: func.func @main
// OFF-NOT:     qd.recompute
func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x2xf32>) -> tensor<f32> attributes {qd.input_names = ["x", "w0", "w1", "w2"], qd.output_names = ["loss"]} {
  %a0 = tg.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h0 = tg.relu %a0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = tg.matmul %h0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = tg.relu %a1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %b1 = tg.matmul %r, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h1 = tg.add %h0, %b1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %a2 = tg.matmul %h1, %w2 : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %loss = tg.reduce_sum %a2 axes = [0, 1] : tensor<4x2xf32> -> tensor<f32>
  func.return %loss : tensor<f32>
}
