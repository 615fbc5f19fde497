// RUN: qidao-opt %s -p fuse | filecheck %s

// The docstring's example: three elementwise ops become one kernel.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[F:.*]] = tg.fused %x, %w, %b : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<8xf32>, %[[W:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>):
// CHECK-NEXT:      %[[M:.*]] = tg.mul %[[X]], %[[W]]
// CHECK-NEXT:      %[[A:.*]] = tg.add %[[M]], %[[B]]
// CHECK-NEXT:      %[[R:.*]] = tg.relu %[[A]]
// CHECK-NEXT:      tg.yield %[[R]] : tensor<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[F]] : tensor<8xf32>
func.func @chain(%x: tensor<8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = tg.mul %x, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = tg.add %0, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = tg.relu %1 : tensor<8xf32> -> tensor<8xf32>
  func.return %2 : tensor<8xf32>
}

// The book's five-op chain, with broadcast scalars as inputs: one group.
// CHECK-LABEL: func.func @five_op_chain
// CHECK:         tg.fused %x, %w, %b, %s, %c
// CHECK-COUNT-5:   tg.{{mul|add|relu}}
// CHECK-NEXT:      tg.yield
// CHECK-NOT:     tg.fused
func.func @five_op_chain(%x: tensor<1024xf32>, %w: tensor<1xf32>, %b: tensor<1xf32>, %s: tensor<1xf32>, %c: tensor<1xf32>) -> tensor<1024xf32> {
  %0 = tg.mul %x, %w : (tensor<1024xf32>, tensor<1xf32>) -> tensor<1024xf32>
  %1 = tg.add %0, %b : (tensor<1024xf32>, tensor<1xf32>) -> tensor<1024xf32>
  %2 = tg.relu %1 : tensor<1024xf32> -> tensor<1024xf32>
  %3 = tg.mul %2, %s : (tensor<1024xf32>, tensor<1xf32>) -> tensor<1024xf32>
  %4 = tg.add %3, %c : (tensor<1024xf32>, tensor<1xf32>) -> tensor<1024xf32>
  func.return %4 : tensor<1024xf32>
}

