// RUN: qidao-opt %s -p plan-memory | filecheck %s

// Kernels whose bodies do not matter to a case are declarations; plan-memory only
// looks inside elementwise kernels (to see which argument they store to).

// The docstring's example: exp -> neg -> relu. neg writes in place over exp's
// result, which dies there, so one buffer serves both: neg's arguments lose
// llvm.noalias and neg stores through %in0 (LLVM then sees one pointer read and
// written at one index). exp and relu keep theirs (their other argument is a graph
// input or output).
// CHECK-LABEL: func.func private @inplace_k0_exp
// CHECK-SAME:    (%x: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias})
func.func private @inplace_k0_exp(%x: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.exp"} {
  affine.for %i = 0 to 8 {
    %v = affine.load %x[%i] : memref<8xf32>
    %r = math.exp %v : f32
    affine.store %r, %out[%i] : memref<8xf32>
  }
  func.return
}
// CHECK-LABEL: func.func private @inplace_k1_neg
// CHECK-SAME:    (%in0: memref<8xf32>, %out: memref<8xf32>)
// CHECK:         affine.store %{{.*}}, %in0[%{{.*}}] : memref<8xf32>
// CHECK-LABEL: func.func private @inplace_k2_relu
// CHECK:         affine.store %{{.*}}, %out[%{{.*}}] : memref<8xf32>
func.func private @inplace_k1_neg(%in0: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.neg"} {
  affine.for %i = 0 to 8 {
    %v = affine.load %in0[%i] : memref<8xf32>
    %r = arith.negf %v : f32
    affine.store %r, %out[%i] : memref<8xf32>
  }
  func.return
}
func.func private @inplace_k2_relu(%in0: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 8 {
    %v = affine.load %in0[%i] : memref<8xf32>
    %r = arith.maximumf %v, %zero : f32
    affine.store %r, %out[%i] : memref<8xf32>
  }
  func.return
}
// CHECK-LABEL: func.func @inplace
// CHECK-NEXT:    %slot0 = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NEXT:    func.call @inplace_k0_exp(%x, %slot0)
// CHECK-NEXT:    func.call @inplace_k1_neg(%slot0, %slot0)
// CHECK-NEXT:    func.call @inplace_k2_relu(%slot0, %out0)
// CHECK-NEXT:    memref.dealloc %slot0 : memref<8xf32>
// CHECK-NEXT:    func.return
func.func @inplace(%x: memref<8xf32>, %out0: memref<8xf32>) {
  %0 = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @inplace_k0_exp(%x, %0) : (memref<8xf32>, memref<8xf32>) -> ()
  %1 = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @inplace_k1_neg(%0, %1) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %0 : memref<8xf32>
  func.call @inplace_k2_relu(%1, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %1 : memref<8xf32>
  func.return
}

// In place through a row-major view of the same type (a reshape): relu reads
// %a (6 floats) as 2x3 at exactly the index it writes, so %b takes %a's memory; the
// shared slot is 1-D and the 2x3 buffer a view of it.
func.func private @reshape_k0(memref<6xf32>, memref<6xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @reshape_k1_relu(%in0: memref<2x3xf32> {llvm.noalias}, %out: memref<2x3xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 3 {
      %v = affine.load %in0[%i, %j] : memref<2x3xf32>
      %r = arith.maximumf %v, %zero : f32
      affine.store %r, %out[%i, %j] : memref<2x3xf32>
    }
  }
  func.return
}
func.func private @reshape_k2(memref<2x3xf32>, memref<2x3xf32>) attributes {qd.kernel = "tg.matmul"}
// CHECK-LABEL: func.func private @reshape_k1_relu
// CHECK-SAME:    (%in0: memref<2x3xf32>, %out: memref<2x3xf32>)
// CHECK:         affine.store %{{.*}}, %in0[%{{.*}}, %{{.*}}] : memref<2x3xf32>
// CHECK-LABEL: func.func @reshape
// CHECK-NEXT:    %slot0 = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
// CHECK-NEXT:    func.call @reshape_k0(%x, %slot0)
// CHECK-NEXT:    %v = memref.reinterpret_cast %slot0 to offset: [0], sizes: [2, 3], strides: [3, 1] : memref<6xf32> to memref<2x3xf32>
// CHECK-NEXT:    %b = memref.reinterpret_cast %slot0 to offset: [0], sizes: [2, 3], strides: [3, 1] : memref<6xf32> to memref<2x3xf32>
// CHECK-NEXT:    func.call @reshape_k1_relu(%v, %b)
// CHECK-NEXT:    func.call @reshape_k2(%b, %out0)
// CHECK-NEXT:    memref.dealloc %slot0 : memref<6xf32>
func.func @reshape(%x: memref<6xf32>, %out0: memref<2x3xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<6xf32>
  func.call @reshape_k0(%x, %a) : (memref<6xf32>, memref<6xf32>) -> ()
  %v = memref.reinterpret_cast %a to offset: [0], sizes: [2, 3], strides: [3, 1] : memref<6xf32> to memref<2x3xf32>
  %b = memref.alloc() {alignment = 64 : i64} : memref<2x3xf32>
  func.call @reshape_k1_relu(%v, %b) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
  memref.dealloc %a : memref<6xf32>
  func.call @reshape_k2(%b, %out0) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
  memref.dealloc %b : memref<2x3xf32>
  func.return
}

// Reuse across time: %a (16 floats) is freed before %c (12 floats) is allocated,
// so %c takes %a's slot (best fit); the slot is 1-D, and %c, of another shape, a
// view of it.
// %b overlaps both and keeps its own alloc. The kernels are not elementwise.
func.func private @reuse_k0(memref<16xf32>, memref<16xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @reuse_k1(memref<16xf32>, memref<8xf32>) attributes {qd.kernel = "tg.reduce_sum"}
func.func private @reuse_k2(memref<8xf32>, memref<3x4xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @reuse_k3(memref<3x4xf32>, memref<3x4xf32>) attributes {qd.kernel = "copy"}
// CHECK-LABEL: func.func @reuse
// CHECK-NEXT:    %slot0 = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
// CHECK-NEXT:    func.call @reuse_k0(%x, %slot0)
// CHECK-NEXT:    %b = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NEXT:    func.call @reuse_k1(%slot0, %b)
// CHECK-NEXT:    %c = memref.reinterpret_cast %slot0 to offset: [0], sizes: [3, 4], strides: [4, 1] : memref<16xf32> to memref<3x4xf32>
// CHECK-NEXT:    func.call @reuse_k2(%b, %c)
// CHECK-NEXT:    memref.dealloc %b : memref<8xf32>
// CHECK-NEXT:    func.call @reuse_k3(%c, %out0)
// CHECK-NEXT:    memref.dealloc %slot0 : memref<16xf32>
// CHECK-NEXT:    func.return
func.func @reuse(%x: memref<16xf32>, %out0: memref<3x4xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  func.call @reuse_k0(%x, %a) : (memref<16xf32>, memref<16xf32>) -> ()
  %b = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @reuse_k1(%a, %b) : (memref<16xf32>, memref<8xf32>) -> ()
  memref.dealloc %a : memref<16xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<3x4xf32>
  func.call @reuse_k2(%b, %c) : (memref<8xf32>, memref<3x4xf32>) -> ()
  memref.dealloc %b : memref<8xf32>
  func.call @reuse_k3(%c, %out0) : (memref<3x4xf32>, memref<3x4xf32>) -> ()
  memref.dealloc %c : memref<3x4xf32>
  func.return
}

// A freed slot too small for the next buffer grows instead of a second slot.
func.func private @grow_k0(memref<4xf32>, memref<4xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @grow_k1(memref<4xf32>, memref<8xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @grow_k2(memref<8xf32>, memref<8xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @grow_k3(memref<8xf32>, memref<8xf32>) attributes {qd.kernel = "tg.matmul"}
// CHECK-LABEL: func.func @grow
// CHECK-NEXT:    %slot0 = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NEXT:    %a = memref.reinterpret_cast %slot0 to offset: [0], sizes: [4], strides: [1] : memref<8xf32> to memref<4xf32>
// CHECK:         %b = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK:         func.call @grow_k2(%b, %slot0)
// CHECK:         memref.dealloc %slot0 : memref<8xf32>
// CHECK-NOT:     memref.alloc
func.func @grow(%x: memref<4xf32>, %out0: memref<8xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  func.call @grow_k0(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  %b = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @grow_k1(%a, %b) : (memref<4xf32>, memref<8xf32>) -> ()
  memref.dealloc %a : memref<4xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @grow_k2(%b, %c) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %b : memref<8xf32>
  func.call @grow_k3(%c, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %c : memref<8xf32>
  func.return
}

// Must not fire: %a and %b are both alive at the last call (overlapping
// lifetimes), so each keeps its own buffer; nothing is written in place because
// %a is still read after the first add and the second writes a graph output.
func.func private @overlap_k0(memref<8xf32>, memref<8xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @overlap_k1_add(%a: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.add"} {
  affine.for %i = 0 to 8 {
    %v = affine.load %a[%i] : memref<8xf32>
    %r = arith.addf %v, %v : f32
    affine.store %r, %out[%i] : memref<8xf32>
  }
  func.return
}
func.func private @overlap_k2_add(%a: memref<8xf32> {llvm.noalias}, %b: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.add"} {
  affine.for %i = 0 to 8 {
    %u = affine.load %a[%i] : memref<8xf32>
    %v = affine.load %b[%i] : memref<8xf32>
    %r = arith.addf %u, %v : f32
    affine.store %r, %out[%i] : memref<8xf32>
  }
  func.return
}
// CHECK-LABEL: func.func private @overlap_k1_add
// CHECK-SAME:    {llvm.noalias}, %out: memref<8xf32> {llvm.noalias})
// CHECK-LABEL: func.func @overlap
// CHECK-NOT:     %slot
// CHECK:         %a = memref.alloc()
// CHECK:         %b = memref.alloc()
// CHECK:         func.call @overlap_k1_add(%a, %b)
// CHECK:         func.call @overlap_k2_add(%a, %b, %out0)
// CHECK-NEXT:    memref.dealloc %b
// CHECK-NEXT:    memref.dealloc %a
func.func @overlap(%x: memref<8xf32>, %out0: memref<8xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @overlap_k0(%x, %a) : (memref<8xf32>, memref<8xf32>) -> ()
  %b = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @overlap_k1_add(%a, %b) : (memref<8xf32>, memref<8xf32>) -> ()
  func.call @overlap_k2_add(%a, %b, %out0) : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %b : memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  func.return
}

// Must not fire: graph inputs and outputs are never reused. exp reads the input %x
// (not an intermediate) and relu writes the output %out0 (not an alloc).
func.func private @io_k0_exp(%x: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.exp"} {
  affine.for %i = 0 to 8 {
    %v = affine.load %x[%i] : memref<8xf32>
    %r = math.exp %v : f32
    affine.store %r, %out[%i] : memref<8xf32>
  }
  func.return
}
func.func private @io_k1_relu(%in0: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 8 {
    %v = affine.load %in0[%i] : memref<8xf32>
    %r = arith.maximumf %v, %zero : f32
    affine.store %r, %out[%i] : memref<8xf32>
  }
  func.return
}
// CHECK-LABEL: func.func private @io_k0_exp
// CHECK-SAME:    (%x: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias})
// CHECK-LABEL: func.func private @io_k1_relu
// CHECK-SAME:    (%in0: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias})
// CHECK-LABEL: func.func @io
// CHECK-NEXT:    %0 = memref.alloc()
// CHECK-NEXT:    func.call @io_k0_exp(%x, %0)
// CHECK-NEXT:    func.call @io_k1_relu(%0, %out0)
// CHECK-NEXT:    memref.dealloc %0
func.func @io(%x: memref<8xf32>, %out0: memref<8xf32>) {
  %0 = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @io_k0_exp(%x, %0) : (memref<8xf32>, memref<8xf32>) -> ()
  func.call @io_k1_relu(%0, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %0 : memref<8xf32>
  func.return
}

// Must not fire: a broadcast input is not reused in place. %a (4 floats) is read
// through a stride-0 view as 3x4: its type is not the output's, and writing the
// output over it would clobber elements that later rows still read.
func.func private @bcast_k0(memref<4xf32>, memref<4xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @bcast_k1_add(%a: memref<3x4xf32, strided<[0, 1]>> {llvm.noalias}, %y: memref<3x4xf32> {llvm.noalias}, %out: memref<3x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.add"} {
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 4 {
      %u = affine.load %a[%i, %j] : memref<3x4xf32, strided<[0, 1]>>
      %v = affine.load %y[%i, %j] : memref<3x4xf32>
      %r = arith.addf %u, %v : f32
      affine.store %r, %out[%i, %j] : memref<3x4xf32>
    }
  }
  func.return
}
func.func private @bcast_k2(memref<3x4xf32>, memref<3x4xf32>) attributes {qd.kernel = "tg.matmul"}
// CHECK-LABEL: func.func private @bcast_k1_add
// CHECK-SAME:    %out: memref<3x4xf32> {llvm.noalias})
// CHECK-LABEL: func.func @bcast
// CHECK-NOT:     %slot
// CHECK:         %b = memref.alloc() {alignment = 64 : i64} : memref<3x4xf32>
// CHECK-NEXT:    func.call @bcast_k1_add(%t, %y, %b)
func.func @bcast(%x: memref<4xf32>, %y: memref<3x4xf32>, %out0: memref<3x4xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  func.call @bcast_k0(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  %t = memref.reinterpret_cast %a to offset: [0], sizes: [3, 4], strides: [0, 1] : memref<4xf32> to memref<3x4xf32, strided<[0, 1]>>
  %b = memref.alloc() {alignment = 64 : i64} : memref<3x4xf32>
  func.call @bcast_k1_add(%t, %y, %b) : (memref<3x4xf32, strided<[0, 1]>>, memref<3x4xf32>, memref<3x4xf32>) -> ()
  memref.dealloc %a : memref<4xf32>
  func.call @bcast_k2(%b, %out0) : (memref<3x4xf32>, memref<3x4xf32>) -> ()
  memref.dealloc %b : memref<3x4xf32>
  func.return
}

// Must not fire: a view keeps its source alive. neg is %a's last *direct* use, but
// the transposed view %t reads %a afterwards, so neg may not write over %a.
func.func private @view_k0(memref<2x2xf32>, memref<2x2xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @view_k1_neg(%a: memref<2x2xf32> {llvm.noalias}, %out: memref<2x2xf32> {llvm.noalias}) attributes {qd.kernel = "tg.neg"} {
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 2 {
      %v = affine.load %a[%i, %j] : memref<2x2xf32>
      %r = arith.negf %v : f32
      affine.store %r, %out[%i, %j] : memref<2x2xf32>
    }
  }
  func.return
}
func.func private @view_k2(memref<2x2xf32, strided<[1, 2]>>, memref<2x2xf32>, memref<2x2xf32>) attributes {qd.kernel = "tg.matmul"}
// CHECK-LABEL: func.func private @view_k1_neg
// CHECK-SAME:    (%a: memref<2x2xf32> {llvm.noalias}, %out: memref<2x2xf32> {llvm.noalias})
// CHECK-LABEL: func.func @view
// CHECK-NOT:     %slot
// CHECK:         func.call @view_k1_neg(%a, %b)
// CHECK-NEXT:    func.call @view_k2(%t, %b, %out0)
func.func @view(%x: memref<2x2xf32>, %out0: memref<2x2xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<2x2xf32>
  func.call @view_k0(%x, %a) : (memref<2x2xf32>, memref<2x2xf32>) -> ()
  %t = memref.reinterpret_cast %a to offset: [0], sizes: [2, 2], strides: [1, 2] : memref<2x2xf32> to memref<2x2xf32, strided<[1, 2]>>
  %b = memref.alloc() {alignment = 64 : i64} : memref<2x2xf32>
  func.call @view_k1_neg(%a, %b) : (memref<2x2xf32>, memref<2x2xf32>) -> ()
  func.call @view_k2(%t, %b, %out0) : (memref<2x2xf32, strided<[1, 2]>>, memref<2x2xf32>, memref<2x2xf32>) -> ()
  memref.dealloc %b : memref<2x2xf32>
  memref.dealloc %a : memref<2x2xf32>
  func.return
}

// Must not fire in place: the same buffer also comes in through another argument
// (add(%a, transpose(%a))), so writing over %a would change what the view reads.
func.func private @alias_k0(memref<2x2xf32>, memref<2x2xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @alias_k1_add(%a: memref<2x2xf32> {llvm.noalias}, %t: memref<2x2xf32, strided<[1, 2]>> {llvm.noalias}, %out: memref<2x2xf32> {llvm.noalias}) attributes {qd.kernel = "tg.add"} {
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 2 {
      %u = affine.load %a[%i, %j] : memref<2x2xf32>
      %v = affine.load %t[%i, %j] : memref<2x2xf32, strided<[1, 2]>>
      %r = arith.addf %u, %v : f32
      affine.store %r, %out[%i, %j] : memref<2x2xf32>
    }
  }
  func.return
}
func.func private @alias_k2(memref<2x2xf32>, memref<2x2xf32>) attributes {qd.kernel = "tg.matmul"}
// CHECK-LABEL: func.func @alias
// CHECK-NOT:     %slot
// CHECK:         func.call @alias_k1_add(%a, %t, %b)
func.func @alias(%x: memref<2x2xf32>, %out0: memref<2x2xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<2x2xf32>
  func.call @alias_k0(%x, %a) : (memref<2x2xf32>, memref<2x2xf32>) -> ()
  %t = memref.reinterpret_cast %a to offset: [0], sizes: [2, 2], strides: [1, 2] : memref<2x2xf32> to memref<2x2xf32, strided<[1, 2]>>
  %b = memref.alloc() {alignment = 64 : i64} : memref<2x2xf32>
  func.call @alias_k1_add(%a, %t, %b) : (memref<2x2xf32>, memref<2x2xf32, strided<[1, 2]>>, memref<2x2xf32>) -> ()
  memref.dealloc %a : memref<2x2xf32>
  func.call @alias_k2(%b, %out0) : (memref<2x2xf32>, memref<2x2xf32>) -> ()
  memref.dealloc %b : memref<2x2xf32>
  func.return
}

// Must not fire in place: a kernel called twice keeps llvm.noalias (dropping it
// would change the other call too). Reuse across time still applies: %c takes %a's
// slot, freed before %c is allocated.
func.func private @twice_k0(memref<8xf32>, memref<8xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @twice_relu(%in0: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 8 {
    %v = affine.load %in0[%i] : memref<8xf32>
    %r = arith.maximumf %v, %zero : f32
    affine.store %r, %out[%i] : memref<8xf32>
  }
  func.return
}
func.func private @twice_k3(memref<8xf32>, memref<8xf32>) attributes {qd.kernel = "copy"}
// CHECK-LABEL: func.func private @twice_relu
// CHECK-SAME:    (%in0: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias})
// CHECK-LABEL: func.func @twice
// CHECK-NEXT:    %slot0 = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK-NEXT:    func.call @twice_k0(%x, %slot0)
// CHECK-NEXT:    %b = memref.alloc()
// CHECK-NEXT:    func.call @twice_relu(%slot0, %b)
// CHECK-NEXT:    func.call @twice_relu(%b, %slot0)
// CHECK-NEXT:    memref.dealloc %b
// CHECK-NEXT:    func.call @twice_k3(%slot0, %out0)
// CHECK-NEXT:    memref.dealloc %slot0
func.func @twice(%x: memref<8xf32>, %out0: memref<8xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @twice_k0(%x, %a) : (memref<8xf32>, memref<8xf32>) -> ()
  %b = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @twice_relu(%a, %b) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %a : memref<8xf32>
  %c = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @twice_relu(%b, %c) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %b : memref<8xf32>
  func.call @twice_k3(%c, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %c : memref<8xf32>
  func.return
}

// Must not fire: a buffer used by something other than calls, views and one
// dealloc (here a store by the host itself) is left alone.
func.func private @other_k0(memref<8xf32>, memref<8xf32>) attributes {qd.kernel = "tg.matmul"}
func.func private @other_k1(memref<8xf32>, memref<8xf32>) attributes {qd.kernel = "tg.matmul"}
// CHECK-LABEL: func.func @other
// CHECK-NOT:     %slot
// CHECK:         %a = memref.alloc()
// CHECK:         %b = memref.alloc()
func.func @other(%x: memref<8xf32>, %out0: memref<8xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %i = arith.constant 0 : index
  memref.store %zero, %a[%i] : memref<8xf32>
  func.call @other_k0(%x, %a) : (memref<8xf32>, memref<8xf32>) -> ()
  %b = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  func.call @other_k1(%a, %b) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %a : memref<8xf32>
  func.call @other_k0(%b, %out0) : (memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %b : memref<8xf32>
  func.return
}
