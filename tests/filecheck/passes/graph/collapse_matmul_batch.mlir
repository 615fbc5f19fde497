// RUN: qidao-opt %s -p collapse-matmul-batch | filecheck %s
// RUN: qidao-opt %s -p collapse-matmul-batch,collapse-matmul-batch | filecheck %s

// The docstring's example: a fused matmul + bias + relu on a [2, 3] row space runs
// as one [6, 8] x [8, 4] matmul; the result is viewed back.
// CHECK-LABEL: func.func @docstring
// CHECK-NEXT:    %x_2d = tg.view %x : tensor<2x3x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT:    %h_2d = tg.fused %x_2d, %w, %b : (tensor<6x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<6x4xf32> {
// CHECK-NEXT:    ^bb0(%x_1: tensor<6x8xf32>, %w_1: tensor<8x4xf32>, %b_1: tensor<4xf32>):
// CHECK-NEXT:      %m = tg.matmul %x_1, %w_1 : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:      %a = tg.add %m, %b_1 : (tensor<6x4xf32>, tensor<4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:      %h = tg.relu %a : tensor<6x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:      tg.yield %h : tensor<6x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %h = tg.view %h_2d : tensor<6x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %h : tensor<2x3x4xf32>
func.func @docstring(%x: tensor<2x3x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %h = tg.fused %x, %w, %b : (tensor<2x3x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32> {
  ^bb0(%x_1: tensor<2x3x8xf32>, %w_1: tensor<8x4xf32>, %b_1: tensor<4xf32>):
    %m = tg.matmul %x_1, %w_1 : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
    %a = tg.add %m, %b_1 : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
    %h = tg.relu %a : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
    tg.yield %h : tensor<2x3x4xf32>
  }
  func.return %h : tensor<2x3x4xf32>
}

// A bare matmul (ConvNeXt's pointwise MLP on a 3x3 map): M = 1 * 3 * 3 = 9 rows.
// CHECK-LABEL: func.func @bare
// CHECK-NEXT:    %x_2d = tg.view %x : tensor<1x3x3x64xf32> -> tensor<9x64xf32>
// CHECK-NEXT:    %m_2d = tg.matmul %x_2d, %w : (tensor<9x64xf32>, tensor<64x32xf32>) -> tensor<9x32xf32>
// CHECK-NEXT:    %m = tg.view %m_2d : tensor<9x32xf32> -> tensor<1x3x3x32xf32>
// CHECK-NEXT:    %r = tg.relu %m : tensor<1x3x3x32xf32> -> tensor<1x3x3x32xf32>
func.func @bare(%x: tensor<1x3x3x64xf32>, %w: tensor<64x32xf32>) -> tensor<1x3x3x32xf32> {
  %m = tg.matmul %x, %w : (tensor<1x3x3x64xf32>, tensor<64x32xf32>) -> tensor<1x3x3x32xf32>
  %r = tg.relu %m : tensor<1x3x3x32xf32> -> tensor<1x3x3x32xf32>
  func.return %r : tensor<1x3x3x32xf32>
}

// A rhs in column panels (pack-panels) is a matrix too: the rows collapse, bare
// and in a group, and the rebuilt matmul keeps its rhs_layout.
// CHECK-LABEL: func.func @panels
// CHECK-NEXT:    %x_2d = tg.view %x : tensor<1x3x3x64xf32> -> tensor<9x64xf32>
// CHECK-NEXT:    %m_2d = tg.matmul %x_2d, %p rhs_layout = "panels" : (tensor<9x64xf32>, tensor<2x64x32xf32>) -> tensor<9x64xf32>
// CHECK:         %h_2d = tg.fused %x_2d, %q, %b
// CHECK:           %n = tg.matmul %{{.*}}, %{{.*}} rhs_layout = "panels" : (tensor<9x64xf32>, tensor<2x64x32xf32>) -> tensor<9x64xf32>
func.func @panels(%x: tensor<1x3x3x64xf32>, %p: tensor<2x64x32xf32>, %q: tensor<2x64x32xf32>, %b: tensor<64xf32>) -> (tensor<1x3x3x64xf32>, tensor<1x3x3x64xf32>) {
  %m = tg.matmul %x, %p rhs_layout = "panels" : (tensor<1x3x3x64xf32>, tensor<2x64x32xf32>) -> tensor<1x3x3x64xf32>
  %h = tg.fused %x, %q, %b : (tensor<1x3x3x64xf32>, tensor<2x64x32xf32>, tensor<64xf32>) -> tensor<1x3x3x64xf32> {
  ^bb0(%x_1: tensor<1x3x3x64xf32>, %q_1: tensor<2x64x32xf32>, %b_1: tensor<64xf32>):
    %n = tg.matmul %x_1, %q_1 rhs_layout = "panels" : (tensor<1x3x3x64xf32>, tensor<2x64x32xf32>) -> tensor<1x3x3x64xf32>
    %a = tg.add %n, %b_1 : (tensor<1x3x3x64xf32>, tensor<64xf32>) -> tensor<1x3x3x64xf32>
    tg.yield %a : tensor<1x3x3x64xf32>
  }
  func.return %m, %h : tensor<1x3x3x64xf32>, tensor<1x3x3x64xf32>
}

// One row per batch: the batch becomes the rows.
// CHECK-LABEL: func.func @batch_of_single_rows
// CHECK-NEXT:    %x_2d = tg.view %x : tensor<2x1x48xf32> -> tensor<2x48xf32>
// CHECK-NEXT:    %m_2d = tg.matmul %x_2d, %w : (tensor<2x48xf32>, tensor<48x32xf32>) -> tensor<2x32xf32>
// CHECK-NEXT:    %m = tg.view %m_2d : tensor<2x32xf32> -> tensor<2x1x32xf32>
func.func @batch_of_single_rows(%x: tensor<2x1x48xf32>, %w: tensor<48x32xf32>) -> tensor<2x1x32xf32> {
  %m = tg.matmul %x, %w : (tensor<2x1x48xf32>, tensor<48x32xf32>) -> tensor<2x1x32xf32>
  func.return %m : tensor<2x1x32xf32>
}

// Every kind of epilogue operand: full rows (the residual %r, a per-row %c) are
// viewed to [14, X]; a bias broadcast over every row keeps its values: [1, 1, 4]
// is viewed to [1, 4], a scalar stays.
// CHECK-LABEL: func.func @epilogue_operands
// CHECK-NEXT:    %x_2d = tg.view %x : tensor<2x7x8xf32> -> tensor<14x8xf32>
// CHECK-NEXT:    %b_2d = tg.view %b : tensor<1x1x4xf32> -> tensor<1x4xf32>
// CHECK-NEXT:    %r_2d = tg.view %r : tensor<2x7x4xf32> -> tensor<14x4xf32>
// CHECK-NEXT:    %c_2d = tg.view %c : tensor<2x7x1xf32> -> tensor<14x1xf32>
// CHECK-NEXT:    %y_2d = tg.fused %x_2d, %w, %b_2d, %s, %r_2d, %c_2d : (tensor<14x8xf32>, tensor<8x4xf32>, tensor<1x4xf32>, tensor<f32>, tensor<14x4xf32>, tensor<14x1xf32>) -> tensor<14x4xf32> {
// CHECK:           %m = tg.matmul %x_1, %w_1 : (tensor<14x8xf32>, tensor<8x4xf32>) -> tensor<14x4xf32>
// CHECK-NEXT:      %a = tg.add %m, %b_1 : (tensor<14x4xf32>, tensor<1x4xf32>) -> tensor<14x4xf32>
// CHECK-NEXT:      %g = tg.mul %a, %s_1 : (tensor<14x4xf32>, tensor<f32>) -> tensor<14x4xf32>
// CHECK-NEXT:      %t = tg.mul %g, %c_1 : (tensor<14x4xf32>, tensor<14x1xf32>) -> tensor<14x4xf32>
// CHECK-NEXT:      %y = tg.add %t, %r_1 : (tensor<14x4xf32>, tensor<14x4xf32>) -> tensor<14x4xf32>
// CHECK-NEXT:      tg.yield %y : tensor<14x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %y = tg.view %y_2d : tensor<14x4xf32> -> tensor<2x7x4xf32>
func.func @epilogue_operands(%x: tensor<2x7x8xf32>, %w: tensor<8x4xf32>, %b: tensor<1x1x4xf32>, %r: tensor<2x7x4xf32>, %s: tensor<f32>, %c: tensor<2x7x1xf32>) -> tensor<2x7x4xf32> {
  %y = tg.fused %x, %w, %b, %s, %r, %c : (tensor<2x7x8xf32>, tensor<8x4xf32>, tensor<1x1x4xf32>, tensor<f32>, tensor<2x7x4xf32>, tensor<2x7x1xf32>) -> tensor<2x7x4xf32> {
  ^bb0(%x_1: tensor<2x7x8xf32>, %w_1: tensor<8x4xf32>, %b_1: tensor<1x1x4xf32>, %s_1: tensor<f32>, %r_1: tensor<2x7x4xf32>, %c_1: tensor<2x7x1xf32>):
    %m = tg.matmul %x_1, %w_1 : (tensor<2x7x8xf32>, tensor<8x4xf32>) -> tensor<2x7x4xf32>
    %a = tg.add %m, %b_1 : (tensor<2x7x4xf32>, tensor<1x1x4xf32>) -> tensor<2x7x4xf32>
    %g = tg.mul %a, %s_1 : (tensor<2x7x4xf32>, tensor<f32>) -> tensor<2x7x4xf32>
    %t = tg.mul %g, %c_1 : (tensor<2x7x4xf32>, tensor<2x7x1xf32>) -> tensor<2x7x4xf32>
    %y = tg.add %t, %r_1 : (tensor<2x7x4xf32>, tensor<2x7x4xf32>) -> tensor<2x7x4xf32>
    tg.yield %y : tensor<2x7x4xf32>
  }
  func.return %y : tensor<2x7x4xf32>
}

// Two MLP matmuls in a row: the second reads the first's 2-D result directly, not
// a view of its view, and the residual %x shares the first group's view.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %x_2d = tg.view %x : tensor<1x3x3x8xf32> -> tensor<9x8xf32>
// CHECK-NEXT:    %h_2d = tg.fused %x_2d, %w1
// CHECK-NOT:     tg.view
// CHECK:         %y_2d = tg.fused %h_2d, %w2, %x_2d : (tensor<9x16xf32>, tensor<16x8xf32>, tensor<9x8xf32>) -> tensor<9x8xf32> {
// CHECK:         }
// CHECK-NEXT:    %y = tg.view %y_2d : tensor<9x8xf32> -> tensor<1x3x3x8xf32>
// CHECK-NEXT:    func.return %y
func.func @chain(%x: tensor<1x3x3x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<1x3x3x8xf32> {
  %h = tg.fused %x, %w1 : (tensor<1x3x3x8xf32>, tensor<8x16xf32>) -> tensor<1x3x3x16xf32> {
  ^bb0(%x_1: tensor<1x3x3x8xf32>, %w1_1: tensor<8x16xf32>):
    %m = tg.matmul %x_1, %w1_1 : (tensor<1x3x3x8xf32>, tensor<8x16xf32>) -> tensor<1x3x3x16xf32>
    %h = tg.relu %m : tensor<1x3x3x16xf32> -> tensor<1x3x3x16xf32>
    tg.yield %h : tensor<1x3x3x16xf32>
  }
  %y = tg.fused %h, %w2, %x : (tensor<1x3x3x16xf32>, tensor<16x8xf32>, tensor<1x3x3x8xf32>) -> tensor<1x3x3x8xf32> {
  ^bb0(%h_1: tensor<1x3x3x16xf32>, %w2_1: tensor<16x8xf32>, %x_1: tensor<1x3x3x8xf32>):
    %m = tg.matmul %h_1, %w2_1 : (tensor<1x3x3x16xf32>, tensor<16x8xf32>) -> tensor<1x3x3x8xf32>
    %y = tg.add %x_1, %m : (tensor<1x3x3x8xf32>, tensor<1x3x3x8xf32>) -> tensor<1x3x3x8xf32>
    tg.yield %y : tensor<1x3x3x8xf32>
  }
  func.return %y : tensor<1x3x3x8xf32>
}

// An lhs prologue is rebuilt at [P, K].
// CHECK-LABEL: func.func @prologue
// CHECK-NEXT:    %x_2d = tg.view %x : tensor<2x3x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT:    %y_2d = tg.fused %x_2d, %w
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %p = tg.relu %x_1 : tensor<6x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT:      %m = tg.matmul %p, %w_1 : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:      %y = tg.sigmoid %m : tensor<6x4xf32> -> tensor<6x4xf32>
func.func @prologue(%x: tensor<2x3x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x3x4xf32> {
  %y = tg.fused %x, %w : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32> {
  ^bb0(%x_1: tensor<2x3x8xf32>, %w_1: tensor<8x4xf32>):
    %p = tg.relu %x_1 : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
    %m = tg.matmul %p, %w_1 : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
    %y = tg.sigmoid %m : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
    tg.yield %y : tensor<2x3x4xf32>
  }
  func.return %y : tensor<2x3x4xf32>
}

// A strided lhs whose batch and rows still merge (a slice of the last dimension):
// the view keeps the row stride.
// CHECK-LABEL: func.func @strided_but_viewable
// CHECK:         %s_2d = tg.view %s : tensor<2x3x8xf32, strided<[48, 16, 1]>> -> tensor<6x8xf32, strided<[16, 1]>>
// CHECK-NEXT:    %m_2d = tg.matmul %s_2d, %w : (tensor<6x8xf32, strided<[16, 1]>>, tensor<8x4xf32>) -> tensor<6x4xf32>
func.func @strided_but_viewable(%x: tensor<2x3x16xf32>, %w: tensor<8x4xf32>) -> tensor<2x3x4xf32> {
  %s = tg.slice %x start = [0, 0, 0] stop = [2, 3, 8] step = [1, 1, 1] : tensor<2x3x16xf32> -> tensor<2x3x8xf32, strided<[48, 16, 1]>>
  %m = tg.matmul %s, %w : (tensor<2x3x8xf32, strided<[48, 16, 1]>>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
  func.return %m : tensor<2x3x4xf32>
}

// Must not fire: an rhs with batch dimensions is a real batched matmul (q @ k^T).
// CHECK-LABEL: func.func @no_batched_rhs
// CHECK-NEXT:    %m = tg.matmul %q, %k : (tensor<2x3x8xf32>, tensor<2x8x3xf32>) -> tensor<2x3x3xf32>
// CHECK-NEXT:    func.return %m
func.func @no_batched_rhs(%q: tensor<2x3x8xf32>, %k: tensor<2x8x3xf32>) -> tensor<2x3x3xf32> {
  %m = tg.matmul %q, %k : (tensor<2x3x8xf32>, tensor<2x8x3xf32>) -> tensor<2x3x3xf32>
  func.return %m : tensor<2x3x3xf32>
}

// Must not fire: a 2-D lhs has no batch.
// CHECK-LABEL: func.func @no_2d_lhs
// CHECK-NEXT:    %m = tg.matmul %x, %w : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    func.return %m
func.func @no_2d_lhs(%x: tensor<6x8xf32>, %w: tensor<8x4xf32>) -> tensor<6x4xf32> {
  %m = tg.matmul %x, %w : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
  func.return %m : tensor<6x4xf32>
}

// Must not fire: a batch of one ([1, S, D], a transformer's Linear) already runs
// its rows in one batch iteration; there is nothing to fold.
// CHECK-LABEL: func.func @no_batch_of_one
// CHECK-NEXT:    %m = tg.matmul %x, %w : (tensor<1x6x8xf32>, tensor<8x4xf32>) -> tensor<1x6x4xf32>
// CHECK-NEXT:    func.return %m
func.func @no_batch_of_one(%x: tensor<1x6x8xf32>, %w: tensor<8x4xf32>) -> tensor<1x6x4xf32> {
  %m = tg.matmul %x, %w : (tensor<1x6x8xf32>, tensor<8x4xf32>) -> tensor<1x6x4xf32>
  func.return %m : tensor<1x6x4xf32>
}

// Must not fire: a transposed lhs has no [6, 8] view.
// CHECK-LABEL: func.func @no_transposed_lhs
// CHECK-NEXT:    %t = tg.transpose %x
// CHECK-NEXT:    %m = tg.matmul %t, %w : (tensor<2x3x8xf32, strided<[8, 16, 1]>>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %m
func.func @no_transposed_lhs(%x: tensor<3x2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x3x4xf32> {
  %t = tg.transpose %x perm = [1, 0, 2] : tensor<3x2x8xf32> -> tensor<2x3x8xf32, strided<[8, 16, 1]>>
  %m = tg.matmul %t, %w : (tensor<2x3x8xf32, strided<[8, 16, 1]>>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
  func.return %m : tensor<2x3x4xf32>
}

// Must not fire: a per-batch bias [2, 1, 4] has no 2-D form over the 6 rows.
// CHECK-LABEL: func.func @no_per_batch_operand
// CHECK-NEXT:    %y = tg.fused %x, %w, %b : (tensor<2x3x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
func.func @no_per_batch_operand(%x: tensor<2x3x8xf32>, %w: tensor<8x4xf32>, %b: tensor<2x1x4xf32>) -> tensor<2x3x4xf32> {
  %y = tg.fused %x, %w, %b : (tensor<2x3x8xf32>, tensor<8x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32> {
  ^bb0(%x_1: tensor<2x3x8xf32>, %w_1: tensor<8x4xf32>, %b_1: tensor<2x1x4xf32>):
    %m = tg.matmul %x_1, %w_1 : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
    %y = tg.add %m, %b_1 : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
    tg.yield %y : tensor<2x3x4xf32>
  }
  func.return %y : tensor<2x3x4xf32>
}

// Must not fire: [3, 4] repeats over the batch, which no view of [6, 4] does.
// CHECK-LABEL: func.func @no_rows_broadcast_over_batch
// CHECK-NEXT:    %y = tg.fused %x, %w, %r : (tensor<2x3x8xf32>, tensor<8x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
func.func @no_rows_broadcast_over_batch(%x: tensor<2x3x8xf32>, %w: tensor<8x4xf32>, %r: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  %y = tg.fused %x, %w, %r : (tensor<2x3x8xf32>, tensor<8x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  ^bb0(%x_1: tensor<2x3x8xf32>, %w_1: tensor<8x4xf32>, %r_1: tensor<3x4xf32>):
    %m = tg.matmul %x_1, %w_1 : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
    %y = tg.add %m, %r_1 : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
    tg.yield %y : tensor<2x3x4xf32>
  }
  func.return %y : tensor<2x3x4xf32>
}

// Must not fire: the epilogue reads the rhs too, which must stay [4, 4].
// CHECK-LABEL: func.func @no_rhs_read_by_the_epilogue
// CHECK-NEXT:    %y = tg.fused %x, %w : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
func.func @no_rhs_read_by_the_epilogue(%x: tensor<2x4x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4x4xf32> {
  %y = tg.fused %x, %w : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32> {
  ^bb0(%x_1: tensor<2x4x4xf32>, %w_1: tensor<4x4xf32>):
    %m = tg.matmul %x_1, %w_1 : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
    %y = tg.add %m, %w_1 : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
    tg.yield %y : tensor<2x4x4xf32>
  }
  func.return %y : tensor<2x4x4xf32>
}

// Must not fire: a group with an op the pass does not rebuild (here a reduction).
// CHECK-LABEL: func.func @no_unknown_op_in_group
// CHECK-NEXT:    %y = tg.fused %x, %w : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
func.func @no_unknown_op_in_group(%x: tensor<2x3x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x3x4xf32> {
  %y = tg.fused %x, %w : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32> {
  ^bb0(%x_1: tensor<2x3x8xf32>, %w_1: tensor<8x4xf32>):
    %m = tg.matmul %x_1, %w_1 : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
    %s = tg.reduce_max %m axes = [2] keepdims : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
    %y = tg.sub %m, %s : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
    tg.yield %y : tensor<2x3x4xf32>
  }
  func.return %y : tensor<2x3x4xf32>
}

// Must not fire: an elementwise group holds no matmul.
// CHECK-LABEL: func.func @no_matmul_in_group
// CHECK-NEXT:    %z = tg.fused %x, %y : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
func.func @no_matmul_in_group(%x: tensor<2x3x8xf32>, %y: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %z = tg.fused %x, %y : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  ^bb0(%x_1: tensor<2x3x8xf32>, %y_1: tensor<2x3x8xf32>):
    %a = tg.add %x_1, %y_1 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %z = tg.relu %a : tensor<2x3x8xf32> -> tensor<2x3x8xf32>
    tg.yield %z : tensor<2x3x8xf32>
  }
  func.return %z : tensor<2x3x8xf32>
}
