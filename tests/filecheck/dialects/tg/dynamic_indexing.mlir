// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.take and tg.gather_elements (gathers by a runtime index tensor),
// in custom form and (second RUN line) through the generic form. The indices are an
// operand of i32 or i64; any data element type and layout.

// CHECK-LABEL: func.func @take
func.func @take(%w: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %i: tensor<i32>, %j: tensor<5xi32>, %t: tensor<3x2xf32, strided<[1, 3]>>, %n: tensor<6xi64>) {
  // CHECK: %e = tg.take %w, %ids axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %e = tg.take %w, %ids axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  // CHECK: %col = tg.take %w, %i axis = 1 : (tensor<10x4xf32>, tensor<i32>) -> tensor<10xf32>
  %col = tg.take %w, %i axis = 1 : (tensor<10x4xf32>, tensor<i32>) -> tensor<10xf32>
  // CHECK: %last = tg.take %w, %j axis = -1 : (tensor<10x4xf32>, tensor<5xi32>) -> tensor<10x5xf32>
  %last = tg.take %w, %j axis = -1 : (tensor<10x4xf32>, tensor<5xi32>) -> tensor<10x5xf32>
  // CHECK: %view = tg.take %t, %j axis = 0 : (tensor<3x2xf32, strided<[1, 3]>>, tensor<5xi32>) -> tensor<5x2xf32>
  %view = tg.take %t, %j axis = 0 : (tensor<3x2xf32, strided<[1, 3]>>, tensor<5xi32>) -> tensor<5x2xf32>
  // CHECK: %ints = tg.take %n, %ids axis = 0 : (tensor<6xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %ints = tg.take %n, %ids axis = 0 : (tensor<6xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  func.return
}

// CHECK-LABEL: func.func @gather_elements
func.func @gather_elements(%x: tensor<3x4xf32>, %ids: tensor<3x2xi64>, %k: tensor<2x4xi32>, %b: tensor<3x4xi1>) {
  // CHECK: %row = tg.gather_elements %x, %ids axis = 1 : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  %row = tg.gather_elements %x, %ids axis = 1 : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  // CHECK: %col = tg.gather_elements %x, %k axis = -2 : (tensor<3x4xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
  %col = tg.gather_elements %x, %k axis = -2 : (tensor<3x4xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
  // CHECK: %small = tg.gather_elements %x, %ids axis = 0 : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  %small = tg.gather_elements %x, %ids axis = 0 : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  // CHECK: %bools = tg.gather_elements %b, %ids axis = 1 : (tensor<3x4xi1>, tensor<3x2xi64>) -> tensor<3x2xi1>
  %bools = tg.gather_elements %b, %ids axis = 1 : (tensor<3x4xi1>, tensor<3x2xi64>) -> tensor<3x2xi1>
  func.return
}
