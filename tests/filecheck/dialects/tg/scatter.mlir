// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.scatter_elements, tg.scatter_nd and tg.gather_nd (scatters and
// the ND gather by a runtime index tensor), in custom form and (second RUN line)
// through the generic form. The indices are an operand of i32 or i64; any data
// element type and layout; every reduction.

// CHECK-LABEL: func.func @scatter_elements
func.func @scatter_elements(%x: tensor<3x4xf32>, %ids: tensor<3x2xi64>, %u: tensor<3x2xf32>, %k: tensor<5x4xi32>, %v: tensor<5x4xf32>, %n: tensor<3x4xi64>, %m: tensor<3x2xi64>, %b: tensor<3x4xi1>, %bu: tensor<3x2xi1>, %t: tensor<4x3xf32, strided<[1, 4]>>) {
  // CHECK: %none = tg.scatter_elements %x, %ids, %u axis = 1 reduction = "none" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %none = tg.scatter_elements %x, %ids, %u axis = 1 reduction = "none" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  // CHECK: %add = tg.scatter_elements %x, %k, %v axis = 0 reduction = "add" : (tensor<3x4xf32>, tensor<5x4xi32>, tensor<5x4xf32>) -> tensor<3x4xf32>
  %add = tg.scatter_elements %x, %k, %v axis = 0 reduction = "add" : (tensor<3x4xf32>, tensor<5x4xi32>, tensor<5x4xf32>) -> tensor<3x4xf32>
  // CHECK: %mul = tg.scatter_elements %x, %ids, %u axis = -1 reduction = "mul" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %mul = tg.scatter_elements %x, %ids, %u axis = -1 reduction = "mul" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  // CHECK: %max = tg.scatter_elements %n, %ids, %m axis = 1 reduction = "max" : (tensor<3x4xi64>, tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x4xi64>
  %max = tg.scatter_elements %n, %ids, %m axis = 1 reduction = "max" : (tensor<3x4xi64>, tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x4xi64>
  // CHECK: %min = tg.scatter_elements %n, %ids, %m axis = 1 reduction = "min" : (tensor<3x4xi64>, tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x4xi64>
  %min = tg.scatter_elements %n, %ids, %m axis = 1 reduction = "min" : (tensor<3x4xi64>, tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x4xi64>
  // CHECK: %bools = tg.scatter_elements %b, %ids, %bu axis = 1 reduction = "none" : (tensor<3x4xi1>, tensor<3x2xi64>, tensor<3x2xi1>) -> tensor<3x4xi1>
  %bools = tg.scatter_elements %b, %ids, %bu axis = 1 reduction = "none" : (tensor<3x4xi1>, tensor<3x2xi64>, tensor<3x2xi1>) -> tensor<3x4xi1>
  // CHECK: %view = tg.scatter_elements %t, %ids, %u axis = 1 reduction = "add" : (tensor<4x3xf32, strided<[1, 4]>>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<4x3xf32>
  %view = tg.scatter_elements %t, %ids, %u axis = 1 reduction = "add" : (tensor<4x3xf32, strided<[1, 4]>>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<4x3xf32>
  func.return
}

// CHECK-LABEL: func.func @scatter_nd
func.func @scatter_nd(%x: tensor<4x3xf32>, %rows: tensor<2x1xi64>, %u: tensor<2x3xf32>, %cells: tensor<5x2xi32>, %w: tensor<5xf32>, %one: tensor<2xi64>, %s: tensor<f32>) {
  // CHECK: %r = tg.scatter_nd %x, %rows, %u reduction = "none" : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %r = tg.scatter_nd %x, %rows, %u reduction = "none" : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  // CHECK: %c = tg.scatter_nd %x, %cells, %w reduction = "add" : (tensor<4x3xf32>, tensor<5x2xi32>, tensor<5xf32>) -> tensor<4x3xf32>
  %c = tg.scatter_nd %x, %cells, %w reduction = "add" : (tensor<4x3xf32>, tensor<5x2xi32>, tensor<5xf32>) -> tensor<4x3xf32>
  // CHECK: %p = tg.scatter_nd %x, %one, %s reduction = "max" : (tensor<4x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<4x3xf32>
  %p = tg.scatter_nd %x, %one, %s reduction = "max" : (tensor<4x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<4x3xf32>
  func.return
}

// CHECK-LABEL: func.func @gather_nd
func.func @gather_nd(%x: tensor<4x3xf32>, %rows: tensor<2x1xi64>, %cells: tensor<5x2xi32>, %b: tensor<2x4x3xi64>, %bi: tensor<2x5x1xi64>) {
  // CHECK: %r = tg.gather_nd %x, %rows batch_dims = 0 : (tensor<4x3xf32>, tensor<2x1xi64>) -> tensor<2x3xf32>
  %r = tg.gather_nd %x, %rows batch_dims = 0 : (tensor<4x3xf32>, tensor<2x1xi64>) -> tensor<2x3xf32>
  // CHECK: %c = tg.gather_nd %x, %cells batch_dims = 0 : (tensor<4x3xf32>, tensor<5x2xi32>) -> tensor<5xf32>
  %c = tg.gather_nd %x, %cells batch_dims = 0 : (tensor<4x3xf32>, tensor<5x2xi32>) -> tensor<5xf32>
  // CHECK: %batched = tg.gather_nd %b, %bi batch_dims = 1 : (tensor<2x4x3xi64>, tensor<2x5x1xi64>) -> tensor<2x5x3xi64>
  %batched = tg.gather_nd %b, %bi batch_dims = 1 : (tensor<2x4x3xi64>, tensor<2x5x1xi64>) -> tensor<2x5x3xi64>
  func.return
}
