// RUN: qidao-opt %s | qidao-opt | filecheck %s
// RUN: qidao-opt %s --print-op-generic | qidao-opt | filecheck %s

// Round trip of every tg op, in custom form and (second RUN line) through the
// generic form. Strided views spell their layout in the tensor type; a row-major
// layout never does.

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<2x2xf32>, tensor<2x3xf32>, tensor<3xi32>, tensor<f64>) {
  // CHECK: %dense = tg.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %dense = tg.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  // CHECK: %splat = tg.constant dense<5.000000e-01> : tensor<2x3xf32>
  %splat = tg.constant dense<0.5> : tensor<2x3xf32>
  // CHECK: %ints = tg.constant dense<[1, 2, 3]> : tensor<3xi32>
  %ints = tg.constant dense<[1, 2, 3]> : tensor<3xi32>
  // CHECK: %scalar = tg.constant dense<2.500000e+00> : tensor<f64>
  %scalar = tg.constant dense<2.5> : tensor<f64>
  func.return %dense, %splat, %ints, %scalar : tensor<2x2xf32>, tensor<2x3xf32>, tensor<3xi32>, tensor<f64>
}

// CHECK-LABEL: func.func @binary
func.func @binary(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>, %b: tensor<3xf32>, %col: tensor<4x1xf32>, %s: tensor<f32>, %t: tensor<4x3xf32, strided<[1, 4]>>, %d: tensor<4xf64>) {
  // CHECK: %add = tg.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %add = tg.add %x, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // CHECK: %sub = tg.sub %x, %y : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %sub = tg.sub %x, %y : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  // CHECK: %mul = tg.mul %col, %b : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %mul = tg.mul %col, %b : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // CHECK: %div = tg.div %x, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %div = tg.div %x, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  // CHECK: %max = tg.max %t, %x : (tensor<4x3xf32, strided<[1, 4]>>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %max = tg.max %t, %x : (tensor<4x3xf32, strided<[1, 4]>>, tensor<4x3xf32>) -> tensor<4x3xf32>
  // CHECK: %min = tg.min %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %min = tg.min %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // CHECK: %add64 = tg.add %d, %d : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %add64 = tg.add %d, %d : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return
}

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4xf32>, %t: tensor<3x2xf32, strided<[1, 3]>>, %s: tensor<f32>) {
  // CHECK: %neg = tg.neg %x : tensor<4xf32> -> tensor<4xf32>
  %neg = tg.neg %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %exp = tg.exp %x : tensor<4xf32> -> tensor<4xf32>
  %exp = tg.exp %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %log = tg.log %x : tensor<4xf32> -> tensor<4xf32>
  %log = tg.log %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %sqrt = tg.sqrt %s : tensor<f32> -> tensor<f32>
  %sqrt = tg.sqrt %s : tensor<f32> -> tensor<f32>
  // CHECK: %tanh = tg.tanh %x : tensor<4xf32> -> tensor<4xf32>
  %tanh = tg.tanh %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %sin = tg.sin %x : tensor<4xf32> -> tensor<4xf32>
  %sin = tg.sin %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %cos = tg.cos %x : tensor<4xf32> -> tensor<4xf32>
  %cos = tg.cos %x : tensor<4xf32> -> tensor<4xf32>
  // CHECK: %sigmoid = tg.sigmoid %x : tensor<4xf32> -> tensor<4xf32>
  %sigmoid = tg.sigmoid %x : tensor<4xf32> -> tensor<4xf32>
  // A strided operand gives a fresh row-major result.
  // CHECK: %relu = tg.relu %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %relu = tg.relu %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return
}

// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<2x3xf32>, %o: tensor<2x3xf32, strided<[3, 1], offset: 4>>, %x3: tensor<2x3x4xf32>, %s: tensor<f32>) {
  // CHECK: %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  // Transposing back gives the row-major layout, which is never spelled out.
  // CHECK: %back = tg.transpose %t perm = [1, 0] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<2x3xf32>
  %back = tg.transpose %t perm = [1, 0] : tensor<3x2xf32, strided<[1, 3]>> -> tensor<2x3xf32>
  // The offset rides along.
  // CHECK: %offset = tg.transpose %o perm = [1, 0] : tensor<2x3xf32, strided<[3, 1], offset: 4>> -> tensor<3x2xf32, strided<[1, 3], offset: 4>>
  %offset = tg.transpose %o perm = [1, 0] : tensor<2x3xf32, strided<[3, 1], offset: 4>> -> tensor<3x2xf32, strided<[1, 3], offset: 4>>
  // CHECK: %rot = tg.transpose %x3 perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32, strided<[1, 12, 4]>>
  %rot = tg.transpose %x3 perm = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32, strided<[1, 12, 4]>>
  // CHECK: %scalar = tg.transpose %s perm = [] : tensor<f32> -> tensor<f32>
  %scalar = tg.transpose %s perm = [] : tensor<f32> -> tensor<f32>
  func.return
}

// CHECK-LABEL: func.func @view
func.func @view(%x: tensor<2x6xf32>, %one: tensor<1x1xf32>, %t: tensor<3x2xf32, strided<[1, 3]>>, %o: tensor<2x3xf32, strided<[3, 1], offset: 4>>) {
  // CHECK: %v = tg.view %x : tensor<2x6xf32> -> tensor<3x4xf32>
  %v = tg.view %x : tensor<2x6xf32> -> tensor<3x4xf32>
  // CHECK: %flat = tg.view %x : tensor<2x6xf32> -> tensor<12xf32>
  %flat = tg.view %x : tensor<2x6xf32> -> tensor<12xf32>
  // CHECK: %unit = tg.view %x : tensor<2x6xf32> -> tensor<2x1x6xf32>
  %unit = tg.view %x : tensor<2x6xf32> -> tensor<2x1x6xf32>
  // CHECK: %scalar = tg.view %one : tensor<1x1xf32> -> tensor<f32>
  %scalar = tg.view %one : tensor<1x1xf32> -> tensor<f32>
  // A transposed tensor can still gain unit dimensions without a copy.
  // CHECK: %unsq = tg.view %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x1x2xf32, strided<[1, 6, 3]>>
  %unsq = tg.view %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x1x2xf32, strided<[1, 6, 3]>>
  // CHECK: %voff = tg.view %o : tensor<2x3xf32, strided<[3, 1], offset: 4>> -> tensor<6xf32, strided<[1], offset: 4>>
  %voff = tg.view %o : tensor<2x3xf32, strided<[3, 1], offset: 4>> -> tensor<6xf32, strided<[1], offset: 4>>
  func.return
}

// CHECK-LABEL: func.func @reshape
func.func @reshape(%x: tensor<2x6xf32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // A row-major input: the reshape is a view.
  // CHECK: %r = tg.reshape %x : tensor<2x6xf32> -> tensor<4x3xf32>
  %r = tg.reshape %x : tensor<2x6xf32> -> tensor<4x3xf32>
  // Flattening a transposed tensor has no view: the result is a row-major copy.
  // CHECK: %copy = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<6xf32>
  %copy = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<6xf32>
  // Adding a unit dimension to it still is a view.
  // CHECK: %unsq = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<1x3x2xf32, strided<[3, 1, 3]>>
  %unsq = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<1x3x2xf32, strided<[3, 1, 3]>>
  func.return
}

// CHECK-LABEL: func.func @contiguous
func.func @contiguous(%x: tensor<2x3xf32>, %t: tensor<3x2xf32, strided<[1, 3]>>) {
  // CHECK: %c = tg.contiguous %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  %c = tg.contiguous %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  // CHECK: %noop = tg.contiguous %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %noop = tg.contiguous %x : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return
}

