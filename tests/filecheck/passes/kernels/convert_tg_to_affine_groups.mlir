// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s

// convert-tg-to-affine of tg.fused groups: each group is ONE kernel, a private
// result-less function whose every affine.for is named, and whose body holds only
// ops the back end lowers (every line of each kernel is checked below). The host
// calls it once, writing the graph's outputs directly.

// relu(x·w + b) as fuse groups it: three top-level nests, the init (i_init,
// j_init), the matmul (i, k, j) and the epilogue (i_epi, j_epi), which compute_at
// can move into a tile of the matmul's.
// CHECK-LABEL: func.func private @matmul_bias_relu_k0_fused(%x: memref<4x3xf32> {llvm.noalias}, %w: memref<3x5xf32> {llvm.noalias}, %b: memref<5xf32> {llvm.noalias}, %out: memref<4x5xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul+tg.add+tg.relu"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %i_init = 0 to 4 {
// CHECK-NEXT:      affine.for %j_init = 0 to 5 {
// CHECK-NEXT:        affine.store %[[ZERO]], %out[%i_init, %j_init] : memref<4x5xf32>
// CHECK-NEXT:      } {qd.loop = "j_init"}
// CHECK-NEXT:    } {qd.loop = "i_init"}
// CHECK-NEXT:    affine.for %i = 0 to 4 {
// CHECK-NEXT:      affine.for %k = 0 to 3 {
// CHECK-NEXT:        %[[X:.*]] = affine.load %x[%i, %k] : memref<4x3xf32>
// CHECK-NEXT:        affine.for %j = 0 to 5 {
// CHECK-NEXT:          %[[W:.*]] = affine.load %w[%k, %j] : memref<3x5xf32>
// CHECK-NEXT:          %[[ACC:.*]] = affine.load %out[%i, %j] : memref<4x5xf32>
// CHECK-NEXT:          %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:          affine.store %[[S]], %out[%i, %j] : memref<4x5xf32>
// CHECK-NEXT:        } {qd.loop = "j"}
// CHECK-NEXT:      } {qd.loop = "k"}
// CHECK-NEXT:    } {qd.loop = "i"}
// CHECK-NEXT:    affine.for %i_epi = 0 to 4 {
// CHECK-NEXT:      affine.for %j_epi = 0 to 5 {
// CHECK-NEXT:        %[[Y:.*]] = affine.load %out[%i_epi, %j_epi] : memref<4x5xf32>
// CHECK-NEXT:        %[[B:.*]] = affine.load %b[%j_epi] : memref<5xf32>
// CHECK-NEXT:        %[[A:.*]] = arith.addf %[[Y]], %[[B]] : f32
// CHECK-NEXT:        %[[R:.*]] = arith.maximumf %[[A]], %[[ZERO]] : f32
// CHECK-NEXT:        affine.store %[[R]], %out[%i_epi, %j_epi] : memref<4x5xf32>
// CHECK-NEXT:      } {qd.loop = "j_epi"}
// CHECK-NEXT:    } {qd.loop = "i_epi"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @matmul_bias_relu(
// CHECK-NEXT:    func.call @matmul_bias_relu_k0_fused(%x, %w, %b, %out0)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @matmul_bias_relu(%x: tensor<4x3xf32>, %w: tensor<3x5xf32>, %b: tensor<5xf32>) -> tensor<4x5xf32> {
  %y = tg.fused %x, %w, %b : (tensor<4x3xf32>, tensor<3x5xf32>, tensor<5xf32>) -> tensor<4x5xf32> {
  ^bb0(%xa: tensor<4x3xf32>, %wa: tensor<3x5xf32>, %ba: tensor<5xf32>):
    %m = tg.matmul %xa, %wa : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %s = tg.add %m, %ba : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
    %r = tg.relu %s : tensor<4x5xf32> -> tensor<4x5xf32>
    tg.yield %r : tensor<4x5xf32>
  }
  func.return %y : tensor<4x5xf32>
}

