// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s
// RUN: qidao-opt %s -p fuse | filecheck %s --check-prefix=FUSE
// RUN: qidao-opt %s -p convert-tg-to-affine,lower-affine,convert-scf-to-cf,convert-to-llvm | filecheck %s --check-prefix=LLVM

// convert-tg-to-affine of the scatters and the ND gather
// (qidao/passes/kernels/lowering/scatter.py). A scatter is two nests: a copy of the
// data into the output, then one walk over the updates that loads each index, wraps
// a negative one once, clamps it into the axis, and stores back the combined entry
// where the wrapped index was inside the axis, the old one elsewhere (a skipped
// update), with memref.load/memref.store. The back end takes it (LLVM run line).

// CHECK-LABEL: func.func private @add_k0_scatter_elements(%x: memref<3x4xf32> {llvm.noalias}, %ids: memref<3x2xi64> {llvm.noalias}, %u: memref<3x2xf32> {llvm.noalias}, %out: memref<3x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.scatter_elements"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[SIZE:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.constant 3 : index
// CHECK-NEXT:    affine.for %i0 = 0 to 3 {
// CHECK-NEXT:      affine.for %i1 = 0 to 4 {
// CHECK-NEXT:        %[[D:.*]] = affine.load %x[%i0, %i1] : memref<3x4xf32>
// CHECK-NEXT:        affine.store %[[D]], %out[%i0, %i1] : memref<3x4xf32>
// CHECK-NEXT:      } {qd.loop = "i1"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    affine.for %u0 = 0 to 3 {
// CHECK-NEXT:      affine.for %u1 = 0 to 2 {
// CHECK-NEXT:        %raw = affine.load %ids[%u0, %u1] : memref<3x2xi64>
// CHECK-NEXT:        %idx = arith.index_cast %raw : i64 to index
// CHECK-NEXT:        %neg = arith.cmpi slt, %idx, %[[ZERO]] : index
// CHECK-NEXT:        %up = arith.addi %idx, %[[SIZE]] : index
// CHECK-NEXT:        %wrapped = arith.select %neg, %up, %idx : index
// CHECK-NEXT:        %lo = arith.maxsi %wrapped, %[[ZERO]] : index
// CHECK-NEXT:        %entry = arith.minsi %lo, %[[LAST]] : index
// CHECK-NEXT:        %ge0 = arith.cmpi sge, %wrapped, %[[ZERO]] : index
// CHECK-NEXT:        %ltn = arith.cmpi slt, %wrapped, %[[SIZE]] : index
// CHECK-NEXT:        %valid = arith.andi %ge0, %ltn : i1
// CHECK-NEXT:        %[[U:.*]] = affine.load %u[%u0, %u1] : memref<3x2xf32>
// CHECK-NEXT:        %old = memref.load %out[%u0, %entry] : memref<3x4xf32>
// CHECK-NEXT:        %[[NEW:.*]] = arith.addf %old, %[[U]] : f32
// CHECK-NEXT:        %[[KEPT:.*]] = arith.select %valid, %[[NEW]], %old : f32
// CHECK-NEXT:        memref.store %[[KEPT]], %out[%u0, %entry] : memref<3x4xf32>
// CHECK-NEXT:      } {qd.loop = "u1"}
// CHECK-NEXT:    } {qd.loop = "u0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// The scatter is a kernel of its own: fuse does not join the relu to it.
// FUSE-LABEL: func.func @add
// FUSE-NEXT:    %r = tg.scatter_elements %x, %ids, %u axis = 1 reduction = "add"
// FUSE-NEXT:    %y = tg.relu %r
// LLVM-LABEL: llvm.func @add_k0_scatter_elements(
// LLVM:         %raw = llvm.load %{{.*}} : !llvm.ptr -> i64
// LLVM:         llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
func.func @add(%x: tensor<3x4xf32>, %ids: tensor<3x2xi64>, %u: tensor<3x2xf32>) -> tensor<3x4xf32> {
  %r = tg.scatter_elements %x, %ids, %u axis = 1 reduction = "add" : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %y = tg.relu %r : tensor<3x4xf32> -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// ScatterND of rows of an i32 tensor with max: the tuple's component is read once
// per update (outside the slice loop s0), the integer entries combined with maxsi.
// CHECK-LABEL: func.func private @rows_k0_scatter_nd(
// CHECK:         affine.for %u0 = 0 to 2 {
// CHECK-NEXT:      %raw = affine.load %ids[%u0, 0] : memref<2x1xi64>
// CHECK:           %valid = arith.andi %ge0, %ltn : i1
// CHECK-NEXT:      affine.for %s0 = 0 to 3 {
// CHECK-NEXT:        %[[U:.*]] = affine.load %u[%u0, %s0] : memref<2x3xi32>
// CHECK-NEXT:        %old = memref.load %out[%entry, %s0] : memref<4x3xi32>
// CHECK-NEXT:        %[[NEW:.*]] = arith.maxsi %old, %[[U]] : i32
// CHECK-NEXT:        %[[KEPT:.*]] = arith.select %valid, %[[NEW]], %old : i32
// CHECK-NEXT:        memref.store %[[KEPT]], %out[%entry, %s0] : memref<4x3xi32>
func.func @rows(%x: tensor<4x3xi32>, %ids: tensor<2x1xi64>, %u: tensor<2x3xi32>) -> tensor<4x3xi32> {
  %r = tg.scatter_nd %x, %ids, %u reduction = "max" : (tensor<4x3xi32>, tensor<2x1xi64>, tensor<2x3xi32>) -> tensor<4x3xi32>
  func.return %r : tensor<4x3xi32>
}

// GatherND with one batch dimension: one nest over the output; the component is
// clamped (no validity test) and the data read with a memref.load.
// CHECK-LABEL: func.func private @pick_k0_gather_nd(
// CHECK:             %raw = affine.load %ids[%i0, %i1, 0] : memref<2x5x1xi32>
// CHECK:             %entry = arith.minsi %lo, %{{.*}} : index
// CHECK-NEXT:        %[[V:.*]] = memref.load %x[%i0, %entry, %i2] : memref<2x4x3xf32>
// CHECK-NEXT:        affine.store %[[V]], %out[%i0, %i1, %i2] : memref<2x5x3xf32>
func.func @pick(%x: tensor<2x4x3xf32>, %ids: tensor<2x5x1xi32>) -> tensor<2x5x3xf32> {
  %r = tg.gather_nd %x, %ids batch_dims = 1 : (tensor<2x4x3xf32>, tensor<2x5x1xi32>) -> tensor<2x5x3xf32>
  func.return %r : tensor<2x5x3xf32>
}
