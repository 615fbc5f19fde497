// RUN: qidao-opt %s -p 'bind{kernel="docstring" loop="i" axis="blockIdx.x"},block-stride{kernel="docstring" threads=256 loops="r"},bind{kernel="softmax" loop="i_o" axis="blockIdx.x"},bind{kernel="softmax" loop="i_i" axis="threadIdx.y"},block-stride{kernel="softmax" threads=32 loops="r_max,r_sum,r_norm"},block-stride{kernel="whole" threads=1024 loops="r"}' | filecheck %s
// RUN: not qidao-opt %s -p 'block-stride{kernel="docstring" threads=48 loops="r"}' 2>&1 | filecheck %s --check-prefix=THREADS
// RUN: not qidao-opt %s -p 'bind{kernel="softmax" loop="i_o" axis="blockIdx.x"},block-stride{kernel="softmax" threads=32 loops="r_max"}' 2>&1 | filecheck %s --check-prefix=ONE-BY-ONE
// RUN: not qidao-opt %s -p 'bind{kernel="softmax" loop="i_o" axis="blockIdx.x"},bind{kernel="softmax" loop="i_i" axis="threadIdx.x"},block-stride{kernel="softmax" threads=32 loops="r_max,r_sum,r_norm"}' 2>&1 | filecheck %s --check-prefix=TAKEN
// RUN: not qidao-opt %s -p 'block-stride{kernel="running" threads=64 loops="r"}' 2>&1 | filecheck %s --check-prefix=CARRIED
// RUN: not qidao-opt %s -p 'block-stride{kernel="racy" threads=64 loops="r"}' 2>&1 | filecheck %s --check-prefix=RACE
// RUN: not qidao-opt %s -p 'bind{kernel="ragged" loop="i" axis="blockIdx.x"},block-stride{kernel="ragged" threads=64 loops="r"}' 2>&1 | filecheck %s --check-prefix=UNIFORM
// RUN: not qidao-opt %s -p 'bind{kernel="guarded" loop="i_o" axis="blockIdx.x"},bind{kernel="guarded" loop="i_i" axis="threadIdx.y"},block-stride{kernel="guarded" threads=32 loops="r"}' 2>&1 | filecheck %s --check-prefix=GUARD
// RUN: not qidao-opt %s -p 'bind{kernel="docstring" loop="i" axis="blockIdx.x"},block-stride{kernel="docstring" threads=256 loops="r"},block-stride{kernel="docstring" threads=256 loops="r"}' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not qidao-opt %s -p 'block-stride{kernel="docstring" threads=256 loops="q"}' 2>&1 | filecheck %s --check-prefix=NO-LOOP

// The docstring example: a block per row, its sum across 256 threads, stored by
// one of them.
// CHECK-LABEL: func.func @docstring
// CHECK:           } {qd.loop = "r", qd.bind = "threadIdx.x", qd.threads = 256 : i64}
// CHECK-NEXT:      affine.store
// CHECK-NEXT:    } {qd.loop = "i", qd.bind = "blockIdx.x"}
func.func @docstring(%x: memref<64x4096xf32> {llvm.noalias}, %out: memref<64xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_sum"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 64 {
    %sum = affine.for %r = 0 to 4096 iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%i, %r] : memref<64x4096xf32>
      %s = arith.addf %acc, %v : f32
      affine.yield %s : f32
    } {qd.loop = "r"}
    affine.store %sum, %out[%i] : memref<64xf32>
  } {qd.loop = "i"}
  func.return
}

// A softmax, four rows a block (a warp each): the three passes share the row's
// 32 threads, all in one request (one by one the nest is racy in between).
// CHECK-LABEL: func.func @softmax
// CHECK:           } {qd.loop = "r_max", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
// CHECK:           } {qd.loop = "r_sum", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
// CHECK:           } {qd.loop = "r_norm", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
// CHECK-NEXT:    } {qd.loop = "i_i", qd.bind = "threadIdx.y"}
// CHECK-NEXT:  } {qd.loop = "i_o", qd.bind = "blockIdx.x"}
func.func @softmax(%x: memref<8x100xf32> {llvm.noalias}, %out: memref<8x100xf32> {llvm.noalias}) attributes {qd.kernel = "tg.softmax"} {
  %ninf = arith.constant 0xff800000 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  affine.for %i_o = 0 to 2 {
    affine.for %i_i = 0 to 4 {
      %max = affine.for %r_max = 0 to 100 iter_args(%a = %ninf) -> (f32) {
        %v = affine.load %x[%i_o * 4 + %i_i, %r_max] : memref<8x100xf32>
        %m = arith.maximumf %a, %v fastmath<reassoc,contract> : f32
        affine.yield %m : f32
      } {qd.loop = "r_max"}
      %sum = affine.for %r_sum = 0 to 100 iter_args(%b = %zero) -> (f32) {
        %v = affine.load %x[%i_o * 4 + %i_i, %r_sum] : memref<8x100xf32>
        %d = arith.subf %v, %max : f32
        %e = math.exp %d : f32
        affine.store %e, %out[%i_o * 4 + %i_i, %r_sum] : memref<8x100xf32>
        %s = arith.addf %b, %e fastmath<reassoc,contract> : f32
        affine.yield %s : f32
      } {qd.loop = "r_sum"}
      %rcp = arith.divf %one, %sum : f32
      affine.for %r_norm = 0 to 100 {
        %e = affine.load %out[%i_o * 4 + %i_i, %r_norm] : memref<8x100xf32>
        %y = arith.mulf %e, %rcp : f32
        affine.store %y, %out[%i_o * 4 + %i_i, %r_norm] : memref<8x100xf32>
      } {qd.loop = "r_norm"}
    } {qd.loop = "i_i"}
  } {qd.loop = "i_o"}
  func.return
}

