// RUN: qidao-opt %s -p convert-to-llvm | filecheck %s

// i1 elements in memory are NumPy's bools: one byte each, 0 or 1. A load reads the
// byte and compares it with 0 (so any nonzero byte is true), a store writes the
// zero-extended byte, the address steps by bytes, and an i1 global holds bytes.

// CHECK-LABEL: llvm.func @bool_load_store(%a: !llvm.ptr, %b: !llvm.ptr, %i: i64)
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0 : i8) : i8
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[BYTE:.*]] = llvm.load %[[P]] : !llvm.ptr -> i8
// CHECK-NEXT:    %v = llvm.icmp "ne" %[[BYTE]], %[[ZERO]] : i8
// CHECK-NEXT:    %[[Q:.*]] = llvm.getelementptr inbounds %b[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[OUT:.*]] = llvm.zext %v : i1 to i8
// CHECK-NEXT:    llvm.store %[[OUT]], %[[Q]] : i8, !llvm.ptr
// CHECK-NEXT:    llvm.return
func.func @bool_load_store(%a: memref<4xi1>, %b: memref<4xi1>, %i: index) {
  %v = memref.load %a[%i] : memref<4xi1>
  memref.store %v, %b[%i] : memref<4xi1>
  func.return
}

// A bool global is an array of bytes 0 and 1 (the parser keeps `true` as 0xff).
// CHECK: llvm.mlir.global internal constant @mask(dense<[1, 0, 1]> : tensor<3xi8>) {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<3 x i8>
"memref.global"() <{sym_name = "mask", type = memref<3xi1>, initial_value = dense<[true, false, true]> : tensor<3xi1>, sym_visibility = "private", constant, alignment = 64 : i64}> : () -> ()

// An empty global holds one unused zero (LLVM arrays are not empty here).
// CHECK: llvm.mlir.global internal constant @empty(dense<0.000000e+00> : tensor<1xf32>) {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<1 x f32>
"memref.global"() <{sym_name = "empty", type = memref<0xf32>, initial_value = dense<> : tensor<0xf32>, sym_visibility = "private", constant, alignment = 64 : i64}> : () -> ()

// A strided bool copy is an element loop over bytes.
// CHECK-LABEL: llvm.func @bool_copy(
// CHECK:         %[[BYTE:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i8
// CHECK:         %[[V:.*]] = llvm.icmp "ne" %[[BYTE]], %{{.*}} : i8
// CHECK:         %[[OUT:.*]] = llvm.zext %[[V]] : i1 to i8
// CHECK-NEXT:    llvm.store %[[OUT]], %{{.*}} : i8, !llvm.ptr
func.func @bool_copy(%s: memref<2x3xi1, strided<[1, 2]>>, %d: memref<2x3xi1>) {
  "memref.copy"(%s, %d) : (memref<2x3xi1, strided<[1, 2]>>, memref<2x3xi1>) -> ()
  func.return
}
