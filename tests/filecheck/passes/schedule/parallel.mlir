// RUN: qidao-opt %s -p 'parallel{kernel="docstring" loop="i"},parallel{kernel="matmul" loop="i"},parallel{kernel="tiled" loop="i_o"},parallel{kernel="strided" loop="i"},parallel{kernel="private" loop="i"},parallel{kernel="in_place" loop="i"}' | filecheck %s
// RUN: not qidao-opt %s -p 'parallel{kernel="reduction" loop="j"}' 2>&1 | filecheck %s --check-prefix=REDUCTION
// RUN: not qidao-opt %s -p 'parallel{kernel="no_iv" loop="i"}' 2>&1 | filecheck %s --check-prefix=NO-IV
// RUN: not qidao-opt %s -p 'parallel{kernel="matmul" loop="k"}' 2>&1 | filecheck %s --check-prefix=MATMUL-K
// RUN: not qidao-opt %s -p 'parallel{kernel="shifted" loop="i"}' 2>&1 | filecheck %s --check-prefix=SHIFTED
// RUN: not qidao-opt %s -p 'parallel{kernel="overlap" loop="i"}' 2>&1 | filecheck %s --check-prefix=OVERLAP
// RUN: not qidao-opt %s -p 'parallel{kernel="broadcast_out" loop="i"}' 2>&1 | filecheck %s --check-prefix=BROADCAST
// RUN: not qidao-opt %s -p 'parallel{kernel="call" loop="i"}' 2>&1 | filecheck %s --check-prefix=CALL
// RUN: not qidao-opt %s -p 'parallel{kernel="docstring" loop="i"},parallel{kernel="docstring" loop="j"}' 2>&1 | filecheck %s --check-prefix=NESTED
// RUN: not qidao-opt %s -p 'parallel{kernel="docstring" loop="q"}' 2>&1 | filecheck %s --check-prefix=NO-LOOP
// RUN: not qidao-opt %s -p 'parallel{kernel="nope" loop="i"}' 2>&1 | filecheck %s --check-prefix=NO-KERNEL

// The docstring example: rows are independent; only the named loop is marked.
// CHECK-LABEL: func.func @docstring
// CHECK:           } {qd.loop = "j"}
// CHECK-NEXT:    } {qd.loop = "i", qd.parallel}
func.func @docstring(%x: memref<64x32xf32>, %y: memref<64x32xf32>) attributes {qd.kernel = "tg.relu"} {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      %v = affine.load %x[%i, %j] : memref<64x32xf32>
      affine.store %v, %y[%i, %j] : memref<64x32xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// A matmul's i loop: %out[i, j] is read and written at the same row i.
// The k and j loops, and the init nest, must not be marked.
// CHECK-LABEL: func.func @matmul
// CHECK:         } {qd.loop = "i_init"}
// CHECK:             } {qd.loop = "j"}
// CHECK-NEXT:      } {qd.loop = "k"}
// CHECK-NEXT:    } {qd.loop = "i", qd.parallel}
func.func @matmul(%x: memref<8x4xf32> {llvm.noalias}, %w: memref<4x8xf32> {llvm.noalias}, %out: memref<8x8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  %zero = arith.constant 0.0 : f32
  affine.for %i_init = 0 to 8 {
    affine.for %j_init = 0 to 8 {
      affine.store %zero, %out[%i_init, %j_init] : memref<8x8xf32>
    } {qd.loop = "j_init"}
  } {qd.loop = "i_init"}
  affine.for %i = 0 to 8 {
    affine.for %k = 0 to 4 {
      %a = affine.load %x[%i, %k] : memref<8x4xf32>
      affine.for %j = 0 to 8 {
        %b = affine.load %w[%k, %j] : memref<4x8xf32>
        %c = affine.load %out[%i, %j] : memref<8x8xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %out[%i, %j] : memref<8x8xf32>
      } {qd.loop = "j"}
    } {qd.loop = "k"}
  } {qd.loop = "i"}
  func.return
}

// After split: %y[4 * i_o + i_i] with 0 <= i_i <= 3 gives each i_o its own 4 elements.
// CHECK-LABEL: func.func @tiled
// CHECK:         } {qd.loop = "i_o", qd.parallel}
func.func @tiled(%x: memref<10xf32> {llvm.noalias}, %y: memref<10xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  affine.for %i_o = 0 to 3 {
    affine.for %i_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%i_o) {
      %v = affine.load %x[((%i_o * 4) + %i_i)] : memref<10xf32>
      affine.store %v, %y[((%i_o * 4) + %i_i)] : memref<10xf32>
    } {qd.loop = "i_i"}
  } {qd.loop = "i_o"}
  func.return
}

// %y[2 * i] and %y[2 * i + 1]: both in the window [2 * i, 2 * i + 1] of iteration i.
// CHECK-LABEL: func.func @strided
// CHECK:         } {qd.loop = "i", qd.parallel}
func.func @strided(%x: memref<16xf32> {llvm.noalias}, %y: memref<32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.repeat"} {
  affine.for %i = 0 to 16 {
    %v = affine.load %x[%i] : memref<16xf32>
    affine.store %v, %y[2 * %i] : memref<32xf32>
    affine.store %v, %y[2 * %i + 1] : memref<32xf32>
  } {qd.loop = "i"}
  func.return
}

