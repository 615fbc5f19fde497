// RUN: not qidao-opt %s -p 'autodiff{wrt=w0,w1,w2},checkpoint{every=2}' 2>&1 | filecheck %s
// RUN: qidao-opt %s -p 'autodiff{wrt=w0,w1,w2},checkpoint{every=3}' | filecheck %s --check-prefix=KEPT

// A call to an outside function (random numbers, say) is not pure: running it
// again in the backward need not give the same values, so the pass refuses to
// recompute the segment that holds it, and names it.
// CHECK: checkpoint: cannot recompute func.call (segments 0-1): it is not pure, so running it again would not give the same value; keep a boundary after it

// With every=3 (one group, the last) nothing is recomputed: no error.
// KEPT: qd.checkpoint = {segments = 3 : i64, kept = [], recompute_flops = 0 : i64}
func.func private @noise() -> tensor<4x8xf32>

func.func @main(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x2xf32>) -> tensor<f32> attributes {qd.input_names = ["x", "w0", "w1", "w2"], qd.output_names = ["loss"]} {
  %n = func.call @noise() : () -> tensor<4x8xf32>
  %a0 = tg.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %d0 = tg.mul %a0, %n : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h0 = tg.relu %d0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a1 = tg.matmul %h0, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %h1 = tg.relu %a1 : tensor<4x8xf32> -> tensor<4x8xf32>
  %a2 = tg.matmul %h1, %w2 : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %loss = tg.reduce_sum %a2 axes = [0, 1] : tensor<4x2xf32> -> tensor<f32>
  func.return %loss : tensor<f32>
}
