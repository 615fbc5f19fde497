// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s

// The book's relu(x·w + b), unfused: three kernels, each a named affine nest; the
// host calls them on allocated intermediates and writes the last one into %out0.
// x[i, k] is read once per (i, k), outside the j loop.

// CHECK-LABEL: func.func private @main_k0_matmul(%x: memref<4x3xf32> {llvm.noalias}, %w: memref<3x5xf32> {llvm.noalias}, %out: memref<4x5xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         affine.for %i_init = 0 to 4 {
// CHECK-NEXT:      affine.for %j_init = 0 to 5 {
// CHECK-NEXT:        affine.store %[[ZERO]], %out[%i_init, %j_init] : memref<4x5xf32>
// CHECK-NEXT:      } {qd.loop = "j_init"}
// CHECK-NEXT:    } {qd.loop = "i_init"}
// CHECK-NEXT:    affine.for %i = 0 to 4 {
// CHECK-NEXT:      affine.for %k = 0 to 3 {
// CHECK-NEXT:        %[[A:.*]] = affine.load %x[%i, %k] : memref<4x3xf32>
// CHECK-NEXT:        affine.for %j = 0 to 5 {
// CHECK-NEXT:          %[[B:.*]] = affine.load %w[%k, %j] : memref<3x5xf32>
// CHECK-NEXT:          %[[C:.*]] = affine.load %out[%i, %j] : memref<4x5xf32>
// CHECK-NEXT:          %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[C]], %[[P]] : f32
// CHECK-NEXT:          affine.store %[[S]], %out[%i, %j] : memref<4x5xf32>
// CHECK-NEXT:        } {qd.loop = "j"}
// CHECK-NEXT:      } {qd.loop = "k"}
// CHECK-NEXT:    } {qd.loop = "i"}
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @main_k1_add(%in0: memref<4x5xf32> {llvm.noalias}, %b: memref<5xf32> {llvm.noalias}, %out: memref<4x5xf32> {llvm.noalias}) attributes {qd.kernel = "tg.add"} {
// CHECK-NEXT:    affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      affine.for %i1 = 0 to 5 {
// CHECK-NEXT:        %{{.*}} = affine.load %in0[%i0, %i1] : memref<4x5xf32>
// CHECK-NEXT:        %{{.*}} = affine.load %b[%i1] : memref<5xf32>
// CHECK-NEXT:        %{{.*}} = arith.addf
// CHECK-NEXT:        affine.store %{{.*}}, %out[%i0, %i1] : memref<4x5xf32>
// CHECK-NEXT:      } {qd.loop = "i1"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-LABEL: func.func private @main_k2_relu(%in0: memref<4x5xf32> {llvm.noalias}, %out: memref<4x5xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
// CHECK:         arith.maximumf
// CHECK-LABEL: func.func @main(%x: memref<4x3xf32>, %w: memref<3x5xf32>, %b: memref<5xf32>, %out0: memref<4x5xf32>) attributes {qd.num_inputs = 3 : i64} {
// CHECK-NEXT:    %[[T0:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x5xf32>
// CHECK-NEXT:    func.call @main_k0_matmul(%x, %w, %[[T0]]) : (memref<4x3xf32>, memref<3x5xf32>, memref<4x5xf32>) -> ()
// CHECK-NEXT:    %[[T1:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x5xf32>
// CHECK-NEXT:    func.call @main_k1_add(%[[T0]], %b, %[[T1]])
// CHECK-NEXT:    memref.dealloc %[[T0]] : memref<4x5xf32>
// CHECK-NEXT:    func.call @main_k2_relu(%[[T1]], %out0)
// CHECK-NEXT:    memref.dealloc %[[T1]] : memref<4x5xf32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @main(%x: tensor<4x3xf32>, %w: tensor<3x5xf32>, %b: tensor<5xf32>) -> tensor<4x5xf32> {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %1 = tg.add %0, %b : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %2 = tg.relu %1 : tensor<4x5xf32> -> tensor<4x5xf32>
  func.return %2 : tensor<4x5xf32>
}

