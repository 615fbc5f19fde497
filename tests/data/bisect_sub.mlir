// qidao bisect's CLI test (tests/compiler/test_bisect.py): relu(x - y), in which a
// planted simplify swaps the operands of the subtraction.
builtin.module {
  func.func @main(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {qd.input_names = ["x", "y"], qd.output_names = ["output0"]} {
    %0 = tg.sub %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = tg.relu %0 : tensor<2x3xf32> -> tensor<2x3xf32>
    func.return %1 : tensor<2x3xf32>
  }
}
