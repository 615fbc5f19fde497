// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s
// RUN: qidao-opt %s -p convert-tg-to-affine,lower-affine,convert-scf-to-cf,convert-to-llvm | filecheck %s --check-prefix=LLVM

// tg.nms_keep lowers to one kernel: per batch and class, the boxes walked in
// score order with the number kept as an iter_arg; each box loaded at the index
// the order holds (memref.load), its score against the threshold, and an inner
// walk over every earlier slot ORing "kept and overlapping" (the later slots
// masked by q < r), then keep = ok and not hit.

// CHECK-LABEL: func.func private @corners_k0_nms_keep(%b: memref<1x5x4xf32> {llvm.noalias}, %s: memref<1x2x5xf32> {llvm.noalias}, %o: memref<1x2x5xi64> {llvm.noalias}, %out: memref<1x2x5xi1> {llvm.noalias})
// CHECK:       affine.for %b_1 = 0 to 1 {
// CHECK-NEXT:    affine.for %c = 0 to 2 {
// CHECK-NEXT:      %{{.*}} = affine.for %r = 0 to 5 iter_args(%[[COUNT:.*]] = %{{.*}}) -> (index) {
// CHECK-NEXT:        %[[HELD:.*]] = affine.load %o[%b_1, %c, %r] : memref<1x2x5xi64>
// CHECK-NEXT:        %[[I:.*]] = arith.index_cast %[[HELD]] : i64 to index
// CHECK-NEXT:        %[[ROOM:.*]] = arith.cmpi slt, %[[COUNT]], %{{.*}} : index
// CHECK-NEXT:        %[[SCORE:.*]] = memref.load %s[%b_1, %c, %[[I]]] : memref<1x2x5xf32>
// CHECK-NEXT:        %{{.*}} = arith.cmpf ogt, %[[SCORE]], %{{.*}} : f32
// CHECK:             %[[HIT:.*]] = affine.for %q = 0 to 5 iter_args(%[[ANY:.*]] = %{{.*}}) -> (i1) {
// CHECK-NEXT:          %[[BEFORE:.*]] = arith.cmpi ult, %q, %r : index
// CHECK-NEXT:          %[[KEPT:.*]] = affine.load %out[%b_1, %c, %q] : memref<1x2x5xi1>
// CHECK:               arith.divf
// CHECK:               arith.cmpf ogt
// CHECK:               arith.ori %[[ANY]]
// CHECK:             affine.store %{{.*}}, %out[%b_1, %c, %r] : memref<1x2x5xi1>
// LLVM-LABEL: llvm.func @corners_k0_nms_keep
// LLVM:       llvm.fdiv
func.func @corners(%b: tensor<1x5x4xf32>, %s: tensor<1x2x5xf32>, %o: tensor<1x2x5xi64>) -> tensor<1x2x5xi1> {
  %k = tg.nms_keep %b, %s, %o max = 2 iou = 5.000000e-01 score = 1.000000e-01 : (tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xi64>) -> tensor<1x2x5xi1>
  func.return %k : tensor<1x2x5xi1>
}

// Center boxes halve the width and height; without a score threshold the score
// is never loaded.
// CHECK-LABEL: func.func private @centers_k0_nms_keep
// CHECK-NOT:     memref.load %s
// CHECK:         arith.divf %{{.*}}, %{{.*}} : f32
func.func @centers(%b: tensor<1x5x4xf32>, %s: tensor<1x2x5xf32>, %o: tensor<1x2x5xi64>) -> tensor<1x2x5xi1> {
  %k = tg.nms_keep %b, %s, %o max = 2 iou = 5.000000e-01 center : (tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xi64>) -> tensor<1x2x5xi1>
  func.return %k : tensor<1x2x5xi1>
}
