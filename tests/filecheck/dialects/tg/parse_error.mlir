// RUN: qidao-opt %s --parsing-diagnostics | filecheck %s

// A malformed op is reported at its file, line and column, with the source line and
// a caret under the offending token. The unary form is `tg.relu %x : A -> B`; the
// op below lacks the `->`, so the error points at the second type (column 35).

// CHECK:      parse_error.mlir:[[# @LINE + 6]]:35
// CHECK-NEXT:   %r = tg.relu %x : tensor<4xf32> tensor<4xf32>
// CHECK-NEXT:   ^^^^^^
// CHECK-NEXT:   Expected '->'
// CHECK-NOT:  builtin.module
func.func @missing_arrow(%x: tensor<4xf32>) {
  %r = tg.relu %x : tensor<4xf32> tensor<4xf32>
  func.return
}
