// RUN: qidao-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of tg.nms_keep.

// CHECK: tg.nms_keep expects boxes of shape [B, N, 4], got tensor<1x6x5xf32>
func.func @nms_box_width(%b: tensor<1x6x5xf32>, %s: tensor<1x1x6xf32>, %o: tensor<1x1x6xi64>) {
  %k = tg.nms_keep %b, %s, %o max = 1 iou = 5.000000e-01 : (tensor<1x6x5xf32>, tensor<1x1x6xf32>, tensor<1x1x6xi64>) -> tensor<1x1x6xi1>
  func.return
}

// -----

// CHECK: tg.nms_keep expects scores of shape [1, C, 6] (the batches and boxes of tensor<1x6x4xf32>), got tensor<1x1x5xf32>
func.func @nms_scores(%b: tensor<1x6x4xf32>, %s: tensor<1x1x5xf32>, %o: tensor<1x1x5xi64>) {
  %k = tg.nms_keep %b, %s, %o max = 1 iou = 5.000000e-01 : (tensor<1x6x4xf32>, tensor<1x1x5xf32>, tensor<1x1x5xi64>) -> tensor<1x1x5xi1>
  func.return
}

// -----

// CHECK: tg.nms_keep expects an order of the scores' shape [1, 1, 6], got tensor<1x2x6xi64>
func.func @nms_order(%b: tensor<1x6x4xf32>, %s: tensor<1x1x6xf32>, %o: tensor<1x2x6xi64>) {
  %k = tg.nms_keep %b, %s, %o max = 1 iou = 5.000000e-01 : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1x2x6xi64>) -> tensor<1x1x6xi1>
  func.return
}

// -----

// CHECK: tg.nms_keep expects f32 boxes and scores, got tensor<1x6x4xf64> and tensor<1x1x6xf32>
func.func @nms_f64(%b: tensor<1x6x4xf64>, %s: tensor<1x1x6xf32>, %o: tensor<1x1x6xi64>) {
  %k = tg.nms_keep %b, %s, %o max = 1 iou = 5.000000e-01 : (tensor<1x6x4xf64>, tensor<1x1x6xf32>, tensor<1x1x6xi64>) -> tensor<1x1x6xi1>
  func.return
}

// -----

// CHECK: tg.nms_keep expects i64 order, got tensor<1x1x6xi32>
func.func @nms_order_type(%b: tensor<1x6x4xf32>, %s: tensor<1x1x6xf32>, %o: tensor<1x1x6xi32>) {
  %k = tg.nms_keep %b, %s, %o max = 1 iou = 5.000000e-01 : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1x1x6xi32>) -> tensor<1x1x6xi1>
  func.return
}

// -----

// CHECK: tg.nms_keep: max = -1 must be >= 0
func.func @nms_negative_max(%b: tensor<1x6x4xf32>, %s: tensor<1x1x6xf32>, %o: tensor<1x1x6xi64>) {
  %k = tg.nms_keep %b, %s, %o max = -1 iou = 5.000000e-01 : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1x1x6xi64>) -> tensor<1x1x6xi1>
  func.return
}

// -----

// CHECK: tg.nms_keep on (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1x1x6xi64>) must produce tensor<1x1x6xi1>, but its result type is tensor<1x1x6xi64>
func.func @nms_result(%b: tensor<1x6x4xf32>, %s: tensor<1x1x6xf32>, %o: tensor<1x1x6xi64>) {
  %k = tg.nms_keep %b, %s, %o max = 1 iou = 5.000000e-01 : (tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1x1x6xi64>) -> tensor<1x1x6xi64>
  func.return
}