// A tg.fused group is ONE kernel: the chain stays in registers.

// CHECK-LABEL: func.func private @fused_k0_fused(%x: memref<8xf32> {llvm.noalias}, %b: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.mul+tg.add+tg.relu"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %i0 = 0 to 8 {
// CHECK-NEXT:      %[[X:.*]] = affine.load %x[%i0] : memref<8xf32>
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT:      %[[B:.*]] = affine.load %b[%i0] : memref<8xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[M]], %[[B]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.maximumf %[[S]], %[[ZERO]] : f32
// CHECK-NEXT:      affine.store %[[R]], %out[%i0] : memref<8xf32>
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @fused(%x: memref<8xf32>, %b: memref<8xf32>, %out0: memref<8xf32>) attributes {qd.num_inputs = 2 : i64} {
// CHECK-NEXT:    func.call @fused_k0_fused(%x, %b, %out0)
// CHECK-NEXT:    func.return
func.func @fused(%x: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %y = tg.fused %x, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%xa: tensor<8xf32>, %ba: tensor<8xf32>):
    %m = tg.mul %xa, %xa : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %s = tg.add %m, %ba : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %r = tg.relu %s : tensor<8xf32> -> tensor<8xf32>
    tg.yield %r : tensor<8xf32>
  }
  func.return %y : tensor<8xf32>
}

// A transpose costs nothing: a reinterpret_cast, and the exp kernel reads through
// the strided layout. No copy kernel fires.

// CHECK-LABEL: func.func private @transpose_view_k0_exp(%t: memref<3x2xf32, strided<[1, 3]>> {llvm.noalias}, %out: memref<3x2xf32> {llvm.noalias})
// CHECK:           affine.load %t[%i0, %i1] : memref<3x2xf32, strided<[1, 3]>>
// CHECK-LABEL: func.func @transpose_view(%x: memref<2x3xf32>, %out0: memref<3x2xf32>)
// CHECK-NEXT:    %t = memref.reinterpret_cast %x to offset: [0], sizes: [3, 2], strides: [1, 3] : memref<2x3xf32> to memref<3x2xf32, strided<[1, 3]>>
// CHECK-NEXT:    func.call @transpose_view_k0_exp(%t, %out0)
// CHECK-NEXT:    func.return
func.func @transpose_view(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %e = tg.exp %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>
  func.return %e : tensor<3x2xf32>
}

// reshape of a row-major tensor is a view: a reinterpret_cast, no kernel of its own.

// CHECK-LABEL: func.func private @reshape_view_k0_neg(%r: memref<3x4xf32> {llvm.noalias}, %out: memref<3x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.neg"}
// CHECK-LABEL: func.func @reshape_view(%x: memref<2x6xf32>, %out0: memref<3x4xf32>)
// CHECK-NEXT:    %r = memref.reinterpret_cast %x to offset: [0], sizes: [3, 4], strides: [4, 1] : memref<2x6xf32> to memref<3x4xf32>
// CHECK-NEXT:    func.call @reshape_view_k0_neg(%r, %out0)
// CHECK-NEXT:    func.return
func.func @reshape_view(%x: tensor<2x6xf32>) -> tensor<3x4xf32> {
  %r = tg.reshape %x : tensor<2x6xf32> -> tensor<3x4xf32>
  %n = tg.neg %r : tensor<3x4xf32> -> tensor<3x4xf32>
  func.return %n : tensor<3x4xf32>
}

// Flattening a transpose has no view: reshape copies, reading row-major order
// through the strided layout.

