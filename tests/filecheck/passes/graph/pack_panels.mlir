// RUN: qidao-opt %s -p pack-panels --split-input-file | filecheck %s

// A constant float32 rhs, N a multiple of 32, becomes its column panels
// [N / 32, K, 32] (packed[p, k, c] = B[k, 32 p + c]; the values are checked against
// NumPy in tests/passes/graph/test_pack_panels.py); the unpacked constant goes
// with its last use. 16 x 32 x 64 = 32768 multiply-adds: the least that fires.

// CHECK-LABEL: func.func @packs
// CHECK-NOT:     tensor<32x64xf32>
// CHECK:         %w_panels = tg.constant dense<{{.*}}> : tensor<2x32x32xf32>
// CHECK-NEXT:    %y = tg.matmul %a, %w_panels rhs_layout = "panels" : (tensor<16x32xf32>, tensor<2x32x32xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    func.return %y
func.func @packs(%a: tensor<16x32xf32>) -> tensor<16x64xf32> {
  %w = tg.constant dense<0.5> : tensor<32x64xf32>
  %y = tg.matmul %a, %w : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}

// -----

// A batched lhs by a matrix: the rhs has no batch dimensions, so it packs.

// CHECK-LABEL: func.func @batched_lhs
// CHECK:         tg.matmul %a, %w_panels rhs_layout = "panels" : (tensor<2x8x32xf32>, tensor<2x32x32xf32>) -> tensor<2x8x64xf32>
func.func @batched_lhs(%a: tensor<2x8x32xf32>) -> tensor<2x8x64xf32> {
  %w = tg.constant dense<0.5> : tensor<32x64xf32>
  %y = tg.matmul %a, %w : (tensor<2x8x32xf32>, tensor<32x64xf32>) -> tensor<2x8x64xf32>
  func.return %y : tensor<2x8x64xf32>
}

// -----

// A constant used elsewhere too stays for that use.

// CHECK-LABEL: func.func @shared_weight
// CHECK:         %w = tg.constant
// CHECK:         tg.matmul %a, %w_panels rhs_layout = "panels"
// CHECK:         tg.add %w, %w
func.func @shared_weight(%a: tensor<16x32xf32>) -> (tensor<16x64xf32>, tensor<32x64xf32>) {
  %w = tg.constant dense<0.5> : tensor<32x64xf32>
  %y = tg.matmul %a, %w : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %z = tg.add %w, %w : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  func.return %y, %z : tensor<16x64xf32>, tensor<32x64xf32>
}

// -----

// Must not fire: a rhs computed at run time (an argument).

// CHECK-LABEL: func.func @runtime_rhs
// CHECK-NEXT:    %y = tg.matmul %a, %w : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
func.func @runtime_rhs(%a: tensor<16x32xf32>, %w: tensor<32x64xf32>) -> tensor<16x64xf32> {
  %y = tg.matmul %a, %w : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}

// -----

// N = 48 is not a multiple of 32: two panels, the last one's 16 columns past N
// zero (never read); N stays the result's.

// CHECK-LABEL: func.func @ragged_n
// CHECK:         %y = tg.matmul %a, %w_panels rhs_layout = "panels" : (tensor<32x32xf32>, tensor<2x32x32xf32>) -> tensor<32x48xf32>
func.func @ragged_n(%a: tensor<32x32xf32>) -> tensor<32x48xf32> {
  %w = tg.constant dense<0.5> : tensor<32x48xf32>
  %y = tg.matmul %a, %w : (tensor<32x32xf32>, tensor<32x48xf32>) -> tensor<32x48xf32>
  func.return %y : tensor<32x48xf32>
}

// -----

// Must not fire: N = 16, under one panel.

// CHECK-LABEL: func.func @narrow
// CHECK:         %y = tg.matmul %a, %w : (tensor<128x32xf32>, tensor<32x16xf32>) -> tensor<128x16xf32>
func.func @narrow(%a: tensor<128x32xf32>) -> tensor<128x16xf32> {
  %w = tg.constant dense<0.5> : tensor<32x16xf32>
  %y = tg.matmul %a, %w : (tensor<128x32xf32>, tensor<32x16xf32>) -> tensor<128x16xf32>
  func.return %y : tensor<128x16xf32>
}

// -----

// Must not fire: one row (M = 1) with a ragged N, which the matmul schedule runs
// as a GEMV along B's rows.

// CHECK-LABEL: func.func @one_row
// CHECK:         %y = tg.matmul %a, %w : (tensor<1x1024xf32>, tensor<1024x72xf32>) -> tensor<1x72xf32>
func.func @one_row(%a: tensor<1x1024xf32>) -> tensor<1x72xf32> {
  %w = tg.constant dense<0.5> : tensor<1024x72xf32>
  %y = tg.matmul %a, %w : (tensor<1x1024xf32>, tensor<1024x72xf32>) -> tensor<1x72xf32>
  func.return %y : tensor<1x72xf32>
}

// -----

// Must not fire: 15 x 32 x 64 multiply-adds, under what the default schedule tiles.

// CHECK-LABEL: func.func @too_small
// CHECK:         %y = tg.matmul %a, %w : (tensor<15x32xf32>, tensor<32x64xf32>) -> tensor<15x64xf32>
func.func @too_small(%a: tensor<15x32xf32>) -> tensor<15x64xf32> {
  %w = tg.constant dense<0.5> : tensor<32x64xf32>
  %y = tg.matmul %a, %w : (tensor<15x32xf32>, tensor<32x64xf32>) -> tensor<15x64xf32>
  func.return %y : tensor<15x64xf32>
}

// -----

// Must not fire: float64 (the tile is float32's).

// CHECK-LABEL: func.func @float64
// CHECK:         %y = tg.matmul %a, %w : (tensor<16x32xf64>, tensor<32x64xf64>) -> tensor<16x64xf64>
func.func @float64(%a: tensor<16x32xf64>) -> tensor<16x64xf64> {
  %w = tg.constant dense<0.5> : tensor<32x64xf64>
  %y = tg.matmul %a, %w : (tensor<16x32xf64>, tensor<32x64xf64>) -> tensor<16x64xf64>
  func.return %y : tensor<16x64xf64>
}

// -----

// A batched rhs (a Winograd convolution's transformed filters): each matrix in
// its panels, [2, N / 32, K, 32].

// CHECK-LABEL: func.func @batched_rhs
// CHECK:         %y = tg.matmul %a, %w_panels rhs_layout = "panels" : (tensor<2x16x32xf32>, tensor<2x2x32x32xf32>) -> tensor<2x16x64xf32>
func.func @batched_rhs(%a: tensor<2x16x32xf32>) -> tensor<2x16x64xf32> {
  %w = tg.constant dense<0.5> : tensor<2x32x64xf32>
  %y = tg.matmul %a, %w : (tensor<2x16x32xf32>, tensor<2x32x64xf32>) -> tensor<2x16x64xf32>
  func.return %y : tensor<2x16x64xf32>
}

// -----

// Must not fire: a rhs already packed.

// CHECK-LABEL: func.func @packed
// CHECK:         %y = tg.matmul %a, %w rhs_layout = "panels" : (tensor<16x32xf32>, tensor<2x32x32xf32>) -> tensor<16x64xf32>
func.func @packed(%a: tensor<16x32xf32>) -> tensor<16x64xf32> {
  %w = tg.constant dense<0.5> : tensor<2x32x32xf32>
  %y = tg.matmul %a, %w rhs_layout = "panels" : (tensor<16x32xf32>, tensor<2x32x32xf32>) -> tensor<16x64xf32>
  func.return %y : tensor<16x64xf32>
}
