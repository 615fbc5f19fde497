// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.winograd_input and tg.winograd_output, for
// F(4x4, 3x3) and (size = 2) F(2x2, 3x3).

// CHECK: tg.winograd_input expects a rank-4 NHWC input, got [10, 10, 8]
func.func @input_rank(%x: tensor<10x10x8xf32>) {
  %v = tg.winograd_input %x tiles = [2, 2] : tensor<10x10x8xf32> -> tensor<4x36x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_input: tiles [3, 2] need an input of at least 14x10 pixels (4 per tile + 2), got 10x10
func.func @too_many_tiles(%x: tensor<1x10x10x8xf32>) {
  %v = tg.winograd_input %x tiles = [3, 2] : tensor<1x10x10x8xf32> -> tensor<6x36x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_input: tiles [TH, TW] must have 2 values, got [2]
func.func @tiles_length(%x: tensor<1x10x10x8xf32>) {
  %v = tg.winograd_input %x tiles = [2] : tensor<1x10x10x8xf32> -> tensor<4x36x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_input on (tensor<1x10x10x8xf32>) must produce tensor<4x36x8xf32>, but its result type is tensor<36x4x8xf32>
func.func @input_result(%x: tensor<1x10x10x8xf32>) {
  %v = tg.winograd_input %x tiles = [2, 2] : tensor<1x10x10x8xf32> -> tensor<36x4x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_input expects float tensors, but operand #0 is tensor<1x10x10x8xi32>
func.func @input_integer(%x: tensor<1x10x10x8xi32>) {
  %v = tg.winograd_input %x tiles = [2, 2] : tensor<1x10x10x8xi32> -> tensor<4x36x8xi32>
  func.return
}

// -----

// CHECK: tg.winograd_output expects a [36, tiles, F] input for F(4x4, 3x3), got [16, 4, 8]
func.func @output_points(%m: tensor<16x4x8xf32>) {
  %y = tg.winograd_output %m tiles = [1, 2, 2] : (tensor<16x4x8xf32>) -> tensor<1x8x8x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_output: tiles [1, 2, 3] make 6 tiles, but the input [36, 4, 8] has 4
func.func @output_tiles(%m: tensor<36x4x8xf32>) {
  %y = tg.winograd_output %m tiles = [1, 2, 3] : (tensor<36x4x8xf32>) -> tensor<1x8x12x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_output: bias must have shape [8] (one per output channel), got [4]
func.func @output_bias(%m: tensor<36x4x8xf32>, %b: tensor<4xf32>) {
  %y = tg.winograd_output %m, %b tiles = [1, 2, 2] : (tensor<36x4x8xf32>, tensor<4xf32>) -> tensor<1x8x8x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_output expects operands of one element type, got (tensor<36x4x8xf32>, tensor<8xf64>)
func.func @output_mixed(%m: tensor<36x4x8xf32>, %b: tensor<8xf64>) {
  %y = tg.winograd_output %m, %b tiles = [1, 2, 2] : (tensor<36x4x8xf32>, tensor<8xf64>) -> tensor<1x8x8x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_output on (tensor<36x4x8xf32>) must produce tensor<1x8x8x8xf32>, but its result type is tensor<1x7x7x8xf32>
func.func @output_result(%m: tensor<36x4x8xf32>) {
  %y = tg.winograd_output %m tiles = [1, 2, 2] : (tensor<36x4x8xf32>) -> tensor<1x7x7x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_input: size must be 2 (F(2x2, 3x3)) or absent (F(4x4, 3x3)), got 3
func.func @input_size(%x: tensor<1x10x10x8xf32>) {
  %v = tg.winograd_input %x tiles = [2, 2] size = 3 : tensor<1x10x10x8xf32> -> tensor<4x25x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_input: size must be 2 (F(2x2, 3x3)) or absent (F(4x4, 3x3)), got 4
func.func @input_size_default_spelled(%x: tensor<1x10x10x8xf32>) {
  %v = tg.winograd_input %x tiles = [2, 2] size = 4 : tensor<1x10x10x8xf32> -> tensor<4x36x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_input: tiles [5, 4] need an input of at least 12x10 pixels (2 per tile + 2), got 10x10
func.func @too_many_small_tiles(%x: tensor<1x10x10x8xf32>) {
  %v = tg.winograd_input %x tiles = [5, 4] size = 2 : tensor<1x10x10x8xf32> -> tensor<20x16x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_input on (tensor<1x10x10x8xf32>) must produce tensor<16x16x8xf32>, but its result type is tensor<16x36x8xf32>
func.func @small_tiles_result(%x: tensor<1x10x10x8xf32>) {
  %v = tg.winograd_input %x tiles = [4, 4] size = 2 : tensor<1x10x10x8xf32> -> tensor<16x36x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_output: size must be 2 (F(2x2, 3x3)) or absent (F(4x4, 3x3)), got 6
func.func @output_size(%m: tensor<64x4x8xf32>) {
  %y = tg.winograd_output %m tiles = [1, 2, 2] size = 6 : (tensor<64x4x8xf32>) -> tensor<1x12x12x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_output expects a [16, tiles, F] input for F(2x2, 3x3), got [36, 4, 8]
func.func @output_small_points(%m: tensor<36x4x8xf32>) {
  %y = tg.winograd_output %m tiles = [1, 2, 2] size = 2 : (tensor<36x4x8xf32>) -> tensor<1x4x4x8xf32>
  func.return
}

// -----

// CHECK: tg.winograd_output on (tensor<16x4x8xf32>) must produce tensor<1x4x4x8xf32>, but its result type is tensor<1x8x8x8xf32>
func.func @output_small_result(%m: tensor<16x4x8xf32>) {
  %y = tg.winograd_output %m tiles = [1, 2, 2] size = 2 : (tensor<16x4x8xf32>) -> tensor<1x8x8x8xf32>
  func.return
}
