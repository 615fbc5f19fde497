// RUN: qidao-opt %s -p 'fuse{integer_epilogues=true}' | filecheck %s
// RUN: qidao-opt %s -p fuse | filecheck %s --check-prefix=OFF

// fuse with integer_epilogues (the pipeline's vnni): a tg.matmul_integer heads a
// group whose epilogue may change the element type.
// Without the option (the CUDA target) the int8 product stays a kernel of its
// own and its epilogue is an elementwise group (rule 3).
// OFF-LABEL: func.func @requantized_product
// OFF:         %p = tg.matmul_integer
// OFF-NEXT:    %q = tg.fused %res, %s, %p, %hi

// An int8 product's epilogue may change the element type (its kernel sums in an
// int32 buffer of its own): the requantization to ui8 joins it whole, and so does
// the side input's chain (the residual, cast and scaled, used only here), placed
// after the product, which comes first and names the kernel's kind.

// CHECK-LABEL: func.func @requantized_product
// CHECK:         %q = tg.fused %a, %w, %res, %s, %hi
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %p = tg.matmul_integer
// CHECK-NEXT:      %c = tg.cast %res_1 : tensor<6x4xui8> -> tensor<6x4xf64>
// CHECK-NEXT:      %d = tg.mul %c, %s_1
// CHECK-NEXT:      %f = tg.cast %p : tensor<6x4xi32> -> tensor<6x4xf64>
// CHECK-NEXT:      %y = tg.add %f, %d
// CHECK-NEXT:      %m = tg.min %y, %hi_1
// CHECK-NEXT:      %q_1 = tg.cast %m : tensor<6x4xf64> -> tensor<6x4xui8>
// CHECK-NEXT:      tg.yield %q_1 : tensor<6x4xui8>
func.func @requantized_product(%a: tensor<6x8xui8>, %w: tensor<8x4xi8>, %res: tensor<6x4xui8>, %s: tensor<f64>, %hi: tensor<f64>) -> tensor<6x4xui8> {
  %c = tg.cast %res : tensor<6x4xui8> -> tensor<6x4xf64>
  %d = tg.mul %c, %s : (tensor<6x4xf64>, tensor<f64>) -> tensor<6x4xf64>
  %p = tg.matmul_integer %a, %w : (tensor<6x8xui8>, tensor<8x4xi8>) -> tensor<6x4xi32>
  %f = tg.cast %p : tensor<6x4xi32> -> tensor<6x4xf64>
  %y = tg.add %f, %d : (tensor<6x4xf64>, tensor<6x4xf64>) -> tensor<6x4xf64>
  %m = tg.min %y, %hi : (tensor<6x4xf64>, tensor<f64>) -> tensor<6x4xf64>
  %q = tg.cast %m : tensor<6x4xf64> -> tensor<6x4xui8>
  func.return %q : tensor<6x4xui8>
}


// Must not join: a float matmul's epilogue keeps its element type (it finishes in
// the output's buffer), so the cast to f64 and what follows stay outside; and a
// side input of a float matmul's epilogue stays its own kernel.

// CHECK-LABEL: func.func @float_product_keeps_type
// CHECK:         %e = tg.fused %x, %w, %b
// CHECK:           tg.yield %e_1 : tensor<2x4xf32>
// CHECK:         %g = tg.cast %e : tensor<2x4xf32> -> tensor<2x4xf64>
func.func @float_product_keeps_type(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xf64> {
  %m = tg.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %e = tg.add %m, %b : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %g = tg.cast %e : tensor<2x4xf32> -> tensor<2x4xf64>
  func.return %g : tensor<2x4xf64>
}
