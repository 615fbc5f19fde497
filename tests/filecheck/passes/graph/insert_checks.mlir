// RUN: qidao-opt %s -p insert-checks | filecheck %s
// RUN: not qidao-opt %s -p insert-checks,insert-checks 2>&1 | filecheck %s --check-prefix=TWICE

// Running the pass twice would double the checks: refused, in one line.
// TWICE: insert-checks: @gather has qd.checks already

// The docstring's example: a gather by runtime indices gets two f64 scalar results,
// the largest index and the largest negated one, named and listed in qd.checks.
// CHECK-LABEL: func.func @gather
// CHECK-SAME:    -> (tensor<2xf32>, tensor<f64>, tensor<f64>)
// CHECK-SAME:    qd.output_names = ["y", "check0_max", "check0_neg_min"]
// CHECK-SAME:    qd.checks = [{kind = "index", source = "Gather node 'g'", size = 5 : i64, low = -5 : i64}]
// CHECK-NEXT:    %[[F:.*]] = tg.cast %i : tensor<2xi64> -> tensor<2xf64>
// CHECK-NEXT:    %[[N:.*]] = tg.neg %[[F]] : tensor<2xf64> -> tensor<2xf64>
// CHECK-NEXT:    %[[HI:.*]] = tg.reduce_max %[[F]] axes = [0] : tensor<2xf64> -> tensor<f64>
// CHECK-NEXT:    %[[LO:.*]] = tg.reduce_max %[[N]] axes = [0] : tensor<2xf64> -> tensor<f64>
// CHECK-NEXT:    %y = tg.take %x, %i axis = 0 {qd.source = "Gather node 'g'"}
// CHECK-NEXT:    func.return %y, %[[HI]], %[[LO]] : tensor<2xf32>, tensor<f64>, tensor<f64>
func.func @gather(%x: tensor<5xf32>, %i: tensor<2xi64>) -> tensor<2xf32> attributes {qd.output_names = ["y"]} {
  %y = tg.take %x, %i axis = 0 {qd.source = "Gather node 'g'"} : (tensor<5xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// gather_elements checks its axis (1, of size 4); an op without qd.source is
// described by its operands. A rank-2 index tensor is reduced over both axes.
// CHECK-LABEL: func.func @gather_elements
// CHECK-SAME:    qd.checks = [{kind = "index", source = "tg.gather_elements of (tensor<3x4xf32>, tensor<3x2xi32>) on axis 1", size = 4 : i64, low = -4 : i64}]
// CHECK:         tg.cast %i : tensor<3x2xi32> -> tensor<3x2xf64>
// CHECK:         tg.reduce_max %{{.*}} axes = [0, 1] : tensor<3x2xf64> -> tensor<f64>
// CHECK:         tg.gather_elements
func.func @gather_elements(%x: tensor<3x4xf32>, %i: tensor<3x2xi32>) -> tensor<3x2xf32> {
  %y = tg.gather_elements %x, %i axis = 1 : (tensor<3x4xf32>, tensor<3x2xi32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// A rank-0 index needs no reduction: its value and its negation are the results.
// CHECK-LABEL: func.func @scalar_index
// CHECK-NEXT:    %[[F:.*]] = tg.cast %i : tensor<i64> -> tensor<f64>
// CHECK-NEXT:    %[[N:.*]] = tg.neg %[[F]] : tensor<f64> -> tensor<f64>
// CHECK-NEXT:    tg.take
// CHECK-NEXT:    func.return %{{.*}}, %[[F]], %[[N]] : tensor<4xf32>, tensor<f64>, tensor<f64>
func.func @scalar_index(%x: tensor<3x4xf32>, %i: tensor<i64>) -> tensor<4xf32> {
  %y = tg.take %x, %i axis = 0 : (tensor<3x4xf32>, tensor<i64>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// An integer division counts its zero divisors; two checks are numbered in order.
// CHECK-LABEL: func.func @int_div
// CHECK-SAME:    -> (tensor<3xi32>, tensor<f64>, tensor<f64>)
// CHECK-SAME:    qd.checks = [{kind = "divisor", source = "tg.div of (tensor<3xi32>, tensor<3xi32>)"}, {kind = "divisor", source = "Mod node 'm'"}]
// CHECK-NEXT:    %[[Z:.*]] = tg.constant dense<0> : tensor<i32>
// CHECK-NEXT:    %[[E:.*]] = tg.equal %b, %[[Z]] : (tensor<3xi32>, tensor<i32>) -> tensor<3xi1>
// CHECK-NEXT:    %[[C:.*]] = tg.cast %[[E]] : tensor<3xi1> -> tensor<3xf64>
// CHECK-NEXT:    %[[S:.*]] = tg.reduce_sum %[[C]] axes = [0] : tensor<3xf64> -> tensor<f64>
// CHECK-NEXT:    %q = tg.div %a, %b
// CHECK:         %r = tg.div %q, %a {qd.source = "Mod node 'm'"}
// CHECK:         func.return %r, %[[S]], %{{.*}} : tensor<3xi32>, tensor<f64>, tensor<f64>
func.func @int_div(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {
  %q = tg.div %a, %b : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %r = tg.div %q, %a {qd.source = "Mod node 'm'"} : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return %r : tensor<3xi32>
}

// Must not fire: a float division (IEEE: x / 0 is inf or NaN, as in ONNX Runtime),
// a constant divisor without a zero, constant indices inside the axis, empty
// indices. The functions keep their results.
// CHECK-LABEL: func.func @cannot_fail
// CHECK-SAME:    -> (tensor<3xf32>, tensor<3xi32>, tensor<2xf32>, tensor<0xf32>)
// CHECK-NOT:     qd.checks
// CHECK-NOT:     tg.reduce
// CHECK:         func.return
func.func @cannot_fail(%f: tensor<3xf32>, %a: tensor<3xi32>, %x: tensor<5xf32>, %e: tensor<0xi64>) -> (tensor<3xf32>, tensor<3xi32>, tensor<2xf32>, tensor<0xf32>) {
  %fd = tg.div %f, %f : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %two = tg.constant dense<[2, -1, 7]> : tensor<3xi32>
  %id = tg.div %a, %two : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %ci = tg.constant dense<[4, -5]> : tensor<2xi64>
  %g = tg.take %x, %ci axis = 0 : (tensor<5xf32>, tensor<2xi64>) -> tensor<2xf32>
  %ge = tg.take %x, %e axis = 0 : (tensor<5xf32>, tensor<0xi64>) -> tensor<0xf32>
  func.return %fd, %id, %g, %ge : tensor<3xf32>, tensor<3xi32>, tensor<2xf32>, tensor<0xf32>
}

// Constant indices with one outside the axis keep their check (the graph passes
// fold it to constants; the call raises).
// CHECK-LABEL: func.func @constant_out_of_range
// CHECK-SAME:    qd.checks = [{kind = "index"
func.func @constant_out_of_range(%x: tensor<5xf32>) -> tensor<2xf32> {
  %ci = tg.constant dense<[4, 5]> : tensor<2xi64>
  %g = tg.take %x, %ci axis = 0 : (tensor<5xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %g : tensor<2xf32>
}

// A gather whose source rejects negative indices (PyTorch's embedding) is checked
// against [0, n); constant indices with a negative one then keep their check.
// CHECK-LABEL: func.func @nonnegative
// CHECK-SAME:    qd.checks = [{kind = "index", source = "tg.take of (tensor<5xf32>, tensor<2xi64>) on axis 0", size = 5 : i64, low = 0 : i64}, {kind = "index", {{.*}}, low = 0 : i64}]
func.func @nonnegative(%x: tensor<5xf32>, %i: tensor<2xi64>) -> (tensor<2xf32>, tensor<2xf32>) {
  %g = tg.take %x, %i axis = 0 {qd.nonnegative_indices} : (tensor<5xf32>, tensor<2xi64>) -> tensor<2xf32>
  %ci = tg.constant dense<[4, -1]> : tensor<2xi64>
  %h = tg.take %x, %ci axis = 0 {qd.nonnegative_indices} : (tensor<5xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return %g, %h : tensor<2xf32>, tensor<2xf32>
}
