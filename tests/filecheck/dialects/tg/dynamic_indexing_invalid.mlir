// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.take and tg.gather_elements.

// CHECK: tg.take expects i32 or i64 indices, but operand #1 (the indices) is tensor<2xf32>
func.func @take_float_indices(%x: tensor<4x3xf32>, %i: tensor<2xf32>) {
  %r = tg.take %x, %i axis = 0 : (tensor<4x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.take expects i32 or i64 indices, but operand #1 (the indices) is tensor<2xi1>
func.func @take_bool_indices(%x: tensor<4x3xf32>, %i: tensor<2xi1>) {
  %r = tg.take %x, %i axis = 0 : (tensor<4x3xf32>, tensor<2xi1>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.take: axis 2 is out of range for a tensor of rank 2
func.func @take_axis(%x: tensor<4x3xf32>, %i: tensor<2xi64>) {
  %r = tg.take %x, %i axis = 2 : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  func.return
}

// -----

// CHECK: tg.take expects an input of rank >= 1, got tensor<f32>
func.func @take_scalar(%x: tensor<f32>, %i: tensor<2xi64>) {
  %r = tg.take %x, %i axis = 0 : (tensor<f32>, tensor<2xi64>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: tg.take on (tensor<4x3xf32>, tensor<2x5xi64>) must produce tensor<2x5x3xf32>, but its result type is tensor<10x3xf32>
func.func @take_result(%x: tensor<4x3xf32>, %i: tensor<2x5xi64>) {
  %r = tg.take %x, %i axis = 0 : (tensor<4x3xf32>, tensor<2x5xi64>) -> tensor<10x3xf32>
  func.return
}

// -----

// CHECK: tg.take: axis 0 of the input tensor<0x3xf32> is empty, so its 6 result element(s) have no entry to read
func.func @take_empty_axis(%x: tensor<0x3xf32>, %i: tensor<2xi64>) {
  %r = tg.take %x, %i axis = 0 : (tensor<0x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.gather_elements expects indices of the input's rank 2, but the indices are tensor<3xi64>
func.func @gather_elements_rank(%x: tensor<3x4xf32>, %i: tensor<3xi64>) {
  %r = tg.gather_elements %x, %i axis = 0 : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3xf32>
  func.return
}

// -----

// CHECK: tg.gather_elements: the indices [3, 5] are larger than the input [3, 4] in dimension 1 (only axis 0 may be larger)
func.func @gather_elements_shape(%x: tensor<3x4xf32>, %i: tensor<3x5xi64>) {
  %r = tg.gather_elements %x, %i axis = 0 : (tensor<3x4xf32>, tensor<3x5xi64>) -> tensor<3x5xf32>
  func.return
}

// -----

// CHECK: tg.gather_elements expects i32 or i64 indices, but operand #1 (the indices) is tensor<3x2xf64>
func.func @gather_elements_float_indices(%x: tensor<3x4xf32>, %i: tensor<3x2xf64>) {
  %r = tg.gather_elements %x, %i axis = 1 : (tensor<3x4xf32>, tensor<3x2xf64>) -> tensor<3x2xf32>
  func.return
}

// -----

// CHECK: tg.gather_elements on (tensor<3x4xf32>, tensor<3x2xi64>) must produce tensor<3x2xf32>, but its result type is tensor<3x2xf64>
func.func @gather_elements_result(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>) {
  %r = tg.gather_elements %x, %i axis = 1 : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf64>
  func.return
}
