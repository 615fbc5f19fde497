// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.concat, tg.slice and tg.gather, in custom form and (second RUN
// line) through the generic form. A slice is a view: its type carries the strides
// times the steps and the offset of the start; an empty slice is row-major.

// CHECK-LABEL: func.func @concat
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>, %t: tensor<3x2xf32, strided<[1, 3]>>, %i: tensor<2xi64>) {
  // CHECK: %c = tg.concat %a, %b axis = 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
  %c = tg.concat %a, %b axis = 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
  // CHECK: %n = tg.concat %a, %a, %a axis = -2 : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
  %n = tg.concat %a, %a, %a axis = -2 : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
  // CHECK: %s = tg.concat %t, %t axis = 0 : (tensor<3x2xf32, strided<[1, 3]>>, tensor<3x2xf32, strided<[1, 3]>>) -> tensor<6x2xf32>
  %s = tg.concat %t, %t axis = 0 : (tensor<3x2xf32, strided<[1, 3]>>, tensor<3x2xf32, strided<[1, 3]>>) -> tensor<6x2xf32>
  // CHECK: %one = tg.concat %i axis = 0 : (tensor<2xi64>) -> tensor<2xi64>
  %one = tg.concat %i axis = 0 : (tensor<2xi64>) -> tensor<2xi64>
  func.return
}

// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<2x4xf32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %s = tg.slice %x start = [0, 1] stop = [2, 4] step = [1, 2] : tensor<2x4xf32> -> tensor<2x2xf32, strided<[4, 2], offset: 1>>
  %s = tg.slice %x start = [0, 1] stop = [2, 4] step = [1, 2] : tensor<2x4xf32> -> tensor<2x2xf32, strided<[4, 2], offset: 1>>
  // CHECK: %rows = tg.slice %x start = [0, 0] stop = [1, 4] step = [1, 1] : tensor<2x4xf32> -> tensor<1x4xf32>
  %rows = tg.slice %x start = [0, 0] stop = [1, 4] step = [1, 1] : tensor<2x4xf32> -> tensor<1x4xf32>
  // CHECK: %view = tg.slice %s start = [1, 1] stop = [2, 2] step = [1, 1] : tensor<2x2xf32, strided<[4, 2], offset: 1>> -> tensor<1x1xf32, strided<[4, 2], offset: 7>>
  %view = tg.slice %s start = [1, 1] stop = [2, 2] step = [1, 1] : tensor<2x2xf32, strided<[4, 2], offset: 1>> -> tensor<1x1xf32, strided<[4, 2], offset: 7>>
  // CHECK: %tr = tg.slice %t start = [1, 0] stop = [3, 2] step = [1, 1] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<2x2xf32, strided<[1, 3], offset: 1>>
  %tr = tg.slice %t start = [1, 0] stop = [3, 2] step = [1, 1] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<2x2xf32, strided<[1, 3], offset: 1>>
  // CHECK: %empty = tg.slice %x start = [0, 3] stop = [2, 3] step = [1, 1] : tensor<2x4xf32> -> tensor<2x0xf32>
  %empty = tg.slice %x start = [0, 3] stop = [2, 3] step = [1, 1] : tensor<2x4xf32> -> tensor<2x0xf32>
  func.return
}

// CHECK-LABEL: func.func @gather
func.func @gather(%x: tensor<2x3xf32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %g = tg.gather %x axis = 1 indices = [2, 0, -1] : tensor<2x3xf32> -> tensor<2x3xf32>
  %g = tg.gather %x axis = 1 indices = [2, 0, -1] : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %rep = tg.gather %t axis = 0 indices = [1, 1, 1, 1] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<4x2xf32>
  %rep = tg.gather %t axis = 0 indices = [1, 1, 1, 1] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<4x2xf32>
  // CHECK: %none = tg.gather %x axis = -1 indices = [] : tensor<2x3xf32> -> tensor<2x0xf32>
  %none = tg.gather %x axis = -1 indices = [] : tensor<2x3xf32> -> tensor<2x0xf32>
  func.return
}
