// RUN: qidao-opt %s -p 'convert-tg-to-affine,mark-symbolic-loops' | filecheck %s

// x is [seq, 4] (seq in [1, 100], capacity 128). The loops over seq are tagged with
// the dimension and their trip count; a reduction over it is exact; the loops over
// the static axis are not tagged (must not fire); the host records which output
// axes are symbolic.
// CHECK-LABEL: func.func private @main_k0_tanh(
// CHECK-SAME:    qd.sizes = {seq = 128 : i64}
// CHECK:         affine.for %i1 = 0 to 4 {
// CHECK:         } {qd.loop = "i1"}
// CHECK-NEXT:    } {qd.loop = "i0", qd.symbolic = "seq", qd.trip = affine_map<()[s0] -> (s0)>}
// CHECK-LABEL: func.func private @main_k1_reduce_sum(
// CHECK:         } {qd.loop = "i0_init"}
// CHECK:         } {qd.loop = "r0", qd.symbolic = "seq", qd.trip = affine_map<()[s0] -> (s0)>, qd.exact}
// CHECK-LABEL: func.func @main(
// CHECK-SAME:    qd.output_dim_labels = {{\[\["seq", ""\], \[""\]\]}}
func.func @main(%x: tensor<128x4xf32>, %symbolic_dims: tensor<1xi64>) -> (tensor<128x4xf32>, tensor<4xf32>) attributes {qd.input_names = ["x", "symbolic_dims"], qd.output_names = ["y", "s"], qd.dims = {seq = [1 : i64, 100 : i64, 128 : i64]}, qd.dim_labels = [["seq", ""], [""]]} {
  %y = tg.tanh %x : tensor<128x4xf32> -> tensor<128x4xf32>
  %s = tg.reduce_sum %y axes = [0] : tensor<128x4xf32> -> tensor<4xf32>
  func.return %y, %s : tensor<128x4xf32>, tensor<4xf32>
}

// Must not fire: a model without symbolic dimensions keeps its loops untagged.
// CHECK-LABEL: func.func private @other_k0_tanh(
// CHECK-NOT:     qd.symbolic
// CHECK:         func.return
func.func @other(%x: tensor<128x4xf32>) -> tensor<128x4xf32> attributes {qd.input_names = ["x"], qd.output_names = ["y"]} {
  %y = tg.tanh %x : tensor<128x4xf32> -> tensor<128x4xf32>
  func.return %y : tensor<128x4xf32>
}
