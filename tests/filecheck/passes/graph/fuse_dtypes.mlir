// RUN: qidao-opt %s -p fuse | filecheck %s

// fuse with comparisons, logical ops, tg.select and tg.cast: they are elementwise
// ops like the arithmetic (their bools live in registers), except that a
// matmul/conv2d epilogue and a row group keep one element type.

// A where over comparisons, fused with the float math around it: one kernel.
// CHECK-LABEL: func.func @where_chain
// CHECK:         %[[R:.*]] = tg.fused %x, %zero, %m : (tensor<8xf32>, tensor<f32>, tensor<8xi1>) -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<8xf32>, %[[Z:.*]]: tensor<f32>, %[[M:.*]]: tensor<8xi1>):
// CHECK-NEXT:      %[[POS:.*]] = tg.greater %[[X]], %[[Z]]
// CHECK-NEXT:      %[[KEEP:.*]] = tg.logical_and %[[POS]], %[[M]]
// CHECK-NEXT:      %[[E:.*]] = tg.exp %[[X]]
// CHECK-NEXT:      %[[Y:.*]] = tg.select %[[KEEP]], %[[E]], %[[Z]]
// CHECK-NEXT:      %[[P:.*]] = tg.mul %[[Y]], %[[X]]
// CHECK-NEXT:      tg.yield %[[P]] : tensor<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]] : tensor<8xf32>
func.func @where_chain(%x: tensor<8xf32>, %m: tensor<8xi1>) -> tensor<8xf32> {
  %zero = tg.constant dense<0.0> : tensor<f32>
  %pos = tg.greater %x, %zero : (tensor<8xf32>, tensor<f32>) -> tensor<8xi1>
  %keep = tg.logical_and %pos, %m : (tensor<8xi1>, tensor<8xi1>) -> tensor<8xi1>
  %e = tg.exp %x : tensor<8xf32> -> tensor<8xf32>
  %y = tg.select %keep, %e, %zero : (tensor<8xi1>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %r = tg.mul %y, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}

// Must not fire: a comparison does not join a matmul epilogue (the epilogue keeps
// the matmul's element type); the add before it does.
// CHECK-LABEL: func.func @matmul_then_compare
// CHECK:         %[[S:.*]] = tg.fused %x, %w, %b
// CHECK:           tg.matmul
// CHECK-NEXT:      tg.add
// CHECK-NEXT:      tg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = tg.greater %[[S]], %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xi1>
func.func @matmul_then_compare(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xi1> {
  %mm = tg.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %s = tg.add %mm, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %c = tg.greater %s, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xi1>
  func.return %c : tensor<2x4xi1>
}

// Must not fire: a comparison does not join a row group either.
// CHECK-LABEL: func.func @row_then_compare
// CHECK:         %[[D:.*]] = tg.fused %x
// CHECK:           tg.reduce_max
// CHECK-NEXT:      tg.sub
// CHECK-NEXT:      tg.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %c = tg.equal %[[D]], %x
func.func @row_then_compare(%x: tensor<2x8xf32>) -> tensor<2x8xi1> {
  %m = tg.reduce_max %x axes = [1] keepdims : tensor<2x8xf32> -> tensor<2x1xf32>
  %d = tg.sub %x, %m : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %c = tg.equal %d, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xi1>
  func.return %c : tensor<2x8xi1>
}