// CHECK-LABEL: func.func @broadcast
func.func @broadcast(%v: tensor<3xf32>, %col: tensor<4x1xf32>, %s: tensor<f32>, %t: tensor<1x3xf32, strided<[1, 2]>>) {
  // CHECK: %rows = tg.broadcast %v : tensor<3xf32> -> tensor<4x3xf32, strided<[0, 1]>>
  %rows = tg.broadcast %v : tensor<3xf32> -> tensor<4x3xf32, strided<[0, 1]>>
  // CHECK: %cols = tg.broadcast %col : tensor<4x1xf32> -> tensor<2x4x5xf32, strided<[0, 1, 0]>>
  %cols = tg.broadcast %col : tensor<4x1xf32> -> tensor<2x4x5xf32, strided<[0, 1, 0]>>
  // CHECK: %fill = tg.broadcast %s : tensor<f32> -> tensor<2x2xf32, strided<[0, 0]>>
  %fill = tg.broadcast %s : tensor<f32> -> tensor<2x2xf32, strided<[0, 0]>>
  // CHECK: %same = tg.broadcast %v : tensor<3xf32> -> tensor<3xf32>
  %same = tg.broadcast %v : tensor<3xf32> -> tensor<3xf32>
  // CHECK: %strided = tg.broadcast %t : tensor<1x3xf32, strided<[1, 2]>> -> tensor<4x3xf32, strided<[0, 2]>>
  %strided = tg.broadcast %t : tensor<1x3xf32, strided<[1, 2]>> -> tensor<4x3xf32, strided<[0, 2]>>
  func.return
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %wt: tensor<16x4xf32, strided<[1, 16]>>, %a: tensor<2x1x8x16xf32>, %b: tensor<3x16x4xf32>, %wp: tensor<2x16x32xf32>, %bwp: tensor<3x2x16x32xf32>) {
  // CHECK: %y = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %y = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  // CHECK: %yt = tg.matmul %x, %wt : (tensor<8x16xf32>, tensor<16x4xf32, strided<[1, 16]>>) -> tensor<8x4xf32>
  %yt = tg.matmul %x, %wt : (tensor<8x16xf32>, tensor<16x4xf32, strided<[1, 16]>>) -> tensor<8x4xf32>
  // CHECK: %yp = tg.matmul %x, %wp rhs_layout = "panels" : (tensor<8x16xf32>, tensor<2x16x32xf32>) -> tensor<8x64xf32>
  %yp = tg.matmul %x, %wp rhs_layout = "panels" : (tensor<8x16xf32>, tensor<2x16x32xf32>) -> tensor<8x64xf32>
  // A ragged last panel: N = 40 of 2 panels' 64 columns.
  // CHECK: %rp = tg.matmul %x, %wp rhs_layout = "panels" : (tensor<8x16xf32>, tensor<2x16x32xf32>) -> tensor<8x40xf32>
  %rp = tg.matmul %x, %wp rhs_layout = "panels" : (tensor<8x16xf32>, tensor<2x16x32xf32>) -> tensor<8x40xf32>
  // CHECK: %bp = tg.matmul %a, %bwp rhs_layout = "panels" : (tensor<2x1x8x16xf32>, tensor<3x2x16x32xf32>) -> tensor<2x3x8x64xf32>
  %bp = tg.matmul %a, %bwp rhs_layout = "panels" : (tensor<2x1x8x16xf32>, tensor<3x2x16x32xf32>) -> tensor<2x3x8x64xf32>
  // Batch dimensions broadcast: [2, 1] with [3] gives [2, 3].
  // CHECK: %batched = tg.matmul %a, %b : (tensor<2x1x8x16xf32>, tensor<3x16x4xf32>) -> tensor<2x3x8x4xf32>
  %batched = tg.matmul %a, %b : (tensor<2x1x8x16xf32>, tensor<3x16x4xf32>) -> tensor<2x3x8x4xf32>
  func.return
}

// CHECK-LABEL: func.func @conv2d
func.func @conv2d(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %xg: tensor<2x4x9x9xf32>, %wg: tensor<6x2x3x3xf32>) {
  // CHECK: %with_bias = tg.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %with_bias = tg.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: %no_bias = tg.conv2d %x, %w strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  %no_bias = tg.conv2d %x, %w strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] groups = 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
  // Asymmetric padding, dilation 2, two groups of two input channels.
  // CHECK: %grouped = tg.conv2d %xg, %wg strides = [1, 2] padding = [0, 1, 2, 0] dilation = [2, 2] groups = 2 : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x7x3xf32>
  %grouped = tg.conv2d %xg, %wg strides = [1, 2] padding = [0, 1, 2, 0] dilation = [2, 2] groups = 2 : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x7x3xf32>
  func.return
}