// A buffer allocated inside the loop is private to each iteration.
// CHECK-LABEL: func.func @private
// CHECK:         } {qd.loop = "i", qd.parallel}
func.func @private(%x: memref<8x4xf32> {llvm.noalias}, %y: memref<8x4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.copy"} {
  affine.for %i = 0 to 8 {
    %tmp = memref.alloca() : memref<4xf32>
    affine.for %j = 0 to 4 {
      %v = affine.load %x[%i, %j] : memref<8x4xf32>
      affine.store %v, %tmp[0] : memref<4xf32>
      %w = affine.load %tmp[0] : memref<4xf32>
      affine.store %w, %y[%i, %j] : memref<8x4xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// plan-memory's in-place kernels: arguments without llvm.noalias may be one buffer;
// read and written at the same index, that is still independent.
// CHECK-LABEL: func.func @in_place
// CHECK:         } {qd.loop = "i", qd.parallel}
func.func @in_place(%x: memref<16xf32>, %y: memref<16xf32>) attributes {qd.kernel = "tg.neg"} {
  affine.for %i = 0 to 16 {
    %v = affine.load %x[%i] : memref<16xf32>
    %n = arith.negf %v : f32
    affine.store %n, %y[%i] : memref<16xf32>
  } {qd.loop = "i"}
  func.return
}

// Must not fire: a reduction carried in iter_args.
// REDUCTION: IllegalScheduleError: parallel: loop 'j' in kernel 'reduction': it carries values from one iteration to the next (iter_args: a reduction)
func.func @reduction(%a: memref<16xf32> {llvm.noalias}, %o: memref<f32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_sum"} {
  %zero = arith.constant 0.0 : f32
  %r = affine.for %j = 0 to 16 iter_args(%acc = %zero) -> (f32) {
    %x = affine.load %a[%j] : memref<16xf32>
    %s = arith.addf %acc, %x : f32
    affine.yield %s : f32
  } {qd.loop = "j"}
  affine.store %r, %o[] : memref<f32>
  func.return
}

// Must not fire: every iteration writes the same element.
// NO-IV: IllegalScheduleError: parallel: loop 'i' in kernel 'no_iv': every iteration writes %y[0]: the indices do not depend on 'i', so iterations write the same elements of %y
func.func @no_iv(%x: memref<16xf32> {llvm.noalias}, %y: memref<1xf32> {llvm.noalias}) attributes {qd.kernel = "tg.last"} {
  affine.for %i = 0 to 16 {
    %v = affine.load %x[%i] : memref<16xf32>
    affine.store %v, %y[0] : memref<1xf32>
  } {qd.loop = "i"}
  func.return
}

// Must not fire: the matmul's k loop accumulates into %out[i, j] on every k.
// MATMUL-K: IllegalScheduleError: parallel: loop 'k' in kernel 'matmul': every iteration writes %out[%i, %j]: the indices do not depend on 'k'

// Must not fire: iteration i reads %y[i + 1], which iteration i + 1 writes.
// SHIFTED: IllegalScheduleError: parallel: loop 'i' in kernel 'shifted': iterations may touch the same element of the written buffer %y: no index dimension reads `a * i + c` with the same a and c in every access of %y in the loop (writes: %y[%i])
func.func @shifted(%y: memref<17xf32> {llvm.noalias}) attributes {qd.kernel = "tg.shift"} {
  affine.for %i = 0 to 16 {
    %v = affine.load %y[%i + 1] : memref<17xf32>
    affine.store %v, %y[%i] : memref<17xf32>
  } {qd.loop = "i"}
  func.return
}

// Must not fire: %y[i + j] with 0 <= j <= 3 overlaps the next iterations' elements.
// OVERLAP: IllegalScheduleError: parallel: loop 'i' in kernel 'overlap': iterations may touch the same element of the written buffer %y
func.func @overlap(%x: memref<16xf32> {llvm.noalias}, %y: memref<20xf32> {llvm.noalias}) attributes {qd.kernel = "tg.window"} {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 4 {
      %v = affine.load %x[%i] : memref<16xf32>
      affine.store %v, %y[%i + %j] : memref<20xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// Must not fire: a written layout with stride 0 sends every i to the same element.
// BROADCAST: IllegalScheduleError: parallel: loop 'i' in kernel 'broadcast_out': %y is written, and its layout memref<16xf32, strided<[0]>> maps different indices to the same element
func.func @broadcast_out(%x: memref<16xf32> {llvm.noalias}, %y: memref<16xf32, strided<[0]>> {llvm.noalias}) attributes {qd.kernel = "tg.bad"} {
  affine.for %i = 0 to 16 {
    %v = affine.load %x[%i] : memref<16xf32>
    affine.store %v, %y[%i] : memref<16xf32, strided<[0]>>
  } {qd.loop = "i"}
  func.return
}

// Must not fire: a call may touch any memory.
// CALL: IllegalScheduleError: parallel: loop 'i' in kernel 'call': it contains 'func.call', whose effects on memory the parallel check does not know
func.func private @side_effect(index) -> ()
func.func @call(%y: memref<16xf32> {llvm.noalias}) attributes {qd.kernel = "tg.call"} {
  affine.for %i = 0 to 16 {
    func.call @side_effect(%i) : (index) -> ()
  } {qd.loop = "i"}
  func.return
}

// NESTED: IllegalScheduleError: parallel: loop 'j' in kernel 'docstring': it is inside the parallel loop 'i' (nested parallel loops are not supported)
// NO-LOOP: LoopNotFoundError: parallel: loop 'q' in kernel 'docstring': no such loop; the kernel's loops are: i, j
// NO-KERNEL: KernelNotFoundError: parallel: loop 'i' in kernel 'nope': no such kernel
