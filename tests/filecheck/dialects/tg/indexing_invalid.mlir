// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.concat, tg.slice and tg.gather.

// CHECK: tg.concat: operand #1 tensor<3x4xf32> must have the shape of operand #0 tensor<2x3xf32> in every dimension but axis 1
func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  %c = tg.concat %a, %b axis = 1 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x7xf32>
  func.return
}

// -----

// CHECK: tg.concat: operand #1 tensor<2x3x1xf32> must have the shape of operand #0 tensor<2x3xf32> in every dimension but axis 0
func.func @concat_ranks(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  %c = tg.concat %a, %b axis = 0 : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

// CHECK: tg.concat expects operands of one element type, but operand #1 is tensor<2xf64> and operand #0 is tensor<2xf32>
func.func @concat_dtypes(%a: tensor<2xf32>, %b: tensor<2xf64>) {
  %c = tg.concat %a, %b axis = 0 : (tensor<2xf32>, tensor<2xf64>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: tg.concat: axis 2 is out of range for a tensor of rank 2
func.func @concat_axis(%a: tensor<2x3xf32>) {
  %c = tg.concat %a, %a axis = 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

// CHECK: tg.concat expects tensors of rank >= 1, but operand #0 is tensor<f32>
func.func @concat_scalar(%a: tensor<f32>) {
  %c = tg.concat %a, %a axis = 0 : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  func.return
}

// -----

// CHECK: tg.concat expects at least one operand, got none
func.func @concat_nothing() {
  %c = "tg.concat"() <{axis = 0 : i64}> : () -> tensor<0xf32>
  func.return
}

// -----

// CHECK: tg.concat on (tensor<2x3xf32>, tensor<2x4xf32>) must produce tensor<2x7xf32>, but its result type is tensor<2x8xf32>
func.func @concat_result(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  %c = tg.concat %a, %b axis = 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  func.return
}

// -----

// CHECK: tg.slice: stop must have one value per dimension of the input tensor<2x4xf32> (2), got [4]
func.func @slice_rank(%x: tensor<2x4xf32>) {
  %s = tg.slice %x start = [0, 0] stop = [4] step = [1, 1] : tensor<2x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: tg.slice: step must be >= 1, got -1 in dimension 1 (steps [1, -1])
func.func @slice_negative_step(%x: tensor<2x4xf32>) {
  %s = tg.slice %x start = [0, 3] stop = [2, 0] step = [1, -1] : tensor<2x4xf32> -> tensor<2x3xf32>
  func.return
}

// -----

// CHECK: tg.slice: dimension 1 of the input tensor<2x4xf32> needs 0 <= start <= stop <= 4, got start 1 and stop 5
func.func @slice_past_the_end(%x: tensor<2x4xf32>) {
  %s = tg.slice %x start = [0, 1] stop = [2, 5] step = [1, 1] : tensor<2x4xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: tg.slice: dimension 0 of the input tensor<2x4xf32> needs 0 <= start <= stop <= 2, got start -1 and stop 2
func.func @slice_negative_start(%x: tensor<2x4xf32>) {
  %s = tg.slice %x start = [-1, 0] stop = [2, 4] step = [1, 1] : tensor<2x4xf32> -> tensor<3x4xf32>
  func.return
}

// -----

// CHECK: tg.slice on (tensor<2x4xf32>) must produce tensor<2x2xf32, strided<[4, 2], offset: 1>>, but its result type is tensor<2x2xf32>
func.func @slice_copy_type(%x: tensor<2x4xf32>) {
  %s = tg.slice %x start = [0, 1] stop = [2, 4] step = [1, 2] : tensor<2x4xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// CHECK: tg.gather: index 3 (#1) is out of range for axis 1 of size 3 of the input tensor<2x3xf32> (valid: -3 to 2)
func.func @gather_too_big(%x: tensor<2x3xf32>) {
  %g = tg.gather %x axis = 1 indices = [0, 3] : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// CHECK: tg.gather: index -4 (#0) is out of range for axis 1 of size 3 of the input tensor<2x3xf32> (valid: -3 to 2)
func.func @gather_too_negative(%x: tensor<2x3xf32>) {
  %g = tg.gather %x axis = 1 indices = [-4] : tensor<2x3xf32> -> tensor<2x1xf32>
  func.return
}

// -----

// CHECK: tg.gather: axis -3 is out of range for a tensor of rank 2
func.func @gather_axis(%x: tensor<2x3xf32>) {
  %g = tg.gather %x axis = -3 indices = [0] : tensor<2x3xf32> -> tensor<1x3xf32>
  func.return
}

// -----

// CHECK: tg.gather expects a tensor of rank >= 1, got tensor<f32>
func.func @gather_scalar(%x: tensor<f32>) {
  %g = tg.gather %x axis = 0 indices = [0] : tensor<f32> -> tensor<1xf32>
  func.return
}

// -----

// CHECK: tg.gather on (tensor<2x3xf32>) must produce tensor<2x2xf32>, but its result type is tensor<2x3xf32>
func.func @gather_result(%x: tensor<2x3xf32>) {
  %g = tg.gather %x axis = 1 indices = [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}