// One row, no block loop: one block of 1024 threads.
// CHECK-LABEL: func.func @whole
// CHECK:         } {qd.loop = "r", qd.bind = "threadIdx.x", qd.threads = 1024 : i64}
func.func @whole(%x: memref<100000xf32> {llvm.noalias}, %out: memref<1xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_max"} {
  %ninf = arith.constant 0xff800000 : f32
  %max = affine.for %r = 0 to 100000 iter_args(%a = %ninf) -> (f32) {
    %v = affine.load %x[%r] : memref<100000xf32>
    %m = arith.maximumf %a, %v : f32
    affine.yield %m : f32
  } {qd.loop = "r"}
  affine.store %max, %out[0] : memref<1xf32>
  func.return
}

// A running value the body reads (an online softmax's max): not an accumulation.
// CHECK-LABEL: func.func @running
// CHECK-NOT:     qd.threads
func.func @running(%x: memref<100xf32> {llvm.noalias}, %out: memref<100xf32> {llvm.noalias}) attributes {qd.kernel = "tg.cumsum"} {
  %zero = arith.constant 0.000000e+00 : f32
  %last = affine.for %r = 0 to 100 iter_args(%a = %zero) -> (f32) {
    %v = affine.load %x[%r] : memref<100xf32>
    %s = arith.addf %a, %v : f32
    affine.store %s, %out[%r] : memref<100xf32>
    affine.yield %s : f32
  } {qd.loop = "r"}
  func.return
}

// Every iteration writes %out[0]: the threads would race.
// CHECK-LABEL: func.func @racy
// CHECK-NOT:     qd.threads
func.func @racy(%x: memref<100xf32> {llvm.noalias}, %out: memref<1xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  affine.for %r = 0 to 100 {
    %v = affine.load %x[%r] : memref<100xf32>
    affine.store %v, %out[0] : memref<1xf32>
  } {qd.loop = "r"}
  func.return
}

// The row's length is loaded: not provably the same in every thread (barriers).
// CHECK-LABEL: func.func @ragged
// CHECK-NOT:     qd.threads
func.func @ragged(%x: memref<8x100xf32> {llvm.noalias}, %n: memref<8xindex> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_sum"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 8 {
    %len = affine.load %n[%i] : memref<8xindex>
    %sum = affine.for %r = 0 to %len iter_args(%acc = %zero) -> (f32) {
      %v = affine.load %x[%i, %r] : memref<8x100xf32>
      %s = arith.addf %acc, %v : f32
      affine.yield %s : f32
    } {qd.loop = "r"}
    affine.store %sum, %out[%i] : memref<8xf32>
  } {qd.loop = "i"}
  func.return
}

// Rows on threadIdx.y with a tail: the skipped threads would miss the barriers.
// CHECK-LABEL: func.func @guarded
// CHECK-NOT:     qd.threads
func.func @guarded(%x: memref<10x64xf32> {llvm.noalias}, %out: memref<10xf32> {llvm.noalias}) attributes {qd.kernel = "tg.reduce_sum"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i_o = 0 to 3 {
    affine.for %i_i = 0 to min affine_map<(d0) -> (4, d0 * -4 + 10)>(%i_o) {
      %sum = affine.for %r = 0 to 64 iter_args(%acc = %zero) -> (f32) {
        %v = affine.load %x[%i_o * 4 + %i_i, %r] : memref<10x64xf32>
        %s = arith.addf %acc, %v : f32
        affine.yield %s : f32
      } {qd.loop = "r"}
      affine.store %sum, %out[%i_o * 4 + %i_i] : memref<10xf32>
    } {qd.loop = "i_i"}
  } {qd.loop = "i_o"}
  func.return
}

// THREADS: InvalidArgumentError: block_stride: loop 'r' in kernel 'docstring': threads must be a multiple of 32 from 32 to 1024 (whole warps: the reduction combines them with warp shuffles), got 48
// ONE-BY-ONE: IllegalScheduleError: block_stride: loop 'r_max' in kernel 'softmax': 'affine.store' writes %out outside the block-stride loops (one thread writes it) and the nest reads it: no barrier orders the read after the write
// TAKEN: IllegalScheduleError: block_stride: loop 'r_max' in kernel 'softmax': loop 'i_i' is bound to threadIdx.x, which the block-stride loops of the nest take; bind it to threadIdx.y
// CARRIED: IllegalScheduleError: block_stride: loop 'r' in kernel 'running': block-stride loop 'r' carries iter_arg #0, which is not an accumulation the block can combine
// RACE: IllegalScheduleError: block_stride: loop 'r' in kernel 'racy': every iteration writes %out[0]: the indices do not depend on 'r'
// UNIFORM: IllegalScheduleError: block_stride: loop 'r' in kernel 'ragged': the bounds of block-stride loop 'r' depend on a value that may differ between the block's threads (a load, a carried value or a thread counter): every thread must reach the barriers
// GUARD: IllegalScheduleError: block_stride: loop 'r' in kernel 'guarded': the bound loop 'i_i' around block-stride loop 'r' has a guard (its extent does not divide): the threads it skips would miss the block's barriers
// TWICE: IllegalScheduleError: block_stride: loop 'r' in kernel 'docstring': the loop is already bound to threadIdx.x
// NO-LOOP: LoopNotFoundError: block_stride: loop 'q' in kernel 'docstring': no such loop; the kernel's loops are: i, r
