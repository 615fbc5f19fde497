// y = relu(relu(x)) + -(-z): the input of the tutorial's first pass.
func.func @main(%x: tensor<1024xf32>, %z: tensor<1024xf32>) -> tensor<1024xf32> {
  %a = tg.relu %x : tensor<1024xf32> -> tensor<1024xf32>
  %b = tg.relu %a : tensor<1024xf32> -> tensor<1024xf32>
  %n = tg.neg %z : tensor<1024xf32> -> tensor<1024xf32>
  %m = tg.neg %n : tensor<1024xf32> -> tensor<1024xf32>
  %y = tg.add %b, %m : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  func.return %y : tensor<1024xf32>
}