// A batched matmul with an epilogue: the batch loop b0 leads each of the three
// nests; the rhs is shared by every batch.
// CHECK-LABEL: func.func private @batched_matmul_group_k0_fused(%a: memref<5x2x3xf32> {llvm.noalias}, %b: memref<3x4xf32> {llvm.noalias}, %c: memref<4xf32> {llvm.noalias}, %out: memref<5x2x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul+tg.add"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %b0_init = 0 to 5 {
// CHECK-NEXT:      affine.for %i_init = 0 to 2 {
// CHECK-NEXT:        affine.for %j_init = 0 to 4 {
// CHECK-NEXT:          affine.store %[[ZERO]], %out[%b0_init, %i_init, %j_init] : memref<5x2x4xf32>
// CHECK-NEXT:        } {qd.loop = "j_init"}
// CHECK-NEXT:      } {qd.loop = "i_init"}
// CHECK-NEXT:    } {qd.loop = "b0_init"}
// CHECK-NEXT:    affine.for %b0 = 0 to 5 {
// CHECK-NEXT:      affine.for %i = 0 to 2 {
// CHECK-NEXT:        affine.for %k = 0 to 3 {
// CHECK-NEXT:          %[[X:.*]] = affine.load %a[%b0, %i, %k] : memref<5x2x3xf32>
// CHECK-NEXT:          affine.for %j = 0 to 4 {
// CHECK-NEXT:            %[[W:.*]] = affine.load %b[%k, %j] : memref<3x4xf32>
// CHECK-NEXT:            %[[ACC:.*]] = affine.load %out[%b0, %i, %j] : memref<5x2x4xf32>
// CHECK-NEXT:            %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT:            %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:            affine.store %[[S]], %out[%b0, %i, %j] : memref<5x2x4xf32>
// CHECK-NEXT:          } {qd.loop = "j"}
// CHECK-NEXT:        } {qd.loop = "k"}
// CHECK-NEXT:      } {qd.loop = "i"}
// CHECK-NEXT:    } {qd.loop = "b0"}
// CHECK-NEXT:    affine.for %b0_epi = 0 to 5 {
// CHECK-NEXT:      affine.for %i_epi = 0 to 2 {
// CHECK-NEXT:        affine.for %j_epi = 0 to 4 {
// CHECK-NEXT:          %[[Y:.*]] = affine.load %out[%b0_epi, %i_epi, %j_epi] : memref<5x2x4xf32>
// CHECK-NEXT:          %[[C:.*]] = affine.load %c[%j_epi] : memref<4xf32>
// CHECK-NEXT:          %[[A:.*]] = arith.addf %[[Y]], %[[C]] : f32
// CHECK-NEXT:          affine.store %[[A]], %out[%b0_epi, %i_epi, %j_epi] : memref<5x2x4xf32>
// CHECK-NEXT:        } {qd.loop = "j_epi"}
// CHECK-NEXT:      } {qd.loop = "i_epi"}
// CHECK-NEXT:    } {qd.loop = "b0_epi"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @batched_matmul_group(
// CHECK-NEXT:    func.call @batched_matmul_group_k0_fused(%a, %b, %c, %out0)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @batched_matmul_group(%a: tensor<5x2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> tensor<5x2x4xf32> {
  %r = tg.fused %a, %b, %c : (tensor<5x2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<5x2x4xf32> {
  ^bb0(%x: tensor<5x2x3xf32>, %y: tensor<3x4xf32>, %z: tensor<4xf32>):
    %m = tg.matmul %x, %y : (tensor<5x2x3xf32>, tensor<3x4xf32>) -> tensor<5x2x4xf32>
    %s = tg.add %m, %z : (tensor<5x2x4xf32>, tensor<4xf32>) -> tensor<5x2x4xf32>
    tg.yield %s : tensor<5x2x4xf32>
  }
  func.return %r : tensor<5x2x4xf32>
}

