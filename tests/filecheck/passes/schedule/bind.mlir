// RUN: qidao-opt %s -p 'bind{kernel="docstring" loop="i" axis="blockIdx.x"},bind{kernel="docstring" loop="j" axis="threadIdx.x"},bind{kernel="matmul" loop="i" axis="blockIdx.x"},bind{kernel="matmul" loop="j" axis="threadIdx.x"},bind{kernel="tiled" loop="i_o" axis="blockIdx.x"},bind{kernel="tiled" loop="i_i" axis="threadIdx.x"},bind{kernel="cpu" loop="i" axis="threads"}' | filecheck %s
// RUN: not qidao-opt %s -p 'bind{kernel="docstring" loop="i" axis="warp"}' 2>&1 | filecheck %s --check-prefix=AXIS
// RUN: not qidao-opt %s -p 'bind{kernel="docstring" loop="i" axis="blockIdx.x"},bind{kernel="docstring" loop="j" axis="blockIdx.x"}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not qidao-opt %s -p 'bind{kernel="docstring" loop="i" axis="threadIdx.x"},bind{kernel="docstring" loop="j" axis="blockIdx.x"}' 2>&1 | filecheck %s --check-prefix=ORDER
// RUN: not qidao-opt %s -p 'bind{kernel="big" loop="i" axis="threadIdx.x"}' 2>&1 | filecheck %s --check-prefix=LIMIT
// RUN: not qidao-opt %s -p 'bind{kernel="reduction" loop="j" axis="threadIdx.x"}' 2>&1 | filecheck %s --check-prefix=REDUCTION
// RUN: not qidao-opt %s -p 'bind{kernel="skewed" loop="j" axis="threadIdx.x"}' 2>&1 | filecheck %s --check-prefix=SKEWED
// RUN: not qidao-opt %s -p 'bind{kernel="gather" loop="i" axis="blockIdx.x"},bind{kernel="gather" loop="j" axis="threadIdx.x"}' 2>&1 | filecheck %s --check-prefix=OUTSIDE
// RUN: not qidao-opt %s -p 'bind{kernel="docstring" loop="i" axis="blockIdx.x"},bind{kernel="docstring" loop="j" axis="threads"}' 2>&1 | filecheck %s --check-prefix=MIX
// RUN: not qidao-opt %s -p 'bind{kernel="docstring" loop="q" axis="blockIdx.x"}' 2>&1 | filecheck %s --check-prefix=NO-LOOP

// The docstring example: a launch of 64 blocks of 32 threads.
// CHECK-LABEL: func.func @docstring
// CHECK:           } {qd.loop = "j", qd.bind = "threadIdx.x"}
// CHECK-NEXT:    } {qd.loop = "i", qd.bind = "blockIdx.x"}
func.func @docstring(%x: memref<64x32xf32>, %y: memref<64x32xf32>) attributes {qd.kernel = "tg.relu"} {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      %v = affine.load %x[%i, %j] : memref<64x32xf32>
      affine.store %v, %y[%i, %j] : memref<64x32xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// A matmul's i to blocks, j to threads inside the serial k: each thread owns
// %out[i, j] for every k. The init nest is another launch and stays unbound here.
// CHECK-LABEL: func.func @matmul
// CHECK:         } {qd.loop = "i_init"}
// CHECK:             } {qd.loop = "j", qd.bind = "threadIdx.x"}
// CHECK-NEXT:      } {qd.loop = "k"}
// CHECK-NEXT:    } {qd.loop = "i", qd.bind = "blockIdx.x"}
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

// After split: the inner loop's extent is the constant of its min bound (4
// threads); the other result becomes a guard in the CUDA C.
// CHECK-LABEL: func.func @tiled
// CHECK:           } {qd.loop = "i_i", qd.bind = "threadIdx.x"}
// CHECK-NEXT:    } {qd.loop = "i_o", qd.bind = "blockIdx.x"}
func.func @tiled(%x: memref<10xf32> {llvm.noalias}, %y: memref<10xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  affine.for %i_o = 0 to 3 {
    affine.for %i_i = 0 to min affine_map<(d0) -> (4, d0 * -4 + 10)>(%i_o) {
      %v = affine.load %x[%i_o * 4 + %i_i] : memref<10xf32>
      affine.store %v, %y[%i_o * 4 + %i_i] : memref<10xf32>
    } {qd.loop = "i_i"}
  } {qd.loop = "i_o"}
  func.return
}

// axis "threads" is the parallel pass: the same qd.parallel mark.
// CHECK-LABEL: func.func @cpu
// CHECK:         } {qd.loop = "i", qd.parallel}
func.func @cpu(%x: memref<16xf32>, %y: memref<16xf32>) attributes {qd.kernel = "tg.relu"} {
  affine.for %i = 0 to 16 {
    %v = affine.load %x[%i] : memref<16xf32>
    affine.store %v, %y[%i] : memref<16xf32>
  } {qd.loop = "i"}
  func.return
}

// 2048 threads do not fit in a block.
// CHECK-LABEL: func.func @big
// CHECK-NOT:     qd.bind
func.func @big(%x: memref<2048xf32>, %y: memref<2048xf32>) attributes {qd.kernel = "tg.relu"} {
  affine.for %i = 0 to 2048 {
    %v = affine.load %x[%i] : memref<2048xf32>
    affine.store %v, %y[%i] : memref<2048xf32>
  } {qd.loop = "i"}
  func.return
}

// A row sum: j carries the sum (iter_args), it cannot be spread over threads.
// CHECK-LABEL: func.func @reduction
// CHECK-NOT:     qd.bind
func.func @reduction(%x: memref<4x8xf32>, %y: memref<4xf32>) attributes {qd.kernel = "tg.reduce_sum"} {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 4 {
    %s = affine.for %j = 0 to 8 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      %n = arith.addf %acc, %v : f32
      affine.yield %n : f32
    } {qd.loop = "j"}
    affine.store %s, %y[%i] : memref<4xf32>
  } {qd.loop = "i"}
  func.return
}

