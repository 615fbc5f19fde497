// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s
// RUN: qidao-opt %s -p convert-tg-to-affine,lower-affine,convert-scf-to-cf,convert-to-llvm | filecheck %s --check-prefix=LLVM

// tg.nonzero_indices lowers to one kernel: the output zero-filled, then the
// entries walked in row-major order with the running count as an iter_arg, each
// writing its position into column %count (select: unchanged when the entry is
// zero) and adding 1 to the count when it is not. Floats compare `une` (NaN
// counts, -0.0 does not); integers `ne`.

// CHECK-LABEL: func.func private @floats_k0_nonzero_indices(%x: memref<3x4xf32> {llvm.noalias}, %out: memref<2x12xi64> {llvm.noalias})
// CHECK:       affine.for %d = 0 to 2 {
// CHECK-NEXT:    affine.for %c = 0 to 12 {
// CHECK-NEXT:      affine.store %{{.*}}, %out[%d, %c] : memref<2x12xi64>
// CHECK:       affine.for %i0 = 0 to 3 iter_args(%[[C0:.*]] = %{{.*}}) -> (index) {
// CHECK-NEXT:    affine.for %i1 = 0 to 4 iter_args(%[[C:.*]] = %[[C0]]) -> (index) {
// CHECK-NEXT:      %[[X:.*]] = affine.load %x[%i0, %i1] : memref<3x4xf32>
// CHECK-NEXT:      %[[NZ:.*]] = arith.cmpf une, %[[X]], %{{.*}} : f32
// CHECK-NEXT:      %[[OLD0:.*]] = memref.load %out[%{{.*}}, %[[C]]] : memref<2x12xi64>
// CHECK-NEXT:      %[[I0:.*]] = arith.index_cast %i0 : index to i64
// CHECK-NEXT:      %[[NEW0:.*]] = arith.select %[[NZ]], %[[I0]], %[[OLD0]] : i64
// CHECK-NEXT:      memref.store %[[NEW0]], %out[%{{.*}}, %[[C]]] : memref<2x12xi64>
// CHECK:           %[[ONE:.*]] = arith.select %[[NZ]], %{{.*}}, %{{.*}} : index
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addi %[[C]], %[[ONE]] : index
// CHECK-NEXT:      affine.yield %[[NEXT]] : index
// LLVM-LABEL: llvm.func @floats_k0_nonzero_indices
// LLVM:       llvm.fcmp "une"
func.func @floats(%x: tensor<3x4xf32>) -> tensor<2x12xi64> {
  %p = tg.nonzero_indices %x : tensor<3x4xf32> -> tensor<2x12xi64>
  func.return %p : tensor<2x12xi64>
}

// An integer (here bool) input compares `ne` with 0.
// CHECK-LABEL: func.func private @bools_k0_nonzero_indices(%x: memref<5xi1> {llvm.noalias}, %out: memref<1x5xi64> {llvm.noalias})
// CHECK:         arith.cmpi ne, %{{.*}}, %{{.*}} : i1
func.func @bools(%x: tensor<5xi1>) -> tensor<1x5xi64> {
  %p = tg.nonzero_indices %x : tensor<5xi1> -> tensor<1x5xi64>
  func.return %p : tensor<1x5xi64>
}

// An empty input: no column to fill, an empty kernel.
// CHECK-LABEL: func.func private @empty_k0_nonzero_indices(%x: memref<0x3xf32> {llvm.noalias}, %out: memref<2x0xi64> {llvm.noalias})
// CHECK-NEXT:    func.return
func.func @empty(%x: tensor<0x3xf32>) -> tensor<2x0xi64> {
  %p = tg.nonzero_indices %x : tensor<0x3xf32> -> tensor<2x0xi64>
  func.return %p : tensor<2x0xi64>
}
