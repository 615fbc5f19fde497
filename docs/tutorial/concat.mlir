// y = concat([x, transpose(w)], axis = 1): the input of the tutorial's kernel lowering.
func.func @main(%x: tensor<2x3xf32>, %w: tensor<4x2xf32>) -> tensor<2x7xf32> {
  %t = tg.transpose %w perm = [1, 0] : tensor<4x2xf32> -> tensor<2x4xf32, strided<[1, 2]>>
  %y = tg.concat %x, %t axis = 1 : (tensor<2x3xf32>, tensor<2x4xf32, strided<[1, 2]>>) -> tensor<2x7xf32>
  func.return %y : tensor<2x7xf32>
}