// Thread j writes %y[j + k] for every k: threads j and j + 1 both write %y[j + 1]
// (at k = 1 and k = 0), and no barrier orders the serial k's iterations across
// threads. Serially legal as parallel for one k, illegal as a binding.
// CHECK-LABEL: func.func @skewed
// CHECK-NOT:     qd.bind
func.func @skewed(%x: memref<8xf32> {llvm.noalias}, %y: memref<12xf32> {llvm.noalias}) attributes {qd.kernel = "tg.add"} {
  affine.for %k = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%j] : memref<8xf32>
      affine.store %v, %y[%j + %k] : memref<12xf32>
    } {qd.loop = "j"}
  } {qd.loop = "k"}
  func.return
}

// After the j loop every thread of block i reads %y[i, 0], which thread 0
// writes: there is no barrier between, so j cannot go to threads (i alone can).
// CHECK-LABEL: func.func @gather
// CHECK-NOT:     qd.bind
func.func @gather(%x: memref<4x8xf32> {llvm.noalias}, %y: memref<4x8xf32> {llvm.noalias}, %z: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %x[%i, %j] : memref<4x8xf32>
      affine.store %v, %y[%i, %j] : memref<4x8xf32>
    } {qd.loop = "j"}
    %f = affine.load %y[%i, 0] : memref<4x8xf32>
    affine.store %f, %z[%i] : memref<4xf32>
  } {qd.loop = "i"}
  func.return
}

// AXIS: InvalidArgumentError: bind: loop 'i' in kernel 'docstring': unknown axis 'warp'; the axes are: threads, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z
// TWICE: AxisAlreadyBoundError: bind: loop 'j' in kernel 'docstring': blockIdx.x is already bound to loop 'i' of this nest (each axis at most once per launch)
// ORDER: BindNestingError: bind: loop 'j' in kernel 'docstring': 'j' (blockIdx.x) is inside 'i' (threadIdx.x); threadIdx loops go inside blockIdx loops
// LIMIT: LaunchLimitError: bind: loop 'i' in kernel 'big': 'i' spans 2048 iterations, over the limit 1024 of threadIdx.x; split it first
// REDUCTION: IllegalScheduleError: bind: loop 'j' in kernel 'reduction': 'j' carries values from one iteration to the next (iter_args: a reduction)
// SKEWED: IllegalScheduleError: bind: loop 'j' in kernel 'skewed': iterations may touch the same element of the written buffer %y
// OUTSIDE: IllegalScheduleError: bind: loop 'j' in kernel 'gather': 'affine.load' reads %y outside the innermost bound loop 'j', which writes it: no barrier orders the read after the other threads' writes
// MIX: IllegalScheduleError: bind: loop 'j' in kernel 'docstring': the kernel has loops bound to GPU axes ('i' to blockIdx.x); CPU threads and GPU axes do not mix
// NO-LOOP: LoopNotFoundError: bind: loop 'q' in kernel 'docstring': no such loop; the kernel's loops are: i, j