// CHECK-LABEL: func.func @pool2d
func.func @pool2d(%x: tensor<1x4x8x8xf32>) {
  // CHECK: %max = tg.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %max = tg.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  // CHECK: %dilated = tg.max_pool2d %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] dilation = [2, 2] : tensor<1x4x8x8xf32> -> tensor<1x4x6x6xf32>
  %dilated = tg.max_pool2d %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] dilation = [2, 2] : tensor<1x4x8x8xf32> -> tensor<1x4x6x6xf32>
  // CHECK: %avg = tg.avg_pool2d %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  %avg = tg.avg_pool2d %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32>
  // CHECK: %avg_pad = tg.avg_pool2d %x kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] count_include_pad : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  %avg_pad = tg.avg_pool2d %x kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] count_include_pad : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  // Dilation on an average (omitted, it is [1, 1]); padding may reach the kernel
  // size as long as it stays smaller than the dilated window (extent 3 here).
  // CHECK: %avg_dilated = tg.avg_pool2d %x kernel = [2, 2] strides = [1, 1] padding = [2, 0, 2, 0] dilation = [2, 2] count_include_pad : tensor<1x4x8x8xf32> -> tensor<1x4x10x6xf32>
  %avg_dilated = tg.avg_pool2d %x kernel = [2, 2] strides = [1, 1] padding = [2, 0, 2, 0] dilation = [2, 2] count_include_pad : tensor<1x4x8x8xf32> -> tensor<1x4x10x6xf32>
  func.return
}

// CHECK-LABEL: func.func @softmax
func.func @softmax(%x: tensor<4x10xf32>, %t: tensor<10x4xf32, strided<[1, 10]>>) {
  // CHECK: %p = tg.softmax %x axis = 1 : tensor<4x10xf32> -> tensor<4x10xf32>
  %p = tg.softmax %x axis = 1 : tensor<4x10xf32> -> tensor<4x10xf32>
  // CHECK: %last = tg.softmax %x axis = -1 : tensor<4x10xf32> -> tensor<4x10xf32>
  %last = tg.softmax %x axis = -1 : tensor<4x10xf32> -> tensor<4x10xf32>
  // CHECK: %strided = tg.softmax %t axis = 0 : tensor<10x4xf32, strided<[1, 10]>> -> tensor<10x4xf32>
  %strided = tg.softmax %t axis = 0 : tensor<10x4xf32, strided<[1, 10]>> -> tensor<10x4xf32>
  func.return
}

// CHECK-LABEL: func.func @batch_norm
func.func @batch_norm(%x: tensor<2x4x8x8xf32>, %scale: tensor<4xf32>, %bias: tensor<4xf32>, %mean: tensor<4xf32>, %var: tensor<4xf32>, %x2: tensor<3x4xf32>) {
  // CHECK: %y = tg.batch_norm %x, %scale, %bias, %mean, %var epsilon = 1.000000e-05 : tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x8x8xf32>
  %y = tg.batch_norm %x, %scale, %bias, %mean, %var epsilon = 1.000000e-05 : tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x8x8xf32>
  // CHECK: %y2 = tg.batch_norm %x2, %scale, %bias, %mean, %var epsilon = 1.000000e-03 : tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  %y2 = tg.batch_norm %x2, %scale, %bias, %mean, %var epsilon = 0.001 : tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<3x4xf32>
  func.return
}

// CHECK-LABEL: func.func @reduce
func.func @reduce(%x: tensor<4x8xf32>, %img: tensor<1x4x8x8xf32>, %t: tensor<8x4xf32, strided<[1, 8]>>) {
  // CHECK: %sum = tg.reduce_sum %x axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %sum = tg.reduce_sum %x axes = [1] : tensor<4x8xf32> -> tensor<4xf32>
  // CHECK: %keep = tg.reduce_sum %x axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %keep = tg.reduce_sum %x axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  // CHECK: %total = tg.reduce_sum %x axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %total = tg.reduce_sum %x axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  // CHECK: %mean = tg.reduce_mean %img axes = [2, 3] keepdims : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
  %mean = tg.reduce_mean %img axes = [2, 3] keepdims : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
  // CHECK: %max = tg.reduce_max %x axes = [0] : tensor<4x8xf32> -> tensor<8xf32>
  %max = tg.reduce_max %x axes = [0] : tensor<4x8xf32> -> tensor<8xf32>
  // CHECK: %strided = tg.reduce_max %t axes = [1, 0] keepdims : tensor<8x4xf32, strided<[1, 8]>> -> tensor<1x1xf32>
  %strided = tg.reduce_max %t axes = [1, 0] keepdims : tensor<8x4xf32, strided<[1, 8]>> -> tensor<1x1xf32>
  func.return
}

