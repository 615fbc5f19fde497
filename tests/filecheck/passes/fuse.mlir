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

// Must not fire: %0 has two users, so fusing would keep it and recompute it.
// CHECK-LABEL: func.func @shared_intermediate
// CHECK-NOT:     tg.fused
// CHECK:         %[[E:.*]] = tg.exp %x
// CHECK:         tg.add %[[E]], %[[E]]
func.func @shared_intermediate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = tg.add %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
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

// Must not fire across a non-elementwise op: matmul is a boundary (issue 3 adds
// epilogue fusion); the add and relu after it still fuse with each other.
// CHECK-LABEL: func.func @matmul_boundary
// CHECK:         %[[MM:.*]] = tg.matmul %x, %w
// CHECK-NEXT:    tg.fused %[[MM]], %b
// CHECK:           tg.add
// CHECK:           tg.relu
func.func @matmul_boundary(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %0 = tg.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = tg.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = tg.relu %1 : tensor<2x4xf32> -> tensor<2x4xf32>
  func.return %2 : tensor<2x4xf32>
}