// CHECK-LABEL: func.func private @reshape_copy_k0_reshape(%t: memref<3x2xf32, strided<[1, 3]>> {llvm.noalias}, %out: memref<6xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reshape"} {
// CHECK-NEXT:    affine.for %i0 = 0 to 6 {
// CHECK-NEXT:      %[[V:.*]] = affine.load %t[%i0 floordiv 2, %i0 mod 2] : memref<3x2xf32, strided<[1, 3]>>
// CHECK-NEXT:      affine.store %[[V]], %out[%i0] : memref<6xf32>
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-LABEL: func.func private @reshape_copy_k1_neg(
// CHECK-LABEL: func.func @reshape_copy(%x: memref<2x3xf32>, %out0: memref<6xf32>)
// CHECK-NEXT:    %t = memref.reinterpret_cast %x to offset: [0], sizes: [3, 2], strides: [1, 3]
// CHECK-NEXT:    %r = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
// CHECK-NEXT:    func.call @reshape_copy_k0_reshape(%t, %r)
// CHECK-NEXT:    func.call @reshape_copy_k1_neg(%r, %out0)
// CHECK-NEXT:    memref.dealloc %r : memref<6xf32>
func.func @reshape_copy(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %t = tg.transpose %x perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %r = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<6xf32>
  %n = tg.neg %r : tensor<6xf32> -> tensor<6xf32>
  func.return %n : tensor<6xf32>
}

// A broadcast is a stride-0 view.

// CHECK-LABEL: func.func private @broadcast_k0_sqrt(%b: memref<4x3xf32, strided<[0, 1]>> {llvm.noalias}, %out: memref<4x3xf32> {llvm.noalias})
// CHECK-LABEL: func.func @broadcast(%v: memref<3xf32>, %out0: memref<4x3xf32>)
// CHECK-NEXT:    %b = memref.reinterpret_cast %v to offset: [0], sizes: [4, 3], strides: [0, 1] : memref<3xf32> to memref<4x3xf32, strided<[0, 1]>>
// CHECK-NEXT:    func.call @broadcast_k0_sqrt(%b, %out0)
func.func @broadcast(%v: tensor<3xf32>) -> tensor<4x3xf32> {
  %b = tg.broadcast %v : tensor<3xf32> -> tensor<4x3xf32, strided<[0, 1]>>
  %s = tg.sqrt %b : tensor<4x3xf32, strided<[0, 1]>> -> tensor<4x3xf32>
  func.return %s : tensor<4x3xf32>
}

// A splat constant folds into the kernel: no global, no buffer argument.

// CHECK-NOT:   memref.global
// CHECK-LABEL: func.func private @splat_k0_mul(%x: memref<4xf32> {llvm.noalias}, %out: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.mul"} {
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:    affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[X:.*]] = affine.load %x[%i0] : memref<4xf32>
// CHECK-NEXT:      %{{.*}} = arith.mulf %[[X]], %[[HALF]] : f32
// CHECK-LABEL: func.func @splat(%x: memref<4xf32>, %out0: memref<4xf32>)
// CHECK-NEXT:    func.call @splat_k0_mul(%x, %out0)
// CHECK-NEXT:    func.return
func.func @splat(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = tg.constant dense<5.000000e-01> : tensor<4xf32>
  %y = tg.mul %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// conv2d with padding: the reduction loops carry the sum, affine.if skips the pad.

// CHECK-LABEL: func.func private @conv_k0_conv2d(%x: memref<1x2x4x4xf32> {llvm.noalias}, %w: memref<3x2x3x3xf32> {llvm.noalias}, %out: memref<1x3x4x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.conv2d"} {
// CHECK:         affine.for %n = 0 to 1 {
// CHECK-NEXT:      affine.for %f = 0 to 3 {
// CHECK-NEXT:        affine.for %oh = 0 to 4 {
// CHECK-NEXT:          affine.for %ow = 0 to 4 {
// CHECK-NEXT:            %[[SUM:.*]] = affine.for %c = 0 to 2 iter_args(%[[ACC_C:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:              affine.for %kh = 0 to 3 iter_args
// CHECK-NEXT:                affine.for %kw = 0 to 3 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:                  "affine.if"(%oh, %ow, %kh, %kw) <{condition = affine_set<(d0, d1, d2, d3) :
// CHECK-NEXT:                    affine.load %x[%n, %c, %oh + -1 + %kh, %ow + -1 + %kw] : memref<1x2x4x4xf32>
// CHECK-NEXT:                    affine.load %w[%f, %c, %kh, %kw] : memref<3x2x3x3xf32>
// CHECK-NEXT:                    arith.mulf
// CHECK-NEXT:                    arith.addf %[[ACC]],
// CHECK-NEXT:                    affine.yield
// CHECK-NEXT:                  }, {
// CHECK-NEXT:                    affine.yield %[[ACC]] : f32
// CHECK-NEXT:                  }) : (index, index, index, index) -> f32
// CHECK:                   } {qd.loop = "kw"}
// CHECK:                 } {qd.loop = "kh"}
// CHECK:               } {qd.loop = "c"}
// CHECK-NEXT:            affine.store %[[SUM]], %out[%n, %f, %oh, %ow] : memref<1x3x4x4xf32>
// CHECK-NEXT:          } {qd.loop = "ow"}
// CHECK-NEXT:        } {qd.loop = "oh"}
// CHECK-NEXT:      } {qd.loop = "f"}
// CHECK-NEXT:    } {qd.loop = "n"}
// CHECK-LABEL: func.func @conv(%x: memref<1x2x4x4xf32>, %w: memref<3x2x3x3xf32>, %out0: memref<1x3x4x4xf32>)
// CHECK-NEXT:    func.call @conv_k0_conv2d(%x, %w, %out0)
func.func @conv(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  %y = tg.conv2d %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// relu(exp(x)·w + b) as one hand-written group (fuse makes no prologues, but the
// lowering takes an lhs prologue): exp runs in the k body, once per x element; the epilogue is a nest of its own after the
// matmul nest (i_epi, j_epi), so i, k, j stays a perfect band that split and
// reorder can tile (compute_at moves the epilogue back into a tile loop).

// CHECK-LABEL: func.func private @mm_group_k0_fused(%x: memref<2x3xf32> {llvm.noalias}, %w: memref<3x4xf32> {llvm.noalias}, %b: memref<4xf32> {llvm.noalias}, %out: memref<2x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.exp+tg.matmul+tg.add+tg.relu"} {
// CHECK:         {qd.loop = "i_init"}
// CHECK-NEXT:    affine.for %i = 0 to 2 {
// CHECK-NEXT:      affine.for %k = 0 to 3 {
// CHECK-NEXT:        %[[X:.*]] = affine.load %x[%i, %k] : memref<2x3xf32>
// CHECK-NEXT:        %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT:        affine.for %j = 0 to 4 {
// CHECK-NEXT:          %[[W:.*]] = affine.load %w[%k, %j] : memref<3x4xf32>
// CHECK-NEXT:          %[[C:.*]] = affine.load %out[%i, %j] : memref<2x4xf32>
// CHECK-NEXT:          %[[P:.*]] = arith.mulf %[[E]], %[[W]] : f32
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[C]], %[[P]] : f32
// CHECK-NEXT:          affine.store %[[S]], %out[%i, %j] : memref<2x4xf32>
// CHECK-NEXT:        } {qd.loop = "j"}
// CHECK-NEXT:      } {qd.loop = "k"}
// CHECK-NEXT:    } {qd.loop = "i"}
// CHECK-NEXT:    affine.for %i_epi = 0 to 2 {
// CHECK-NEXT:      affine.for %j_epi = 0 to 4 {
// CHECK-NEXT:        %[[V:.*]] = affine.load %out[%i_epi, %j_epi] : memref<2x4xf32>
// CHECK-NEXT:        %[[B:.*]] = affine.load %b[%j_epi] : memref<4xf32>
// CHECK-NEXT:        %[[A:.*]] = arith.addf %[[V]], %[[B]] : f32
// CHECK-NEXT:        %[[R:.*]] = arith.maximumf %[[A]], %{{.*}} : f32
// CHECK-NEXT:        affine.store %[[R]], %out[%i_epi, %j_epi] : memref<2x4xf32>
// CHECK-NEXT:      } {qd.loop = "j_epi"}
// CHECK-NEXT:    } {qd.loop = "i_epi"}
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @mm_group(
// CHECK-NEXT:    func.call @mm_group_k0_fused(%x, %w, %b, %out0)
// CHECK-NEXT:    func.return
func.func @mm_group(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = tg.fused %x, %w, %b : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
  ^bb0(%xa: tensor<2x3xf32>, %wa: tensor<3x4xf32>, %ba: tensor<4xf32>):
    %e = tg.exp %xa : tensor<2x3xf32> -> tensor<2x3xf32>
    %m = tg.matmul %e, %wa : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %s = tg.add %m, %ba : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    %r = tg.relu %s : tensor<2x4xf32> -> tensor<2x4xf32>
    tg.yield %r : tensor<2x4xf32>
  }
  func.return %y : tensor<2x4xf32>
}

// relu(conv2d(x, w) + b[F, 1, 1]): the epilogue maps the finished sum, still in a
// register, before its one store; no extra loop.

// CHECK-LABEL: func.func private @conv_group_k0_fused(%x: memref<1x2x4x4xf32> {llvm.noalias}, %w: memref<3x2x3x3xf32> {llvm.noalias}, %b: memref<3x1x1xf32> {llvm.noalias}, %out: memref<1x3x4x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.conv2d+tg.add+tg.relu"} {
// CHECK:             %[[SUM:.*]] = affine.for %c = 0 to 2
// CHECK:             } {qd.loop = "c"}
// CHECK-NEXT:        %[[B:.*]] = affine.load %b[%f, 0, 0] : memref<3x1x1xf32>
// CHECK-NEXT:        %[[A:.*]] = arith.addf %[[SUM]], %[[B]] : f32
// CHECK-NEXT:        %[[R:.*]] = arith.maximumf %[[A]], %{{.*}} : f32
// CHECK-NEXT:        affine.store %[[R]], %out[%n, %f, %oh, %ow] : memref<1x3x4x4xf32>
// CHECK-NEXT:      } {qd.loop = "ow"}
func.func @conv_group(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32> {
  %y = tg.fused %x, %w, %b : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32> {
  ^bb0(%xa: tensor<1x2x4x4xf32>, %wa: tensor<3x2x3x3xf32>, %ba: tensor<3x1x1xf32>):
    %c = tg.conv2d %xa, %wa strides = [1, 1] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
    %s = tg.add %c, %ba : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
    %r = tg.relu %s : tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32>
    tg.yield %r : tensor<1x3x4x4xf32>
  }
  func.return %y : tensor<1x3x4x4xf32>
}

// Softmax written out of tg ops, as one row group: per row, a max pass and a sum
// pass carry their scalar in iter_args (fastmath<reassoc,contract>: they
// vectorize); the sum pass also stores exp(x - max) into the output buffer, so the
// output pass reloads it instead of recomputing exp; the division by the per-row
// sum is a multiplication by its reciprocal, computed once per row.

// CHECK-LABEL: func.func private @softmax_rows_k0_fused(%x: memref<4x8xf32> {llvm.noalias}, %out: memref<4x8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_max+tg.sub+tg.exp+tg.reduce_sum+tg.div"} {
// CHECK-DAG:     %[[NEG_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[MAX:.*]] = affine.for %r_max = 0 to 8 iter_args(%[[M:.*]] = %[[NEG_INF]]) -> (f32) {
// CHECK-NEXT:        %[[X0:.*]] = affine.load %x[%i0, %r_max] : memref<4x8xf32>
// CHECK-NEXT:        %[[M1:.*]] = arith.maximumf %[[M]], %[[X0]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:        affine.yield %[[M1]] : f32
// CHECK-NEXT:      } {qd.loop = "r_max"}
// CHECK-NEXT:      %[[SUM:.*]] = affine.for %r_sum = 0 to 8 iter_args(%[[S:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:        %[[X1:.*]] = affine.load %x[%i0, %r_sum] : memref<4x8xf32>
// CHECK-NEXT:        %[[D1:.*]] = arith.subf %[[X1]], %[[MAX]] : f32
// CHECK-NEXT:        %[[E1:.*]] = math.exp %[[D1]] : f32
// CHECK-NEXT:        affine.store %[[E1]], %out[%i0, %r_sum] : memref<4x8xf32>
// CHECK-NEXT:        %[[S1:.*]] = arith.addf %[[S]], %[[E1]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:        affine.yield %[[S1]] : f32
// CHECK-NEXT:      } {qd.loop = "r_sum"}
// CHECK-NEXT:      %[[RCP:.*]] = arith.divf %[[ONE]], %[[SUM]] : f32
// CHECK-NEXT:      affine.for %r_out = 0 to 8 {
// CHECK-NEXT:        %[[E2:.*]] = affine.load %out[%i0, %r_out] : memref<4x8xf32>
// CHECK-NEXT:        %[[Y:.*]] = arith.mulf %[[E2]], %[[RCP]] : f32
// CHECK-NEXT:        affine.store %[[Y]], %out[%i0, %r_out] : memref<4x8xf32>
// CHECK-NEXT:      } {qd.loop = "r_out"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
func.func @softmax_rows(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = tg.fused %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%xa: tensor<4x8xf32>):
    %m = tg.reduce_max %xa axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    %d = tg.sub %xa, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %e = tg.exp %d : tensor<4x8xf32> -> tensor<4x8xf32>
    %s = tg.reduce_sum %e axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    %r = tg.div %e, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    tg.yield %r : tensor<4x8xf32>
  }
  func.return %y : tensor<4x8xf32>
}

