// RUN: not qidao-opt %s -p 'autodiff{wrt=x}' 2>&1 | filecheck %s

// Every op without a vjp rule on the path from the inputs to output 0, in one
// message, with how many of each (here two winograd_input ops); an op off the
// path (the relu of output 1 is not differentiated) is not listed.
// CHECK: autodiff of @main: no vjp rule for tg.winograd_input (x2); qidao.dialects.tg.grad lists the ops that have one
func.func @main(%x: tensor<2x10x14x8xf32>) -> (tensor<12x36x8xf32>, tensor<2x10x14x8xf32>) attributes {qd.input_names = ["x"], qd.output_names = ["v", "r"]} {
  %a = tg.winograd_input %x tiles = [2, 3] : tensor<2x10x14x8xf32> -> tensor<12x36x8xf32>
  %b = tg.winograd_input %x tiles = [2, 3] : tensor<2x10x14x8xf32> -> tensor<12x36x8xf32>
  %v = tg.add %a, %b : (tensor<12x36x8xf32>, tensor<12x36x8xf32>) -> tensor<12x36x8xf32>
  %r = tg.relu %x : tensor<2x10x14x8xf32> -> tensor<2x10x14x8xf32>
  func.return %v, %r : tensor<12x36x8xf32>, tensor<2x10x14x8xf32>
}

