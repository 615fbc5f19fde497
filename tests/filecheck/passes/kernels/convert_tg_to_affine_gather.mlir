// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s
// RUN: qidao-opt %s -p fuse | filecheck %s --check-prefix=FUSE
// RUN: qidao-opt %s -p convert-tg-to-affine,lower-affine,convert-scf-to-cf,convert-to-llvm | filecheck %s --check-prefix=LLVM

// convert-tg-to-affine of the gathers by a runtime index tensor, tg.take and
// tg.gather_elements (qidao/passes/kernels/lowering/dynamic_indexing.py): one nest over the
// output; the index is an affine.load of the indices, cast to index, wrapped once if
// negative and clamped into the axis, and the data is read with a memref.load (the
// one non-affine access). The back end takes it as it is (LLVM run line).

// An embedding lookup: rows of the table %w picked by token ids.
// CHECK-LABEL: func.func private @embedding_k0_take(%w: memref<10x4xf32> {llvm.noalias}, %ids: memref<2x3xi64> {llvm.noalias}, %out: memref<2x3x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.take"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[SIZE:.*]] = arith.constant 10 : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.constant 9 : index
// CHECK-NEXT:    affine.for %i0 = 0 to 2 {
// CHECK-NEXT:      affine.for %i1 = 0 to 3 {
// CHECK-NEXT:        affine.for %i2 = 0 to 4 {
// CHECK-NEXT:          %raw = affine.load %ids[%i0, %i1] : memref<2x3xi64>
// CHECK-NEXT:          %idx = arith.index_cast %raw : i64 to index
// CHECK-NEXT:          %neg = arith.cmpi slt, %idx, %[[ZERO]] : index
// CHECK-NEXT:          %up = arith.addi %idx, %[[SIZE]] : index
// CHECK-NEXT:          %wrapped = arith.select %neg, %up, %idx : index
// CHECK-NEXT:          %lo = arith.maxsi %wrapped, %[[ZERO]] : index
// CHECK-NEXT:          %entry = arith.minsi %lo, %[[LAST]] : index
// CHECK-NEXT:          %[[V:.*]] = memref.load %w[%entry, %i2] : memref<10x4xf32>
// CHECK-NEXT:          affine.store %[[V]], %out[%i0, %i1, %i2] : memref<2x3x4xf32>
// CHECK-NEXT:        } {qd.loop = "i2"}
// CHECK-NEXT:      } {qd.loop = "i1"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// The take stays a kernel of its own: fuse groups only elementwise ops with it.
// FUSE-LABEL: func.func @embedding
// FUSE-NEXT:    %e = tg.take %w, %ids axis = 0
// FUSE-NEXT:    %r = tg.relu %e
// LLVM-LABEL: llvm.func @embedding_k0_take(
// LLVM:         %raw = llvm.load %{{.*}} : !llvm.ptr -> i64
// LLVM:         llvm.load %{{.*}} : !llvm.ptr -> f32
func.func @embedding(%w: tensor<10x4xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %e = tg.take %w, %ids axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %r = tg.relu %e : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return %r : tensor<2x3x4xf32>
}

// A rank-0 i32 index on axis 1 of a transposed f64 view: the index is read with an
// empty map, sign-extended by the cast, and the data through its strided layout.
// CHECK-LABEL: func.func private @column_k0_take(%x: memref<3x5xf64, strided<[1, 3]>> {llvm.noalias}, %i: memref<i32> {llvm.noalias}, %out: memref<3xf64> {llvm.noalias})
// CHECK:         arith.constant 5 : index
// CHECK:         affine.for %i0 = 0 to 3 {
// CHECK-NEXT:      %raw = affine.load %i[] : memref<i32>
// CHECK-NEXT:      %idx = arith.index_cast %raw : i32 to index
// CHECK:           %[[V:.*]] = memref.load %x[%i0, %entry] : memref<3x5xf64, strided<[1, 3]>>
// CHECK-NEXT:      affine.store %[[V]], %out[%i0] : memref<3xf64>
func.func @column(%x: tensor<3x5xf64, strided<[1, 3]>>, %i: tensor<i32>) -> tensor<3xf64> {
  %c = tg.take %x, %i axis = 1 : (tensor<3x5xf64, strided<[1, 3]>>, tensor<i32>) -> tensor<3xf64>
  func.return %c : tensor<3xf64>
}

// GatherElements: the index is read at the output's own position, the data at the
// output's position with the axis replaced; the indices may be smaller than the
// data (2 of 3 rows here).
// CHECK-LABEL: func.func private @elements_k0_gather_elements(%x: memref<3x4xi32> {llvm.noalias}, %ids: memref<2x4xi64> {llvm.noalias}, %out: memref<2x4xi32> {llvm.noalias}) attributes {qd.kernel = "tg.gather_elements"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[SIZE:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[LAST:.*]] = arith.constant 2 : index
// CHECK-NEXT:    affine.for %i0 = 0 to 2 {
// CHECK-NEXT:      affine.for %i1 = 0 to 4 {
// CHECK-NEXT:        %raw = affine.load %ids[%i0, %i1] : memref<2x4xi64>
// CHECK:             %entry = arith.minsi %lo, %[[LAST]] : index
// CHECK-NEXT:        %[[V:.*]] = memref.load %x[%entry, %i1] : memref<3x4xi32>
// CHECK-NEXT:        affine.store %[[V]], %out[%i0, %i1] : memref<2x4xi32>
func.func @elements(%x: tensor<3x4xi32>, %ids: tensor<2x4xi64>) -> tensor<2x4xi32> {
  %g = tg.gather_elements %x, %ids axis = 0 : (tensor<3x4xi32>, tensor<2x4xi64>) -> tensor<2x4xi32>
  func.return %g : tensor<2x4xi32>
}

// An empty result reads nothing: the kernel has no loop.
// CHECK-LABEL: func.func private @empty_k0_take(
// CHECK-NEXT:    func.return
func.func @empty(%x: tensor<3x4xf32>, %ids: tensor<0xi64>) -> tensor<3x0xf32> {
  %g = tg.take %x, %ids axis = 1 : (tensor<3x4xf32>, tensor<0xi64>) -> tensor<3x0xf32>
  func.return %g : tensor<3x0xf32>
}