// CHECK-LABEL: func.func @fused
func.func @fused(%x: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  // CHECK:      %y = tg.fused %x, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  // CHECK-NEXT: ^bb0(%xa: tensor<8xf32>, %ba: tensor<8xf32>):
  // CHECK-NEXT:   %s = tg.add %xa, %ba : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT:   %r = tg.relu %s : tensor<8xf32> -> tensor<8xf32>
  // CHECK-NEXT:   tg.yield %r : tensor<8xf32>
  // CHECK-NEXT: }
  %y = tg.fused %x, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%xa: tensor<8xf32>, %ba: tensor<8xf32>):
    %s = tg.add %xa, %ba : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %r = tg.relu %s : tensor<8xf32> -> tensor<8xf32>
    tg.yield %r : tensor<8xf32>
  }
  // Two results.
  // CHECK:      %e, %n = tg.fused %x : (tensor<8xf32>) -> tensor<8xf32>, tensor<8xf32> {
  // CHECK-NEXT: ^bb0(%xb: tensor<8xf32>):
  // CHECK-NEXT:   %ex = tg.exp %xb : tensor<8xf32> -> tensor<8xf32>
  // CHECK-NEXT:   %ng = tg.neg %ex : tensor<8xf32> -> tensor<8xf32>
  // CHECK-NEXT:   tg.yield %ex, %ng : tensor<8xf32>, tensor<8xf32>
  // CHECK-NEXT: }
  %e, %n = tg.fused %x : (tensor<8xf32>) -> tensor<8xf32>, tensor<8xf32> {
  ^bb0(%xb: tensor<8xf32>):
    %ex = tg.exp %xb : tensor<8xf32> -> tensor<8xf32>
    %ng = tg.neg %ex : tensor<8xf32> -> tensor<8xf32>
    tg.yield %ex, %ng : tensor<8xf32>, tensor<8xf32>
  }
  // CHECK: func.return %y, %n : tensor<8xf32>, tensor<8xf32>
  func.return %y, %n : tensor<8xf32>, tensor<8xf32>
}

// Channels-last (NHWC) convolution, pools and batch norm: the layout property is
// printed only when it is not the default NCHW. The NHWC weight is HWIO.
// CHECK-LABEL: func.func @nhwc_layout
func.func @nhwc_layout(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x4xf32>, %b: tensor<4xf32>, %xg: tensor<2x9x9x4xf32>, %wg: tensor<3x3x2x6xf32>, %y: tensor<1x8x8x4xf32>, %p: tensor<4xf32>) {
  // CHECK: %conv = tg.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  %conv = tg.conv2d %x, %w, %b strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 layout = "NHWC" : (tensor<1x8x8x3xf32>, tensor<3x3x3x4xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  // CHECK: %grouped = tg.conv2d %xg, %wg strides = [1, 2] padding = [0, 1, 2, 0] dilation = [2, 2] groups = 2 layout = "NHWC" : (tensor<2x9x9x4xf32>, tensor<3x3x2x6xf32>) -> tensor<2x7x3x6xf32>
  %grouped = tg.conv2d %xg, %wg strides = [1, 2] padding = [0, 1, 2, 0] dilation = [2, 2] groups = 2 layout = "NHWC" : (tensor<2x9x9x4xf32>, tensor<3x3x2x6xf32>) -> tensor<2x7x3x6xf32>
  // CHECK: %max = tg.max_pool2d %y kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] layout = "NHWC" : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
  %max = tg.max_pool2d %y kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] layout = "NHWC" : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
  // CHECK: %avg = tg.avg_pool2d %y kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] count_include_pad layout = "NHWC" : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
  %avg = tg.avg_pool2d %y kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] count_include_pad layout = "NHWC" : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
  // CHECK: %bn = tg.batch_norm %y, %p, %p, %p, %p epsilon = 1.000000e-05 layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x8x8x4xf32>
  %bn = tg.batch_norm %y, %p, %p, %p, %p epsilon = 1.000000e-05 layout = "NHWC" : tensor<1x8x8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<1x8x8x4xf32>
  func.return
}