// A grouped conv2d (two groups, stride 2, padding 1) with a mul and a relu as its
// epilogue: the group's input channels start at f floordiv 2; the epilogue maps
// the finished sum, still in a register, before its one store.
// CHECK-LABEL: func.func private @grouped_conv_group_k0_fused(%a: memref<1x2x5x5xf32> {llvm.noalias}, %b: memref<4x1x3x3xf32> {llvm.noalias}, %c: memref<4x1x1xf32> {llvm.noalias}, %out: memref<1x4x3x3xf32> {llvm.noalias}) attributes {qd.kernel = "tg.conv2d+tg.mul+tg.relu"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %n = 0 to 1 {
// CHECK-NEXT:      affine.for %f = 0 to 4 {
// CHECK-NEXT:        affine.for %oh = 0 to 3 {
// CHECK-NEXT:          affine.for %ow = 0 to 3 {
// CHECK-NEXT:            %[[SUM:.*]] = affine.for %c_1 = 0 to 1 iter_args(%[[ACC_C:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:              %[[SUM_KH:.*]] = affine.for %kh = 0 to 3 iter_args(%[[ACC_KH:.*]] = %[[ACC_C]]) -> (f32) {
// CHECK-NEXT:                %[[SUM_KW:.*]] = affine.for %kw = 0 to 3 iter_args(%[[ACC:.*]] = %[[ACC_KH]]) -> (f32) {
// CHECK-NEXT:                  %[[TAP:.*]] = "affine.if"(%oh, %ow, %kh, %kw) <{condition = affine_set<(d0, d1, d2, d3) : ((((d0 * 2) + -1) + d2) >= 0, ((((d0 * -2) + 1) + (d2 * -1)) + 4) >= 0, (((d1 * 2) + -1) + d3) >= 0, ((((d1 * -2) + 1) + (d3 * -1)) + 4) >= 0)>}> ({
// CHECK-NEXT:                    %[[X:.*]] = affine.load %a[%n, %f floordiv 2 + %c_1, %oh * 2 + -1 + %kh, %ow * 2 + -1 + %kw] : memref<1x2x5x5xf32>
// CHECK-NEXT:                    %[[W:.*]] = affine.load %b[%f, %c_1, %kh, %kw] : memref<4x1x3x3xf32>
// CHECK-NEXT:                    %[[P:.*]] = arith.mulf %[[X]], %[[W]] : f32
// CHECK-NEXT:                    %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:                    affine.yield %[[S]] : f32
// CHECK-NEXT:                  }, {
// CHECK-NEXT:                    affine.yield %[[ACC]] : f32
// CHECK-NEXT:                  }) : (index, index, index, index) -> f32
// CHECK-NEXT:                  affine.yield %[[TAP]] : f32
// CHECK-NEXT:                } {qd.loop = "kw"}
// CHECK-NEXT:                affine.yield %[[SUM_KW]] : f32
// CHECK-NEXT:              } {qd.loop = "kh"}
// CHECK-NEXT:              affine.yield %[[SUM_KH]] : f32
// CHECK-NEXT:            } {qd.loop = "c"}
// CHECK-NEXT:            %[[SCALE:.*]] = affine.load %c[%f, 0, 0] : memref<4x1x1xf32>
// CHECK-NEXT:            %[[M:.*]] = arith.mulf %[[SUM]], %[[SCALE]] : f32
// CHECK-NEXT:            %[[R:.*]] = arith.maximumf %[[M]], %[[ZERO]] : f32
// CHECK-NEXT:            affine.store %[[R]], %out[%n, %f, %oh, %ow] : memref<1x4x3x3xf32>
// CHECK-NEXT:          } {qd.loop = "ow"}
// CHECK-NEXT:        } {qd.loop = "oh"}
// CHECK-NEXT:      } {qd.loop = "f"}
// CHECK-NEXT:    } {qd.loop = "n"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @grouped_conv_group(
// CHECK-NEXT:    func.call @grouped_conv_group_k0_fused(%a, %b, %c, %out0)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @grouped_conv_group(%a: tensor<1x2x5x5xf32>, %b: tensor<4x1x3x3xf32>, %c: tensor<4x1x1xf32>) -> tensor<1x4x3x3xf32> {
  %r = tg.fused %a, %b, %c : (tensor<1x2x5x5xf32>, tensor<4x1x3x3xf32>, tensor<4x1x1xf32>) -> tensor<1x4x3x3xf32> {
  ^bb0(%x: tensor<1x2x5x5xf32>, %y: tensor<4x1x3x3xf32>, %z: tensor<4x1x1xf32>):
    %m = tg.conv2d %x, %y strides = [2, 2] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 2 : (tensor<1x2x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32>
    %s = tg.mul %m, %z : (tensor<1x4x3x3xf32>, tensor<4x1x1xf32>) -> tensor<1x4x3x3xf32>
    %r = tg.relu %s : tensor<1x4x3x3xf32> -> tensor<1x4x3x3xf32>
    tg.yield %r : tensor<1x4x3x3xf32>
  }
  func.return %r : tensor<1x4x3x3xf32>
}

