// RUN: not qidao-opt %s -p 'convert-tg-to-affine,mark-symbolic-loops' 2>&1 | filecheck %s

// x[127:128] (x[-1] at the capacity) is a view of part of seq: which positions
// exist depends on the call, so it is refused, naming the buffer and the axis.
// CHECK: a view of %x as memref<1x4xf32, strided<[4, 1], offset: 508>> covers part of it (a slice such as x[-1] or x[:k], or a merge with other axes): its axis 0 is the symbolic dimension 'seq'
func.func @main(%x: tensor<128x4xf32>, %symbolic_dims: tensor<1xi64>) -> tensor<1x4xf32> attributes {qd.input_names = ["x", "symbolic_dims"], qd.output_names = ["y"], qd.dims = {seq = [1 : i64, 100 : i64, 128 : i64]}, qd.dim_labels = [["seq", ""], [""]]} {
  %y = tg.slice %x start = [127, 0] stop = [128, 4] step = [1, 1] : tensor<128x4xf32> -> tensor<1x4xf32, strided<[4, 1], offset: 508>>
  %c = tg.contiguous %y : tensor<1x4xf32, strided<[4, 1], offset: 508>> -> tensor<1x4xf32>
  func.return %c : tensor<1x4xf32>
}