// Layer norm as one row group: mean pass, variance pass (x - mean recomputed),
// sqrt(var + eps) and its reciprocal once per row, then the output pass.

// CHECK-LABEL: func.func private @layer_norm_k0_fused(%x: memref<4x8xf32> {llvm.noalias}, %g: memref<8xf32> {llvm.noalias}, %b: memref<8xf32> {llvm.noalias}, %out: memref<4x8xf32> {llvm.noalias})
// CHECK:         affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[SUM:.*]] = affine.for %r_mean = 0 to 8 iter_args
// CHECK:             arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK:           } {qd.loop = "r_mean"}
// CHECK-NEXT:      %[[MEAN:.*]] = arith.divf %[[SUM]], %{{.*}} : f32
// CHECK-NEXT:      %[[SQ:.*]] = affine.for %r_mean2 = 0 to 8 iter_args
// CHECK-NEXT:        %[[X:.*]] = affine.load %x[%i0, %r_mean2] : memref<4x8xf32>
// CHECK-NEXT:        %[[D:.*]] = arith.subf %[[X]], %[[MEAN]] : f32
// CHECK-NEXT:        %[[DD:.*]] = arith.mulf %[[D]], %[[D]] : f32
// CHECK-NEXT:        arith.addf %{{.*}}, %[[DD]] fastmath<reassoc,contract> : f32
// CHECK:           } {qd.loop = "r_mean2"}
// CHECK-NEXT:      %[[VAR:.*]] = arith.divf %[[SQ]], %{{.*}} : f32
// CHECK-NEXT:      %[[VE:.*]] = arith.addf %[[VAR]], %{{.*}} : f32
// CHECK-NEXT:      %[[STD:.*]] = math.sqrt %[[VE]] : f32
// CHECK-NEXT:      %[[RSTD:.*]] = arith.divf %{{.*}}, %[[STD]] : f32
// CHECK-NEXT:      affine.for %r_out = 0 to 8 {
// CHECK-NEXT:        %[[X2:.*]] = affine.load %x[%i0, %r_out] : memref<4x8xf32>
// CHECK-NEXT:        %[[D2:.*]] = arith.subf %[[X2]], %[[MEAN]] : f32
// CHECK-NEXT:        %[[N:.*]] = arith.mulf %[[D2]], %[[RSTD]] : f32
// CHECK-NEXT:        %[[G:.*]] = affine.load %g[%r_out] : memref<8xf32>
// CHECK-NEXT:        %[[NG:.*]] = arith.mulf %[[N]], %[[G]] : f32
// CHECK-NEXT:        %[[B:.*]] = affine.load %b[%r_out] : memref<8xf32>
// CHECK-NEXT:        %[[Y:.*]] = arith.addf %[[NG]], %[[B]] : f32
// CHECK-NEXT:        affine.store %[[Y]], %out[%i0, %r_out] : memref<4x8xf32>
// CHECK-NEXT:      } {qd.loop = "r_out"}
// CHECK-NEXT:    } {qd.loop = "i0"}
func.func @layer_norm(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %eps = tg.constant dense<1.0e-05> : tensor<f32>
  %y = tg.fused %x, %eps, %g, %b : (tensor<4x8xf32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%xa: tensor<4x8xf32>, %epsa: tensor<f32>, %ga: tensor<8xf32>, %ba: tensor<8xf32>):
    %m = tg.reduce_mean %xa axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    %d = tg.sub %xa, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %dd = tg.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %v = tg.reduce_mean %dd axes = [-1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
    %ve = tg.add %v, %epsa : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
    %sd = tg.sqrt %ve : tensor<4x1xf32> -> tensor<4x1xf32>
    %n = tg.div %d, %sd : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
    %gn = tg.mul %n, %ga : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %y1 = tg.add %gn, %ba : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    tg.yield %y1 : tensor<4x8xf32>
  }
  func.return %y : tensor<4x8xf32>
}