// A row group over the last axis with a rank-0 operand: per row (i0, i1) a mean
// pass, a sum pass that stores exp(x - mean) into the output, the rank-0 %c read
// once per row, and the output pass.
// CHECK-LABEL: func.func private @row_group_k0_fused(%a: memref<2x3x4xf32> {llvm.noalias}, %b: memref<4xf32> {llvm.noalias}, %c: memref<f32> {llvm.noalias}, %out: memref<2x3x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_mean+tg.sub+tg.exp+tg.reduce_sum+tg.add+tg.div+tg.mul"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[FOUR:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    affine.for %i0 = 0 to 2 {
// CHECK-NEXT:      affine.for %i1 = 0 to 3 {
// CHECK-NEXT:        %[[SUM:.*]] = affine.for %r_mean = 0 to 4 iter_args(%[[S:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:          %[[X:.*]] = affine.load %a[%i0, %i1, %r_mean] : memref<2x3x4xf32>
// CHECK-NEXT:          %[[S1:.*]] = arith.addf %[[S]], %[[X]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:          affine.yield %[[S1]] : f32
// CHECK-NEXT:        } {qd.loop = "r_mean"}
// CHECK-NEXT:        %[[MEAN:.*]] = arith.divf %[[SUM]], %[[FOUR]] : f32
// CHECK-NEXT:        %[[TOTAL:.*]] = affine.for %r_sum = 0 to 4 iter_args(%[[T:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:          %[[X2:.*]] = affine.load %a[%i0, %i1, %r_sum] : memref<2x3x4xf32>
// CHECK-NEXT:          %[[D:.*]] = arith.subf %[[X2]], %[[MEAN]] : f32
// CHECK-NEXT:          %[[E:.*]] = math.exp %[[D]] : f32
// CHECK-NEXT:          affine.store %[[E]], %out[%i0, %i1, %r_sum] : memref<2x3x4xf32>
// CHECK-NEXT:          %[[T1:.*]] = arith.addf %[[T]], %[[E]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:          affine.yield %[[T1]] : f32
// CHECK-NEXT:        } {qd.loop = "r_sum"}
// CHECK-NEXT:        %[[C:.*]] = affine.load %c[] : memref<f32>
// CHECK-NEXT:        %[[DEN:.*]] = arith.addf %[[TOTAL]], %[[C]] : f32
// CHECK-NEXT:        %[[RCP:.*]] = arith.divf %[[ONE]], %[[DEN]] : f32
// CHECK-NEXT:        affine.for %r_out = 0 to 4 {
// CHECK-NEXT:          %[[E2:.*]] = affine.load %out[%i0, %i1, %r_out] : memref<2x3x4xf32>
// CHECK-NEXT:          %[[Q:.*]] = arith.mulf %[[E2]], %[[RCP]] : f32
// CHECK-NEXT:          %[[B:.*]] = affine.load %b[%r_out] : memref<4xf32>
// CHECK-NEXT:          %[[Y:.*]] = arith.mulf %[[Q]], %[[B]] : f32
// CHECK-NEXT:          affine.store %[[Y]], %out[%i0, %i1, %r_out] : memref<2x3x4xf32>
// CHECK-NEXT:        } {qd.loop = "r_out"}
// CHECK-NEXT:      } {qd.loop = "i1"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @row_group(
// CHECK-NEXT:    func.call @row_group_k0_fused(%a, %b, %c, %out0)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @row_group(%a: tensor<2x3x4xf32>, %b: tensor<4xf32>, %c: tensor<f32>) -> tensor<2x3x4xf32> {
  %r = tg.fused %a, %b, %c : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<2x3x4xf32> {
  ^bb0(%x: tensor<2x3x4xf32>, %y: tensor<4xf32>, %z: tensor<f32>):
    %m = tg.reduce_mean %x axes = [2] keepdims : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
    %d = tg.sub %x, %m : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
    %e = tg.exp %d : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
    %s = tg.reduce_sum %e axes = [2] keepdims : tensor<2x3x4xf32> -> tensor<2x3x1xf32>
    %t = tg.add %s, %z : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
    %q = tg.div %e, %t : (tensor<2x3x4xf32>, tensor<2x3x1xf32>) -> tensor<2x3x4xf32>
    %o = tg.mul %q, %y : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
    tg.yield %o : tensor<2x3x4xf32>
  }
  func.return %r : tensor<2x3x4xf32>
}

