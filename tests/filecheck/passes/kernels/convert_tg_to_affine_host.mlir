// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s
// RUN: qidao-opt %s -p convert-tg-to-affine | filecheck %s --check-prefix=GLOBALS

// convert-tg-to-affine's host side: what becomes a global, a view or a kernel, and
// which buffer each kernel call writes.

// A non-splat constant becomes a private memref.global named after its function
// (the module's only global), which the host reads with memref.get_global and
// passes to the kernel as a buffer.
// GLOBALS:     "memref.global"() <{sym_name = "nonsplat_cst0",
// GLOBALS-NOT: memref.global
// CHECK:       builtin.module {
// CHECK-NEXT:  "memref.global"() <{sym_name = "nonsplat_cst0", type = memref<2xf32>, initial_value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>, sym_visibility = "private", constant, alignment = 64 : i64}> : () -> ()
// CHECK-NEXT:  func.func private @nonsplat_k0_add(%x: memref<2xf32> {llvm.noalias}, %c: memref<2xf32> {llvm.noalias}, %out: memref<2xf32> {llvm.noalias}) attributes {qd.kernel = "tg.add"} {
// CHECK-NEXT:    affine.for %i0 = 0 to 2 {
// CHECK-NEXT:      %[[X:.*]] = affine.load %x[%i0] : memref<2xf32>
// CHECK-NEXT:      %[[C:.*]] = affine.load %c[%i0] : memref<2xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[X]], %[[C]] : f32
// CHECK-NEXT:      affine.store %[[S]], %out[%i0] : memref<2xf32>
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @nonsplat(%x: memref<2xf32>, %out0: memref<2xf32>) attributes {qd.num_inputs = 1 : i64} {
// CHECK-NEXT:    %[[G:.*]] = memref.get_global @nonsplat_cst0 : memref<2xf32>
// CHECK-NEXT:    func.call @nonsplat_k0_add(%x, %[[G]], %out0)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @nonsplat(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = tg.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// Views make no kernels, and outputs copy: the transpose returned as it is is a
// reinterpret_cast that a copy kernel writes into %out0; relu writes its first
// output %out1 directly, and a second copy kernel fills %out2 from it. Three
// kernels, no alloc.
// CHECK-LABEL: func.func private @views_and_copies_k0_relu(%a: memref<2x3xf32> {llvm.noalias}, %out: memref<2x3xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %i0 = 0 to 2 {
// CHECK-NEXT:      affine.for %i1 = 0 to 3 {
// CHECK-NEXT:        %[[X:.*]] = affine.load %a[%i0, %i1] : memref<2x3xf32>
// CHECK-NEXT:        %[[R:.*]] = arith.maximumf %[[X]], %[[ZERO]] : f32
// CHECK-NEXT:        affine.store %[[R]], %out[%i0, %i1] : memref<2x3xf32>
// CHECK-NEXT:      } {qd.loop = "i1"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @views_and_copies_k1_copy(%t: memref<3x2xf32, strided<[1, 3]>> {llvm.noalias}, %out: memref<3x2xf32> {llvm.noalias}) attributes {qd.kernel = "copy"} {
// CHECK-NEXT:    affine.for %i0 = 0 to 3 {
// CHECK-NEXT:      affine.for %i1 = 0 to 2 {
// CHECK-NEXT:        %[[V:.*]] = affine.load %t[%i0, %i1] : memref<3x2xf32, strided<[1, 3]>>
// CHECK-NEXT:        affine.store %[[V]], %out[%i0, %i1] : memref<3x2xf32>
// CHECK-NEXT:      } {qd.loop = "i1"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @views_and_copies_k2_copy(%r: memref<2x3xf32> {llvm.noalias}, %out: memref<2x3xf32> {llvm.noalias}) attributes {qd.kernel = "copy"} {
// CHECK-NEXT:    affine.for %i0 = 0 to 2 {
// CHECK-NEXT:      affine.for %i1 = 0 to 3 {
// CHECK-NEXT:        %[[W:.*]] = affine.load %r[%i0, %i1] : memref<2x3xf32>
// CHECK-NEXT:        affine.store %[[W]], %out[%i0, %i1] : memref<2x3xf32>
// CHECK-NEXT:      } {qd.loop = "i1"}
// CHECK-NEXT:    } {qd.loop = "i0"}
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @views_and_copies(%a: memref<2x3xf32>, %out0: memref<3x2xf32>, %out1: memref<2x3xf32>, %out2: memref<2x3xf32>) attributes {qd.num_inputs = 1 : i64} {
// CHECK-NEXT:    %t = memref.reinterpret_cast %a to offset: [0], sizes: [3, 2], strides: [1, 3] : memref<2x3xf32> to memref<3x2xf32, strided<[1, 3]>>
// CHECK-NEXT:    func.call @views_and_copies_k0_relu(%a, %out1)
// CHECK-NEXT:    func.call @views_and_copies_k1_copy(%t, %out0)
// CHECK-NEXT:    func.call @views_and_copies_k2_copy(%out1, %out2)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
func.func @views_and_copies(%a: tensor<2x3xf32>) -> (tensor<3x2xf32, strided<[1, 3]>>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %t = tg.transpose %a perm = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32, strided<[1, 3]>>
  %r = tg.relu %a : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %t, %r, %r : tensor<3x2xf32, strided<[1, 3]>>, tensor<2x3xf32>, tensor<2x3xf32>
}

// Every graph function of the module is lowered, each right after its own kernels.
// CHECK-LABEL: func.func private @first_k0_exp(
// CHECK:           math.exp
// CHECK:         func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @first(%a: memref<2x3xf32>, %out0: memref<2x3xf32>) attributes {qd.num_inputs = 1 : i64} {
// CHECK-NEXT:    func.call @first_k0_exp(%a, %out0)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @second_k0_neg(
// CHECK:           arith.negf
// CHECK:         func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func @second(%a: memref<2x3xf32>, %out0: memref<2x3xf32>) attributes {qd.num_inputs = 1 : i64} {
// CHECK-NEXT:    func.call @second_k0_neg(%a, %out0)
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// CHECK-NEXT:  }
func.func @first(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = tg.exp %a : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
func.func @second(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = tg.neg %a : tensor<2x3xf32> -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
