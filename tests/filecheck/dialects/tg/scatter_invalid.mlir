// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.scatter_elements, tg.scatter_nd and tg.gather_nd.

// CHECK: tg.scatter_elements expects i32 or i64 indices, but operand #1 (the indices) is tensor<3x2xf32>
func.func @scatter_float_indices(%x: tensor<3x4xf32>, %i: tensor<3x2xf32>, %u: tensor<3x2xf32>) {
  %r = tg.scatter_elements %x, %i, %u axis = 1 reduction = "none" : (tensor<3x4xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: tg.scatter_elements expects data of rank >= 1, got tensor<f32>
func.func @scatter_scalar(%x: tensor<f32>, %i: tensor<i64>, %u: tensor<f32>) {
  %r = tg.scatter_elements %x, %i, %u axis = 0 reduction = "none" : (tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<f32>
  func.return
}

// -----

// CHECK: tg.scatter_elements: axis 2 is out of range for a tensor of rank 2
func.func @scatter_axis(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>) {
  %r = tg.scatter_elements %x, %i, %u axis = 2 reduction = "none" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: tg.scatter_elements expects indices of the data's rank 2, but the indices are tensor<3xi64>
func.func @scatter_rank(%x: tensor<3x4xf32>, %i: tensor<3xi64>, %u: tensor<3xf32>) {
  %r = tg.scatter_elements %x, %i, %u axis = 0 reduction = "none" : (tensor<3x4xf32>, tensor<3xi64>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: tg.scatter_elements: the indices [3, 5] are larger than the data [3, 4] in dimension 1 (only axis 0 may be larger)
func.func @scatter_larger(%x: tensor<3x4xf32>, %i: tensor<3x5xi64>, %u: tensor<3x5xf32>) {
  %r = tg.scatter_elements %x, %i, %u axis = 0 reduction = "none" : (tensor<3x4xf32>, tensor<3x5xi64>, tensor<3x5xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: tg.scatter_elements expects updates of the indices' shape [3, 2], but the updates are tensor<3x1xf32>
func.func @scatter_updates_shape(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x1xf32>) {
  %r = tg.scatter_elements %x, %i, %u axis = 1 reduction = "none" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x1xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: tg.scatter_elements expects updates of the data's element type f32, but the updates are tensor<3x2xf64>
func.func @scatter_updates_type(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf64>) {
  %r = tg.scatter_elements %x, %i, %u axis = 1 reduction = "none" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf64>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: tg.scatter_elements: reduction must be one of none, add, mul, max, min, got 'mean'
func.func @scatter_mean(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>) {
  %r = tg.scatter_elements %x, %i, %u axis = 1 reduction = "mean" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: tg.scatter_elements: reduction 'add' combines f32, f64 or integer tensors, but the data is tensor<3x4xi1>
func.func @scatter_add_bools(%x: tensor<3x4xi1>, %i: tensor<3x2xi64>, %u: tensor<3x2xi1>) {
  %r = tg.scatter_elements %x, %i, %u axis = 1 reduction = "add" : (tensor<3x4xi1>, tensor<3x2xi64>, tensor<3x2xi1>) -> tensor<3x4xi1>
  func.return
}

// -----

// CHECK: tg.scatter_elements on (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) must produce tensor<3x4xf32>, but its result type is tensor<3x2xf32>
func.func @scatter_result(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>) {
  %r = tg.scatter_elements %x, %i, %u axis = 1 reduction = "none" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

// CHECK: tg.scatter_nd: the indices [2, 3] hold 3-tuples; expected 1 to 2 (the data's rank)
func.func @scatter_nd_tuple(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) {
  %r = tg.scatter_nd %x, %i, %u reduction = "none" : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: tg.scatter_nd expects updates of shape [2, 3] (the indices' [2] then the data's [3]), but the updates are tensor<2x4xf32>
func.func @scatter_nd_updates(%x: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) {
  %r = tg.scatter_nd %x, %i, %u reduction = "none" : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: tg.scatter_nd expects indices of rank >= 1, got tensor<i64>
func.func @scatter_nd_scalar_indices(%x: tensor<4x3xf32>, %i: tensor<i64>, %u: tensor<4x3xf32>) {
  %r = tg.scatter_nd %x, %i, %u reduction = "none" : (tensor<4x3xf32>, tensor<i64>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: tg.scatter_nd: reduction 'mul' combines f32, f64 or integer tensors, but the data is tensor<4x3xf16>
func.func @scatter_nd_f16(%x: tensor<4x3xf16>, %i: tensor<2x1xi64>, %u: tensor<2x3xf16>) {
  %r = tg.scatter_nd %x, %i, %u reduction = "mul" : (tensor<4x3xf16>, tensor<2x1xi64>, tensor<2x3xf16>) -> tensor<4x3xf16>
  func.return
}

// -----

// CHECK: tg.gather_nd: batch_dims 2 must be in [0, 2) for an input [4, 3] and indices [4, 3, 1]
func.func @gather_nd_batch_dims(%x: tensor<4x3xf32>, %i: tensor<4x3x1xi64>) {
  %r = tg.gather_nd %x, %i batch_dims = 2 : (tensor<4x3xf32>, tensor<4x3x1xi64>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: tg.gather_nd: the first 1 (batch) dimensions of the input [4, 3] and the indices [2, 1] differ
func.func @gather_nd_batch_shape(%x: tensor<4x3xf32>, %i: tensor<2x1xi64>) {
  %r = tg.gather_nd %x, %i batch_dims = 1 : (tensor<4x3xf32>, tensor<2x1xi64>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: tg.gather_nd: the indices [2, 3] hold 3-tuples; expected 1 to 2 (the input's rank less batch_dims)
func.func @gather_nd_tuple(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>) {
  %r = tg.gather_nd %x, %i batch_dims = 0 : (tensor<4x3xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: tg.gather_nd expects i32 or i64 indices, but operand #1 (the indices) is tensor<2x1xf32>
func.func @gather_nd_float_indices(%x: tensor<4x3xf32>, %i: tensor<2x1xf32>) {
  %r = tg.gather_nd %x, %i batch_dims = 0 : (tensor<4x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.gather_nd: axis 0 of the input tensor<0x3xf32> is empty, so the result has no entry to read
func.func @gather_nd_empty_axis(%x: tensor<0x3xf32>, %i: tensor<2x1xi64>) {
  %r = tg.gather_nd %x, %i batch_dims = 0 : (tensor<0x3xf32>, tensor<2x1xi64>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.gather_nd on (tensor<4x3xf32>, tensor<2x1xi64>) must produce tensor<2x3xf32>, but its result type is tensor<2xf32>
func.func @gather_nd_result(%x: tensor<4x3xf32>, %i: tensor<2x1xi64>) {
  %r = tg.gather_nd %x, %i batch_dims = 0 : (tensor<4x3xf32>, tensor<2x1xi64>) -> tensor<2xf32>
  func.return
}