// A row group over two trailing axes (written positive and negative), with three
// results of different shapes: each reduction pass is a nest of two loops
// (r_*_d0, r_*_d1) inside i0; the per-row results are stored once per row.
// CHECK-LABEL: func.func private @row_group_two_axes_k0_fused(%a: memref<2x3x4xf32> {llvm.noalias}, %b: memref<4xf32> {llvm.noalias}, %c: memref<f32> {llvm.noalias}, %out0: memref<2xf32> {llvm.noalias}, %out1: memref<2x1x1xf32> {llvm.noalias}, %out2: memref<2x3x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_max+tg.reduce_max+tg.sub+tg.reduce_sum+tg.add+tg.mul"} {
// CHECK-NEXT:    %[[NEG_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %i0 = 0 to 2 {
// CHECK-NEXT:      %[[MAX:.*]] = affine.for %r_max_d0 = 0 to 3 iter_args(%[[M0:.*]] = %[[NEG_INF]]) -> (f32) {
// CHECK-NEXT:        %[[MAX1:.*]] = affine.for %r_max_d1 = 0 to 4 iter_args(%[[M1:.*]] = %[[M0]]) -> (f32) {
// CHECK-NEXT:          %[[X:.*]] = affine.load %a[%i0, %r_max_d0, %r_max_d1] : memref<2x3x4xf32>
// CHECK-NEXT:          %[[M2:.*]] = arith.maximumf %[[M1]], %[[X]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:          affine.yield %[[M2]] : f32
// CHECK-NEXT:        } {qd.loop = "r_max_d1"}
// CHECK-NEXT:        affine.yield %[[MAX1]] : f32
// CHECK-NEXT:      } {qd.loop = "r_max_d0"}
// CHECK-NEXT:      %[[MAX2:.*]] = affine.for %r_max2_d0 = 0 to 3 iter_args(%[[N0:.*]] = %[[NEG_INF]]) -> (f32) {
// CHECK-NEXT:        %[[MAX2_1:.*]] = affine.for %r_max2_d1 = 0 to 4 iter_args(%[[N1:.*]] = %[[N0]]) -> (f32) {
// CHECK-NEXT:          %[[X2:.*]] = affine.load %a[%i0, %r_max2_d0, %r_max2_d1] : memref<2x3x4xf32>
// CHECK-NEXT:          %[[N2:.*]] = arith.maximumf %[[N1]], %[[X2]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:          affine.yield %[[N2]] : f32
// CHECK-NEXT:        } {qd.loop = "r_max2_d1"}
// CHECK-NEXT:        affine.yield %[[MAX2_1]] : f32
// CHECK-NEXT:      } {qd.loop = "r_max2_d0"}
// CHECK-NEXT:      %[[SUM:.*]] = affine.for %r_sum_d0 = 0 to 3 iter_args(%[[S0:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:        %[[SUM1:.*]] = affine.for %r_sum_d1 = 0 to 4 iter_args(%[[S1:.*]] = %[[S0]]) -> (f32) {
// CHECK-NEXT:          %[[X3:.*]] = affine.load %a[%i0, %r_sum_d0, %r_sum_d1] : memref<2x3x4xf32>
// CHECK-NEXT:          %[[D:.*]] = arith.subf %[[X3]], %[[MAX2]] : f32
// CHECK-NEXT:          %[[S2:.*]] = arith.addf %[[S1]], %[[D]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:          affine.yield %[[S2]] : f32
// CHECK-NEXT:        } {qd.loop = "r_sum_d1"}
// CHECK-NEXT:        affine.yield %[[SUM1]] : f32
// CHECK-NEXT:      } {qd.loop = "r_sum_d0"}
// CHECK-NEXT:      affine.store %[[MAX]], %out0[%i0] : memref<2xf32>
// CHECK-NEXT:      %[[C:.*]] = affine.load %c[] : memref<f32>
// CHECK-NEXT:      %[[U:.*]] = arith.addf %[[SUM]], %[[C]] : f32
// CHECK-NEXT:      affine.store %[[U]], %out1[%i0, 0, 0] : memref<2x1x1xf32>
// CHECK-NEXT:      affine.for %r_out_d0 = 0 to 3 {
// CHECK-NEXT:        affine.for %r_out_d1 = 0 to 4 {
// CHECK-NEXT:          %[[X4:.*]] = affine.load %a[%i0, %r_out_d0, %r_out_d1] : memref<2x3x4xf32>
// CHECK-NEXT:          %[[D2:.*]] = arith.subf %[[X4]], %[[MAX2]] : f32
// CHECK-NEXT:          %[[B:.*]] = affine.load %b[%r_out_d1] : memref<4xf32>
// CHECK-NEXT:          %[[V:.*]] = arith.mulf %[[D2]], %[[B]] : f32
// CHECK-NEXT:          affine.store %[[V]], %out2[%i0, %r_out_d0, %r_out_d1] : memref<2x3x4xf32>
// CHECK-NEXT:        } {qd.loop = "r_out_d1"}
// CHECK-NEXT:      } {qd.loop = "r_out_d0"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @row_group_two_axes(
// CHECK-NEXT:    func.call @row_group_two_axes_k0_fused(%a, %b, %c, %out0, %out1, %out2)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @row_group_two_axes(%a: tensor<2x3x4xf32>, %b: tensor<4xf32>, %c: tensor<f32>) -> (tensor<2xf32>, tensor<2x1x1xf32>, tensor<2x3x4xf32>) {
  %r:3 = tg.fused %a, %b, %c : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<2xf32>, tensor<2x1x1xf32>, tensor<2x3x4xf32> {
  ^bb0(%x: tensor<2x3x4xf32>, %y: tensor<4xf32>, %z: tensor<f32>):
    %m = tg.reduce_max %x axes = [1, 2] : tensor<2x3x4xf32> -> tensor<2xf32>
    %n = tg.reduce_max %x axes = [-2, -1] keepdims : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
    %d = tg.sub %x, %n : (tensor<2x3x4xf32>, tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
    %s = tg.reduce_sum %d axes = [1, 2] keepdims : tensor<2x3x4xf32> -> tensor<2x1x1xf32>
    %u = tg.add %s, %z : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
    %v = tg.mul %d, %y : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
    tg.yield %m, %u, %v : tensor<2xf32>, tensor<2x1x1xf32>, tensor<2x3x4xf32>
  }
  func.return %r#0, %r#1, %r#2 : tensor<2xf32>, tensor<2x1x1xf32>, tensor<2x3x4xf32>
}

// Two results of one shape: one loop i0, storing each result where it is computed.
// CHECK-LABEL: func.func private @two_outputs_k0_fused(%a: memref<4xf32> {llvm.noalias}, %out0: memref<4xf32> {llvm.noalias}, %out1: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.exp+tg.neg"} {
// CHECK-NEXT:    affine.for %i0 = 0 to 4 {
// CHECK-NEXT:      %[[X:.*]] = affine.load %a[%i0] : memref<4xf32>
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT:      affine.store %[[E]], %out0[%i0] : memref<4xf32>
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[E]] : f32
// CHECK-NEXT:      affine.store %[[N]], %out1[%i0] : memref<4xf32>
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @two_outputs(
// CHECK-NEXT:    func.call @two_outputs_k0_fused(%a, %out0, %out1)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @two_outputs(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r:2 = tg.fused %a : (tensor<4xf32>) -> tensor<4xf32>, tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    %e = tg.exp %x : tensor<4xf32> -> tensor<4xf32>
    %n = tg.neg %e : tensor<4xf32> -> tensor<4xf32>
    tg.yield %e, %n : tensor<4xf32>, tensor<4xf32>
  }
  func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xf32>
}
