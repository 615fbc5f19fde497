// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of tg.nms_keep (which boxes greedy non-maximum suppression keeps,
// per batch and class, in score order), in custom form and through the generic
// form: with and without a score threshold, corner and center boxes.

// CHECK-LABEL: func.func @nms_keep
func.func @nms_keep(%b: tensor<2x6x4xf32>, %s: tensor<2x3x6xf32>, %o: tensor<2x3x6xi64>) {
  // CHECK: %k = tg.nms_keep %b, %s, %o max = 3 iou = 5.000000e-01 score = 1.000000e-01 : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<2x3x6xi64>) -> tensor<2x3x6xi1>
  %k = tg.nms_keep %b, %s, %o max = 3 iou = 5.000000e-01 score = 1.000000e-01 : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<2x3x6xi64>) -> tensor<2x3x6xi1>
  // CHECK: %c = tg.nms_keep %b, %s, %o max = 0 iou = 0.000000e+00 center : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<2x3x6xi64>) -> tensor<2x3x6xi1>
  %c = tg.nms_keep %b, %s, %o max = 0 iou = 0.000000e+00 center : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<2x3x6xi64>) -> tensor<2x3x6xi1>
  func.return
}
