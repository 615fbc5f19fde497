// RUN: not qidao-opt %s -p 'convert-tg-to-affine,mark-symbolic-loops' 2>&1 | filecheck %s

// A mean over seq divides by the capacity, not the call's size: refused.
// CHECK: kernel @main_k0_reduce_mean: tg.reduce_mean over the symbolic dimension 'seq' divides by its size, which is only known at run time
func.func @main(%x: tensor<128x4xf32>, %symbolic_dims: tensor<1xi64>) -> tensor<4xf32> attributes {qd.input_names = ["x", "symbolic_dims"], qd.output_names = ["m"], qd.dims = {seq = [1 : i64, 100 : i64, 128 : i64]}, qd.dim_labels = [["seq", ""], [""]]} {
  %m = tg.reduce_mean %x axes = [0] : tensor<128x4xf32> -> tensor<4xf32>
  func.return %m : tensor<4xf32>
}