// tg.softmax: max and sum passes accumulate with fastmath<reassoc,contract>;
// the max only shifts the row, so it is maxnumf (a NaN in the row still makes
// every output NaN, through the sum); r_norm multiplies by 1 / sum, computed
// once per row.

// CHECK-LABEL: func.func private @softmax_op_k0_softmax(
// CHECK:           arith.maxnumf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK:         } {qd.loop = "r_max"}
// CHECK:           math.exp
// CHECK:           affine.store
// CHECK:           arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// CHECK:         } {qd.loop = "r_sum"}
// CHECK-NEXT:    %[[RCP:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    affine.for %r_norm = 0 to 8 {
// CHECK-NEXT:      %[[E:.*]] = affine.load %out[%i0, %r_norm] : memref<4x8xf32>
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[E]], %[[RCP]] : f32
// CHECK-NEXT:      affine.store %[[Y]], %out[%i0, %r_norm] : memref<4x8xf32>
// CHECK-NEXT:    } {qd.loop = "r_norm"}
func.func @softmax_op(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = tg.softmax %x axis = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// tg.avg_pool2d with dilation 2: the taps are oh + kh * 2, ow + kw * 2; without
// padding there is no bounds test and the divisor is the constant kh * kw = 4.

// CHECK-LABEL: func.func private @avg_pool_dilated_k0_avg_pool2d(
// CHECK:         %[[FOUR:.*]] = arith.constant 4.000000e+00 : f32
// CHECK:             %[[SUM:.*]] = affine.for %kh = 0 to 2 iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK-NEXT:          affine.for %kw = 0 to 2 iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK-NEXT:            affine.load %x[%n, %c, %oh + %kh * 2, %ow + %kw * 2] : memref<1x2x6x6xf32>
// CHECK:             arith.divf %[[SUM]], %[[FOUR]] : f32
func.func @avg_pool_dilated(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32> {
  %p = tg.avg_pool2d %x kernel = [2, 2] strides = [1, 1] padding = [0, 0, 0, 0] dilation = [2, 2] : tensor<1x2x6x6xf32> -> tensor<1x2x4x4xf32>
  func.return %p : tensor<1x2x4x4xf32>
}

// A function with no tg ops is left alone.

// CHECK-LABEL: func.func @no_tg(%a: memref<4xf32>) -> memref<4xf32> {
// CHECK-NEXT:    func.return %a : memref<4xf32>
// CHECK-NEXT:  }
func.func @no_tg(%a: memref<4xf32>) -> memref<4xf32> {
  func.return %a : memref<4xf32>
}
