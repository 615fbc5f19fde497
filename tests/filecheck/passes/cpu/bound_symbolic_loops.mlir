// RUN: qidao-opt %s -p bound-symbolic-loops | filecheck %s
// RUN: qidao-opt %s -p 'split{kernel="k" loop="i" factor=8},bound-symbolic-loops' | filecheck %s --check-prefix=SPLIT
// RUN: not qidao-opt %s -p 'split{kernel="k" loop="i" factor=8},unroll{kernel="k" loop="i_o" factor=2}' 2>&1 | filecheck %s --check-prefix=UNROLL
// RUN: not qidao-opt %s -p 'split{kernel="r" loop="r" factor=8}' 2>&1 | filecheck %s --check-prefix=EXACT

// The host loads the size of seq from its symbolic_dims input and passes it to
// each kernel that lists seq in qd.sizes; the kernel's tagged loops run to it.
// CHECK-LABEL: func.func private @k(
// CHECK-SAME:    %seq: index {qd.symbolic = "seq"})
// CHECK:         affine.for %i = 0 to %seq {
// CHECK:           affine.for %j = 0 to 4 {
// CHECK-LABEL: func.func private @r(
// CHECK:         affine.for %r = 0 to %seq iter_args(
// Must not fire: a kernel without qd.sizes keeps its signature and bounds.
// CHECK-LABEL: func.func private @static(%x: memref<128x4xf32>)
// CHECK:         affine.for %i = 0 to 128 {
// A declaration (a part of the module lowered in another process) takes the size.
// CHECK-LABEL: func.func private @elsewhere(memref<128x4xf32>, index) -> ()
// CHECK-LABEL: func.func @main(
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[N:.*]] = memref.load %symbolic_dims[%[[C0]]] : memref<1xi64>
// CHECK-NEXT:    %seq = arith.index_cast %[[N]] : i64 to index
// CHECK:         func.call @k(%x, %out0, %seq)
// CHECK:         func.call @r(%out0, %out1, %seq)
// CHECK:         func.call @static(%out0)
// CHECK:         func.call @elsewhere(%out0, %seq)

// split of a symbolic loop keeps whole tiles: the outer loop runs ceildiv(seq, 8).
// SPLIT:       affine.for %i_o = 0 to affine_map<()[s0] -> ((s0 ceildiv 8))>()[%seq] {
// SPLIT-NEXT:    affine.for %i_i = 0 to 8 {

// UNROLL: unroll: loop 'i_o' in kernel 'k': it runs to the size of the symbolic dimension 'seq', known only at run time, and unroll needs a constant trip count

// EXACT: split: loop 'r' in kernel 'r': it reduces over the symbolic dimension 'seq', so it must run exactly the call's size

func.func private @k(%x: memref<128x4xf32>, %out: memref<128x4xf32>) attributes {qd.kernel = "tg.tanh", qd.sizes = {seq = 128 : i64}} {
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 4 {
      %0 = affine.load %x[%i, %j] : memref<128x4xf32>
      %1 = math.tanh %0 : f32
      affine.store %1, %out[%i, %j] : memref<128x4xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i", qd.symbolic = "seq", qd.trip = affine_map<()[s0] -> (s0)>}
  func.return
}
func.func private @r(%x: memref<128x4xf32>, %out: memref<4xf32>) attributes {qd.kernel = "tg.reduce_sum", qd.sizes = {seq = 128 : i64}} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %j = 0 to 4 {
    %s = affine.for %r = 0 to 128 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%r, %j] : memref<128x4xf32>
      %a = arith.addf %acc, %v : f32
      affine.yield %a : f32
    } {qd.loop = "r", qd.symbolic = "seq", qd.trip = affine_map<()[s0] -> (s0)>, qd.exact}
    affine.store %s, %out[%j] : memref<4xf32>
  } {qd.loop = "j"}
  func.return
}
func.func private @static(%x: memref<128x4xf32>) attributes {qd.kernel = "tg.relu"} {
  affine.for %i = 0 to 128 {
  } {qd.loop = "i"}
  func.return
}
func.func private @elsewhere(memref<128x4xf32>) attributes {qd.sizes = {seq = 128 : i64}}
func.func @main(%x: memref<128x4xf32>, %symbolic_dims: memref<1xi64>, %out0: memref<128x4xf32>, %out1: memref<4xf32>) attributes {qd.input_names = ["x", "symbolic_dims"], qd.output_names = ["y", "s"], qd.dims = {seq = [1 : i64, 100 : i64, 128 : i64]}, qd.dim_labels = [["seq", ""], [""]], qd.num_inputs = 2 : i64} {
  func.call @k(%x, %out0) : (memref<128x4xf32>, memref<128x4xf32>) -> ()
  func.call @r(%out0, %out1) : (memref<128x4xf32>, memref<4xf32>) -> ()
  func.call @static(%out0) : (memref<128x4xf32>) -> ()
  func.call @elsewhere(%out0) : (memref<128x4xf32>) -> ()
  func.return
}