// Two chains meeting in one op (a tree) fuse into one group.
// CHECK-LABEL: func.func @tree
// CHECK:         tg.fused %x, %y
// CHECK:           tg.exp
// CHECK:           tg.neg
// CHECK:           tg.add
// CHECK-NOT:     tg.fused
func.func @tree(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = tg.neg %y : tensor<4xf32> -> tensor<4xf32>
  %2 = tg.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// Must not fire: a single elementwise op is left alone.
// CHECK-LABEL: func.func @single
// CHECK-NOT:     tg.fused
// CHECK:         tg.relu %x
func.func @single(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.relu %x : tensor<4xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// A value with several uses, all in one group, joins it: the kernel computes it
// once and reads it twice (GELU's x * (1 + erf(x / sqrt 2)) of a normalized x).
// CHECK-LABEL: func.func @shared_intermediate
// CHECK-NEXT:    tg.fused %x, %h
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<4xf32>, %[[H:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[E:.*]] = tg.exp %[[X]]
// CHECK-NEXT:      %[[D:.*]] = tg.mul %[[E]], %[[H]]
// CHECK-NEXT:      %[[F:.*]] = tg.erf %[[D]]
// CHECK-NEXT:      %{{.*}} = tg.add %[[E]], %[[F]]
func.func @shared_intermediate(%x: tensor<4xf32>, %h: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = tg.mul %0, %h : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = tg.erf %1 : tensor<4xf32> -> tensor<4xf32>
  %3 = tg.add %0, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// Must not fire: %0's users are in two groups (the relu's and the add's), so
// fusing it into either would keep it in memory and compute it again; and a value
// that a graph output also uses stays a kernel's result of its own.
// CHECK-LABEL: func.func @users_in_two_groups
// CHECK-NEXT:    %[[E:.*]] = tg.exp %x
// CHECK-NEXT:    tg.fused %[[E]]
// CHECK:         tg.fused %[[E]]
// CHECK:         %[[S:.*]] = tg.sqrt %x
// CHECK-NEXT:    tg.add %[[S]], %[[S]]
func.func @users_in_two_groups(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = tg.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = tg.relu %0 : tensor<4xf32> -> tensor<4xf32>
  %2 = tg.neg %1 : tensor<4xf32> -> tensor<4xf32>
  %3 = tg.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = tg.abs %3 : tensor<4xf32> -> tensor<4xf32>
  %5 = tg.sqrt %x : tensor<4xf32> -> tensor<4xf32>
  %6 = tg.add %5, %5 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2, %4, %5, %6 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// Must not fire: exp over 4 elements broadcast into 1000x4 would run 1000 times.
// CHECK-LABEL: func.func @broadcast_intermediate
// CHECK-NOT:     tg.fused
// CHECK:         tg.exp %a
// CHECK:         tg.add
func.func @broadcast_intermediate(%a: tensor<4xf32>, %b: tensor<1000x4xf32>) -> tensor<1000x4xf32> {
  %0 = tg.exp %a : tensor<4xf32> -> tensor<4xf32>
  %1 = tg.add %0, %b : (tensor<4xf32>, tensor<1000x4xf32>) -> tensor<1000x4xf32>
  func.return %1 : tensor<1000x4xf32>
}

// Rule 2, epilogue: relu(x·w + b) is one group; the matmul's only use is the add.
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK-NEXT:    %[[F:.*]] = tg.fused %x, %w, %b : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<2x3xf32>, %[[W:.*]]: tensor<3x4xf32>, %[[B:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %[[MM:.*]] = tg.matmul %[[X]], %[[W]]
// CHECK-NEXT:      %[[A:.*]] = tg.add %[[MM]], %[[B]]
// CHECK-NEXT:      %[[R:.*]] = tg.relu %[[A]]
// CHECK-NEXT:      tg.yield %[[R]] : tensor<2x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[F]] : tensor<2x4xf32>
func.func @matmul_epilogue(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = tg.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = tg.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = tg.relu %1 : tensor<2x4xf32> -> tensor<2x4xf32>
  func.return %2 : tensor<2x4xf32>
}

// Rule 2, the chain stops at a value with two uses: the add is the group's result;
// relu and exp after it fuse by rule 3 only if they could (each is alone here).
// CHECK-LABEL: func.func @matmul_epilogue_stops_at_shared_value
// CHECK:         %[[F:.*]] = tg.fused %x, %w, %b
// CHECK:           tg.matmul
// CHECK-NEXT:      %[[A:.*]] = tg.add
// CHECK-NEXT:      tg.yield %[[A]]
// CHECK:         tg.relu %[[F]]
// CHECK-NEXT:    tg.exp %[[F]]
func.func @matmul_epilogue_stops_at_shared_value(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = tg.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = tg.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = tg.relu %1 : tensor<2x4xf32> -> tensor<2x4xf32>
  %3 = tg.exp %1 : tensor<2x4xf32> -> tensor<2x4xf32>
  func.return %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>
}

// Must not fire: the matmul result has two uses, so it is kept in memory and no
// epilogue joins it; the two elementwise users stay as they are.
// CHECK-LABEL: func.func @matmul_used_twice
// CHECK-NOT:     tg.fused
// CHECK:         %[[MM:.*]] = tg.matmul %x, %w
// CHECK-NEXT:    tg.relu %[[MM]]
// CHECK-NEXT:    tg.exp %[[MM]]
func.func @matmul_used_twice(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = tg.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = tg.relu %0 : tensor<2x4xf32> -> tensor<2x4xf32>
  %2 = tg.exp %0 : tensor<2x4xf32> -> tensor<2x4xf32>
  func.return %1, %2 : tensor<2x4xf32>, tensor<2x4xf32>
}

// Must not fire: an epilogue op that broadcasts the matmul result to a larger shape.
// CHECK-LABEL: func.func @matmul_broadcast_consumer
// CHECK-NOT:     tg.fused
func.func @matmul_broadcast_consumer(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<5x2x4xf32>) -> tensor<5x2x4xf32> {
  %0 = tg.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = tg.add %0, %b : (tensor<2x4xf32>, tensor<5x2x4xf32>) -> tensor<5x2x4xf32>
  func.return %1 : tensor<5x2x4xf32>
}

// Must not fire into the lhs: fuse makes no prologues (under the default schedule a
// prologue would run once per column tile). The lhs tree is an elementwise group
// of its own; the matmul takes its epilogue.
// CHECK-LABEL: func.func @matmul_lhs_prologue
// CHECK:         %[[P:.*]] = tg.fused %x, %s
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[M:.*]] = tg.mul
// CHECK-NEXT:      %[[E:.*]] = tg.exp %[[M]]
// CHECK-NEXT:      tg.yield %[[E]]
// CHECK:         tg.fused %[[P]], %w, %b
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[MM:.*]] = tg.matmul
// CHECK-NEXT:      tg.add %[[MM]]
// CHECK-NEXT:      tg.yield
func.func @matmul_lhs_prologue(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = tg.mul %x, %s : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = tg.exp %0 : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = tg.matmul %1, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %3 = tg.add %2, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %3 : tensor<2x4xf32>
}

// Rule 2, an epilogue DAG: GELU uses h = x·w + b twice, and still one value (the
// last mul) leaves the group, so the whole GELU joins the matmul.
// CHECK-LABEL: func.func @matmul_gelu_epilogue_dag
// CHECK:         %[[F:.*]] = tg.fused %x, %w, %b, %r2, %one, %half
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[MM:.*]] = tg.matmul
// CHECK-NEXT:      %[[H:.*]] = tg.add %[[MM]]
// CHECK-NEXT:      %[[D:.*]] = tg.div %[[H]]
// CHECK-NEXT:      %[[E:.*]] = tg.erf %[[D]]
// CHECK-NEXT:      %[[A:.*]] = tg.add %[[E]]
// CHECK-NEXT:      %[[G:.*]] = tg.mul %[[H]], %[[A]]
// CHECK-NEXT:      %[[Y:.*]] = tg.mul %[[G]]
// CHECK-NEXT:      tg.yield %[[Y]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[F]]
func.func @matmul_gelu_epilogue_dag(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>, %r2: tensor<f32>, %one: tensor<f32>, %half: tensor<f32>) -> tensor<2x4xf32> {
  %0 = tg.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %h = tg.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = tg.div %h, %r2 : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %2 = tg.erf %1 : tensor<2x4xf32> -> tensor<2x4xf32>
  %3 = tg.add %2, %one : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %4 = tg.mul %h, %3 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %5 = tg.mul %4, %half : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  func.return %5 : tensor<2x4xf32>
}

// Rule 2, the DAG falls back to the chain: h is also returned, so the grown group
// would leave two values; the chain stops at h (three uses) and relu + add form
// an elementwise group of their own.
// CHECK-LABEL: func.func @matmul_epilogue_dag_with_two_outside_uses
// CHECK:         %[[F:.*]] = tg.fused %x, %w, %b
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[MM:.*]] = tg.matmul
// CHECK-NEXT:      %[[H:.*]] = tg.add %[[MM]]
// CHECK-NEXT:      tg.yield %[[H]]
// CHECK:         %[[G:.*]] = tg.fused %[[F]]
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tg.relu
// CHECK-NEXT:      tg.add
// CHECK-NEXT:      tg.yield
// CHECK:         func.return %[[G]], %[[F]]
func.func @matmul_epilogue_dag_with_two_outside_uses(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = tg.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %h = tg.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = tg.relu %h : tensor<2x4xf32> -> tensor<2x4xf32>
  %2 = tg.add %1, %h : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %2, %h : tensor<2x4xf32>, tensor<2x4xf32>
}

// Must not fire: a prologue on the rhs would run once per lhs row (M times per
// element); exp stays its own kernel, the matmul has no epilogue to take.
// CHECK-LABEL: func.func @matmul_rhs_prologue
// CHECK-NOT:     tg.fused
// CHECK:         %[[E:.*]] = tg.exp %w
// CHECK-NEXT:    tg.matmul %x, %[[E]]
func.func @matmul_rhs_prologue(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = tg.exp %w : tensor<3x4xf32> -> tensor<3x4xf32>
  %1 = tg.matmul %x, %0 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %1 : tensor<2x4xf32>
}

// Must not fire: the matmul broadcasts the lhs over the batch, so a prologue
// would run once per batch.
// CHECK-LABEL: func.func @matmul_batch_broadcast_lhs
// CHECK-NOT:     tg.fused
func.func @matmul_batch_broadcast_lhs(%x: tensor<2x3xf32>, %w: tensor<5x3x4xf32>) -> tensor<5x2x4xf32> {
  %0 = tg.exp %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = tg.matmul %0, %w : (tensor<2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>
  func.return %1 : tensor<5x2x4xf32>
}

// Rule 2 for conv2d: conv (with its bias), add, relu in one group.
// CHECK-LABEL: func.func @conv_epilogue
// CHECK:         tg.fused %x, %w, %b, %s
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[C:.*]] = tg.conv2d
// CHECK-NEXT:      %[[A:.*]] = tg.add %[[C]]
// CHECK-NEXT:      %[[R:.*]] = tg.relu %[[A]]
// CHECK-NEXT:      tg.yield %[[R]]
func.func @conv_epilogue(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>, %s: tensor<4x1x1xf32>) -> tensor<1x4x3x3xf32> {
  %0 = tg.conv2d %x, %w, %b strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  %1 = tg.add %0, %s : (tensor<1x4x3x3xf32>, tensor<4x1x1xf32>) -> tensor<1x4x3x3xf32>
  %2 = tg.relu %1 : tensor<1x4x3x3xf32> -> tensor<1x4x3x3xf32>
  func.return %2 : tensor<1x4x3x3xf32>
}

// Must not fire: a prologue on a conv2d input would be recomputed for every tap;
// the relu before the conv stays its own kernel (the relu after it fuses).
// CHECK-LABEL: func.func @conv_input_prologue
// CHECK:         %[[R:.*]] = tg.relu %x
// CHECK-NEXT:    tg.fused %[[R]], %w
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tg.conv2d
// CHECK-NEXT:      tg.relu
// CHECK-NEXT:      tg.yield
func.func @conv_input_prologue(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %0 = tg.relu %x : tensor<1x2x5x5xf32> -> tensor<1x2x5x5xf32>
  %1 = tg.conv2d %0, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  %2 = tg.relu %1 : tensor<1x4x3x3xf32> -> tensor<1x4x3x3xf32>
  func.return %2 : tensor<1x4x3x3xf32>
}

// Rule 2 with a mask: Clip's where(y >= 0, y, max(y, 0)) then where(.. <= 6, ..):
// each comparison is only a select's condition, so it joins the epilogue too.
// CHECK-LABEL: func.func @conv_clip_epilogue
// CHECK:         tg.fused %x, %w, %lo, %hi
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[C:.*]] = tg.conv2d
// CHECK-NEXT:      %[[G:.*]] = tg.greater_equal %[[C]]
// CHECK-NEXT:      %[[M:.*]] = tg.max %[[C]]
// CHECK-NEXT:      %[[S:.*]] = tg.select %[[G]], %[[C]], %[[M]]
// CHECK-NEXT:      %[[L:.*]] = tg.less_equal %[[S]]
// CHECK-NEXT:      %[[N:.*]] = tg.min %[[S]]
// CHECK-NEXT:      %[[T:.*]] = tg.select %[[L]], %[[S]], %[[N]]
// CHECK-NEXT:      tg.yield %[[T]]
func.func @conv_clip_epilogue(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> tensor<1x4x3x3xf32> {
  %0 = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  %1 = tg.greater_equal %0, %lo : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xi1>
  %2 = tg.max %0, %lo : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %3 = tg.select %1, %0, %2 : (tensor<1x4x3x3xi1>, tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %4 = tg.less_equal %3, %hi : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xi1>
  %5 = tg.min %3, %hi : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %6 = tg.select %4, %3, %5 : (tensor<1x4x3x3xi1>, tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %6 : tensor<1x4x3x3xf32>
}

// Must not fire: a comparison that is also a graph output is a mask the kernel
// would have to store (a second output of another type): the epilogue DAG falls
// back to the chain, and the conv's result has three uses, so it has none (the
// max and the select make an elementwise chain of their own).
// CHECK-LABEL: func.func @conv_mask_returned
// CHECK:         %[[C:.*]] = tg.conv2d %x, %w
// CHECK-NEXT:    %[[G:.*]] = tg.greater_equal %[[C]], %lo
// CHECK-NEXT:    tg.fused %[[C]], %lo, %[[G]]
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tg.max
// CHECK-NEXT:      tg.select
// CHECK-NEXT:      tg.yield
func.func @conv_mask_returned(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>, %lo: tensor<f32>) -> (tensor<1x4x3x3xf32>, tensor<1x4x3x3xi1>) {
  %0 = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  %1 = tg.greater_equal %0, %lo : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xi1>
  %2 = tg.max %0, %lo : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %3 = tg.select %1, %0, %2 : (tensor<1x4x3x3xi1>, tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %3, %1 : tensor<1x4x3x3xf32>, tensor<1x4x3x3xi1>
}

// Must not fire: a comparison alone after a conv (its mask is the output, of
// another element type than the conv's) is no epilogue.
// CHECK-LABEL: func.func @conv_compare_only
// CHECK:         %[[C:.*]] = tg.conv2d %x, %w
// CHECK-NEXT:    %{{.*}} = tg.greater %[[C]], %lo
func.func @conv_compare_only(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>, %lo: tensor<f32>) -> tensor<1x4x3x3xi1> {
  %0 = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  %1 = tg.greater %0, %lo : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xi1>
  func.return %1 : tensor<1x4x3x3xi1>
}

// Rule 1: softmax written out of tg ops is one row group.
// CHECK-LABEL: func.func @softmax_from_ops
// CHECK-NEXT:    %[[F:.*]] = tg.fused %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      %[[M:.*]] = tg.reduce_max %[[X]] axes = [-1] keepdims
// CHECK-NEXT:      %[[D:.*]] = tg.sub %[[X]], %[[M]]
// CHECK-NEXT:      %[[E:.*]] = tg.exp %[[D]]
// CHECK-NEXT:      %[[S:.*]] = tg.reduce_sum %[[E]] axes = [-1] keepdims
// CHECK-NEXT:      %[[Y:.*]] = tg.div %[[E]], %[[S]]
// CHECK-NEXT:      tg.yield %[[Y]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[F]]
func.func @softmax_from_ops(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = tg.reduce_max %x axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tg.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %e = tg.exp %d : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = tg.reduce_sum %e axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = tg.div %e, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// Rule 1: layer norm is one row group; eps (a constant), gamma and beta are inputs.
// CHECK-LABEL: func.func @layer_norm
// CHECK:         %[[F:.*]] = tg.fused %x, %eps, %g, %b
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      tg.reduce_mean
// CHECK-NEXT:      tg.sub
// CHECK-NEXT:      tg.mul
// CHECK-NEXT:      tg.reduce_mean
// CHECK-NEXT:      tg.add
// CHECK-NEXT:      tg.sqrt
// CHECK-NEXT:      tg.div
// CHECK-NEXT:      tg.mul
// CHECK-NEXT:      tg.add
// CHECK-NEXT:      tg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[F]]
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %m = tg.reduce_mean %x axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tg.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %dd = tg.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = tg.reduce_mean %dd axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %eps = tg.constant dense<1.0e-05> : tensor<f32>
  %ve = tg.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %sd = tg.sqrt %ve : tensor<4x1xf32> -> tensor<4x1xf32>
  %n = tg.div %d, %sd : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %gn = tg.mul %n, %g : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %y = tg.add %gn, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// Rule 1, an intermediate that is also a graph output: the group is not split,
// it gets a second result (e = exp(x - max) is stored by the same kernel).
// CHECK-LABEL: func.func @softmax_intermediate_returned
// CHECK:         %[[FE:.*]], %[[FY:.*]] = tg.fused %x : (tensor<4x8xf32>) -> tensor<4x8xf32>, tensor<4x8xf32> {
// CHECK:           %[[E:.*]] = tg.exp
// CHECK:           %[[Y:.*]] = tg.div
// CHECK-NEXT:      tg.yield %[[E]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK:         func.return %[[FY]], %[[FE]]
func.func @softmax_intermediate_returned(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %m = tg.reduce_max %x axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = tg.sub %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %e = tg.exp %d : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = tg.reduce_sum %e axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = tg.div %e, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %y, %e : tensor<4x8xf32>, tensor<4x8xf32>
}

// Rule 1, a per-row result: sum(exp(x)) over the rows, without keepdims, is a
// group whose result has one value per row.
// CHECK-LABEL: func.func @row_sum_of_exp
// CHECK:         tg.fused %x : (tensor<4x8xf32>) -> tensor<4xf32>
// CHECK:           tg.exp
// CHECK-NEXT:      tg.reduce_sum
func.func @row_sum_of_exp(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %e = tg.exp %x : tensor<4x8xf32> -> tensor<4x8xf32>
  %s = tg.reduce_sum %e axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// Must not fire: a reduction over a non-trailing axis seeds no row group; the
// sub after it stays alone (its reduced operand broadcasts).
// CHECK-LABEL: func.func @reduce_leading_axis
// CHECK-NOT:     tg.fused
func.func @reduce_leading_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = tg.reduce_max %x axes = [0] keepdims : tensor<4x8xf32> -> tensor<1x8xf32>
  %d = tg.sub %x, %m : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  func.return %d : tensor<4x8xf32>
}

// Must not fire: a non-keepdims per-row value would meet the row by NumPy's
// right-aligned broadcasting (s[4] against x[4, 4] indexes s by column), so the
// sub does not join the reduction's group.
// CHECK-LABEL: func.func @per_row_without_keepdims
// CHECK-NOT:     tg.fused
func.func @per_row_without_keepdims(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %s = tg.reduce_sum %x axes = [1] : tensor<4x4xf32> -> tensor<4xf32>
  %d = tg.sub %x, %s : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  func.return %d : tensor<4x4xf32>
}

// Must not fire: two reductions over different rows (trailing axes of different
// tensors) do not share a group; each reduction stays alone here.
// CHECK-LABEL: func.func @different_rows
// CHECK-NOT:     tg.fused
func.func @different_rows(%x: tensor<4x8xf32>) -> tensor<f32> {
  %s = tg.reduce_sum %x axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %t = tg.reduce_sum %s axes = [0] : tensor<4xf32> -> tensor<f32>
  func.return %t : tensor<f32>
}

// Exact GELU, 0.5 x (1 + erf(x / sqrt 2)): erf is elementwise and joins the chain.
// CHECK-LABEL: func.func @gelu_erf
// CHECK:         tg.fused %x
// CHECK:           tg.mul
// CHECK-NEXT:      tg.erf
// CHECK-NEXT:      tg.add
// CHECK-NEXT:      tg.mul
// CHECK-NEXT:      tg.mul
// CHECK-NEXT:      tg.yield
// CHECK-NOT:     tg.fused
func.func @gelu_erf(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = tg.constant dense<0.707106769> : tensor<1xf32>
  %one = tg.constant dense<1.000000e+00> : tensor<1xf32>
  %half = tg.constant dense<5.000000e-01> : tensor<1xf32>
  %0 = tg.mul %x, %r : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %1 = tg.erf %0 : tensor<8xf32> -> tensor<8xf32>
  %2 = tg.add %1, %one : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %3 = tg.mul %x, %half : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %4 = tg.mul %3, %2 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %4 : tensor<8xf32>
}
