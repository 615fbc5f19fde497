// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.custom and tg.custom_yield.

// CHECK: tg.custom 'demo::f': the body yields (tensor<4xf64>) but the op's results are (tensor<4xf32>)
func.func @result_type(%x: tensor<4xf32>) {
  %y = tg.custom "demo::f" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %c = tg.cast %a : tensor<4xf32> -> tensor<4xf64>
    tg.custom_yield %c : tensor<4xf64>
  } grad {
  }
  func.return
}

// -----

// CHECK: tg.custom 'demo::f': the body yields (tensor<4xf32>, tensor<4xf32>) but the op's results are (tensor<4xf32>)
func.func @result_count(%x: tensor<4xf32>) {
  %y = tg.custom "demo::f" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    tg.custom_yield %a, %a : tensor<4xf32>, tensor<4xf32>
  } grad {
  }
  func.return
}

// -----

// CHECK: tg.custom 'demo::f': the body arguments (tensor<3xf32>) must be (tensor<4xf32>)
func.func @body_arguments(%x: tensor<4xf32>) {
  %y = tg.custom "demo::f" %x : (tensor<4xf32>) -> tensor<3xf32> {
  ^bb0(%a: tensor<3xf32>):
    tg.custom_yield %a : tensor<3xf32>
  } grad {
  }
  func.return
}

// -----

// CHECK: tg.custom 'demo::f': the grad arguments (tensor<4xf32>, tensor<4xf32>) must be (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
func.func @grad_arguments(%x: tensor<4xf32>) {
  %y = tg.custom "demo::f" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    tg.custom_yield %a : tensor<4xf32>
  } grad {
  ^bb0(%a: tensor<4xf32>, %da: tensor<4xf32>):
    tg.custom_yield %da : tensor<4xf32>
  }
  func.return
}

// -----

// CHECK: tg.custom 'demo::f': the grad yields (tensor<4xf32>, tensor<4xf32>) but the op's operands (one gradient each) are (tensor<4xf32>)
func.func @grad_count(%x: tensor<4xf32>) {
  %y = tg.custom "demo::f" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    tg.custom_yield %a : tensor<4xf32>
  } grad {
  ^bb0(%a: tensor<4xf32>, %r: tensor<4xf32>, %dr: tensor<4xf32>):
    tg.custom_yield %dr, %dr : tensor<4xf32>, tensor<4xf32>
  }
  func.return
}

// -----

// CHECK: tg.custom 'demo::f': the grad yields (tensor<1xf32>) but the op's operands (one gradient each) are (tensor<4xf32>)
func.func @grad_shape(%x: tensor<4xf32>) {
  %y = tg.custom "demo::f" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    tg.custom_yield %a : tensor<4xf32>
  } grad {
  ^bb0(%a: tensor<4xf32>, %r: tensor<4xf32>, %dr: tensor<4xf32>):
    %s = tg.reduce_sum %dr axes = [0] keepdims : tensor<4xf32> -> tensor<1xf32>
    tg.custom_yield %s : tensor<1xf32>
  }
  func.return
}

// -----

// A region must end with tg.custom_yield; xDSL finds the missing terminator first.
// CHECK: Operation tg.neg terminates block in single-block region but is not a terminator
func.func @grad_without_yield(%x: tensor<4xf32>) {
  %y = tg.custom "demo::f" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    tg.custom_yield %a : tensor<4xf32>
  } grad {
  ^bb0(%a: tensor<4xf32>, %r: tensor<4xf32>, %dr: tensor<4xf32>):
    %n = tg.neg %dr : tensor<4xf32> -> tensor<4xf32>
  }
  func.return
}

// -----

// CHECK: tg.custom 'swish': the name must be 'namespace::name'
func.func @bad_name(%x: tensor<4xf32>) {
  %y = tg.custom "swish" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    tg.custom_yield %a : tensor<4xf32>
  } grad {
  }
  func.return
}

// -----

// CHECK: tg.custom_yield must end a tg.custom region, not one of tg.fused
func.func @yield_in_fused(%x: tensor<4xf32>) {
  %y = tg.fused %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    tg.custom_yield %a : tensor<4xf32>
  }
  func.return
}
