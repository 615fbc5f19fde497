// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.reduce_prod: f32, f64 and integers (not f16,
// not bools), distinct in-range axes, the inferred result type.

// CHECK: tg.reduce_prod expects f32, f64 or integer tensors, but operand #0 is tensor<4x8xf16> (f16 goes through tg.cast to f32 and back)
func.func @prod_f16(%x: tensor<4x8xf16>) {
  %r = tg.reduce_prod %x axes = [1] : tensor<4x8xf16> -> tensor<4xf16>
  func.return
}

// -----

// CHECK: tg.reduce_prod expects float or integer tensors, but operand #0 is tensor<4xi1>
func.func @prod_bools(%x: tensor<4xi1>) {
  %r = tg.reduce_prod %x axes = [0] : tensor<4xi1> -> tensor<i1>
  func.return
}

// -----

// CHECK: tg.reduce_prod: axis 2 is out of range for a tensor of rank 2
func.func @prod_axis_out_of_range(%x: tensor<4x8xf32>) {
  %r = tg.reduce_prod %x axes = [2] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.reduce_prod: axes [1, -1] must be a non-empty list of distinct dimensions of tensor<4x8xf32>
func.func @prod_repeated_axis(%x: tensor<4x8xf32>) {
  %r = tg.reduce_prod %x axes = [1, -1] : tensor<4x8xf32> -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.reduce_prod on (tensor<4x8xi32>) must produce tensor<4x1xi32>, but its result type is tensor<4xi32>
func.func @prod_keepdims_shape(%x: tensor<4x8xi32>) {
  %r = tg.reduce_prod %x axes = [1] keepdims : tensor<4x8xi32> -> tensor<4xi32>
  func.return
}
