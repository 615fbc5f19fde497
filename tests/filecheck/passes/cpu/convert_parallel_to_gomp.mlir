// RUN: qidao-opt %s -p 'convert-parallel-to-gomp{threads=2}' | filecheck %s
// RUN: qidao-opt %s -p 'convert-parallel-to-gomp' | filecheck %s --check-prefix=DEFAULT
// RUN: qidao-opt %s -p 'convert-parallel-to-gomp{threads=2},convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts' | filecheck %s --check-prefix=LLVM

// The docstring example. The loop is replaced by filling the context and one call;
// the context is allocated in the entry block.
// CHECK-LABEL: func.func @k(
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %ctx = llvm.alloca %[[N]] x !llvm.ptr {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK:         %[[XP:.*]] = builtin.unrealized_conversion_cast %x : memref<64xf32> to !llvm.ptr
// CHECK-NEXT:    %[[S0:.*]] = llvm.getelementptr %ctx[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %[[XP]], %[[S0]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[YP:.*]] = builtin.unrealized_conversion_cast %y : memref<64xf32> to !llvm.ptr
// CHECK-NEXT:    %[[S1:.*]] = llvm.getelementptr %ctx[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    llvm.store %[[YP]], %[[S1]] : !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %fn = llvm.mlir.addressof @k_i_par : !llvm.ptr
// CHECK-NEXT:    %threads = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:    %flags = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    llvm.call @GOMP_parallel(%fn, %ctx, %threads, %flags) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NEXT:    func.return
// The body keeps the kernel's noalias arguments and runs [i_lo, i_hi).
// CHECK-LABEL: func.func private @k_i_par_body(%x: memref<64xf32> {llvm.noalias}, %y: memref<64xf32> {llvm.noalias}, %i_lo: index, %i_hi: index) {
// CHECK-NEXT:    %s = arith.constant 1 : index
// CHECK-NEXT:    scf.for %i = %i_lo to %i_hi step %s {
// CHECK-NEXT:      %v = memref.load %x[%i] : memref<64xf32>
// CHECK-NEXT:      memref.store %v, %y[%i] : memref<64xf32>
// CHECK-NEXT:    } {qd.loop = "i"}
// The thread function: slots back to memrefs, the thread's chunk, the call.
// CHECK-LABEL: func.func private @k_i_par(%ctx: !llvm.ptr) {
// CHECK:         %[[L0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %x = builtin.unrealized_conversion_cast %[[L0]] : !llvm.ptr to memref<64xf32>
// CHECK:         %y = builtin.unrealized_conversion_cast %{{.*}} : !llvm.ptr to memref<64xf32>
// CHECK-NEXT:    %[[TID:.*]] = llvm.call @omp_get_thread_num() : () -> i32
// CHECK-NEXT:    %[[NTH:.*]] = llvm.call @omp_get_num_threads() : () -> i32
// CHECK-NEXT:    %thread = arith.index_cast %[[TID]] : i32 to index
// CHECK-NEXT:    %threads = arith.index_cast %[[NTH]] : i32 to index
// CHECK:         %share = arith.divsi %iterations, %threads : index
// CHECK-NEXT:    %extra = arith.remsi %iterations, %threads : index
// CHECK:         %i_lo = arith.addi %lb, %{{.*}} : index
// CHECK-NEXT:    %i_hi = arith.addi %lb, %{{.*}} : index
// CHECK-NEXT:    func.call @k_i_par_body(%x, %y, %i_lo, %i_hi) : (memref<64xf32>, memref<64xf32>, index, index) -> ()
// DEFAULT-LABEL: func.func @k(
// DEFAULT:         %threads = llvm.mlir.constant(0 : i32) : i32
func.func @k(%x: memref<64xf32> {llvm.noalias}, %y: memref<64xf32> {llvm.noalias}) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 64 : index
  %s = arith.constant 1 : index
  scf.for %i = %lb to %ub step %s {
    %v = memref.load %x[%i] : memref<64xf32>
    memref.store %v, %y[%i] : memref<64xf32>
  } {qd.loop = "i", qd.parallel}
  func.return
}

// Captured index and f32 values get their own 8-byte slots (an f32 in slot 3 is
// element 6 of f32); the parallel loop inside a serial one starts once per r, and
// arguments without llvm.noalias stay without it.
// CHECK-LABEL: func.func @scalars(
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(5) : i64
// CHECK-NEXT:    %ctx = llvm.alloca %[[N]] x !llvm.ptr
// CHECK:         scf.for %r = %lb to %c64 step %s {
// CHECK-NEXT:      %[[NI:.*]] = arith.index_cast %n : index to i64
// CHECK-NEXT:      %[[S0:.*]] = llvm.getelementptr %ctx[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:      llvm.store %[[NI]], %[[S0]] : i64, !llvm.ptr
// CHECK:           %[[S3:.*]] = llvm.getelementptr %ctx[6] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK-NEXT:      llvm.store %scale, %[[S3]] : f32, !llvm.ptr
// CHECK:           llvm.call @GOMP_parallel(%fn, %ctx, %threads, %flags)
// CHECK-NEXT:    } {qd.loop = "r"}
// CHECK-LABEL: func.func private @scalars_i_par_body(%x: memref<8x64xf32>, %r: index, %scale: f32, %y: memref<8x64xf32>, %i_lo: index, %i_hi: index) {
// CHECK-LABEL: func.func private @scalars_i_par(%ctx: !llvm.ptr) {
// CHECK:         %[[NL:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK-NEXT:    %n = arith.index_cast %[[NL]] : i64 to index
// CHECK:         %scale = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         %{{.*}} = arith.subi %n, %lb : index
func.func @scalars(%x: memref<8x64xf32>, %y: memref<8x64xf32>, %n: index, %scale: f32) {
  %lb = arith.constant 0 : index
  %s = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %r = %lb to %c64 step %s {
    scf.for %i = %lb to %n step %s {
      %v = memref.load %x[%r, %i] : memref<8x64xf32>
      %w = arith.mulf %v, %scale : f32
      memref.store %w, %y[%r, %i] : memref<8x64xf32>
    } {qd.loop = "i", qd.parallel}
  } {qd.loop = "r"}
  func.return
}

// Must not fire: an unmarked loop stays as it is.
// CHECK-LABEL: func.func @serial(
// CHECK-NOT:     llvm.call
// CHECK:         scf.for %i = %lb to %ub step %s {
// CHECK-NEXT:      memref.store %zero, %x[%i] : memref<64xf32>
// CHECK-NEXT:    } {qd.loop = "i"}
func.func @serial(%x: memref<64xf32>) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 64 : index
  %s = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %lb to %ub step %s {
    memref.store %zero, %x[%i] : memref<64xf32>
  } {qd.loop = "i"}
  func.return
}

// A vector cannot be passed to the threads: a splat the vectorize primitive hoisted
// out of the loop is made again at the top of the body, from its scalar, which is
// passed (a constant would be cloned). (qidao fuzz --kinds schedule --seed 40006.)
// CHECK-LABEL: func.func @splat(
// CHECK:         llvm.store %two, %{{.*}} : f32, !llvm.ptr
// CHECK:         llvm.call @GOMP_parallel
// CHECK-LABEL: func.func private @splat_i_par_body(%two: f32, %x: memref<64xf32>, %y: memref<64xf32>, %i_lo: index, %i_hi: index) {
// CHECK:         scf.for %i = %i_lo to %i_hi step %s {
// CHECK-NEXT:      %[[B:.*]] = vector.broadcast %two : f32 to vector<8xf32>
// CHECK-NEXT:      %v = vector.load %x[%i] : memref<64xf32>, vector<8xf32>
// CHECK-NEXT:      %w = arith.mulf %v, %[[B]] : vector<8xf32>
func.func @splat(%x: memref<64xf32>, %y: memref<64xf32>, %two: f32) {
  %lb = arith.constant 0 : index
  %ub = arith.constant 64 : index
  %s = arith.constant 8 : index
  %b = vector.broadcast %two : f32 to vector<8xf32>
  scf.for %i = %lb to %ub step %s {
    %v = vector.load %x[%i] : memref<64xf32>, vector<8xf32>
    %w = arith.mulf %v, %b : vector<8xf32>
    vector.store %w, %y[%i] : memref<64xf32>, vector<8xf32>
  } {qd.loop = "i", qd.parallel}
  func.return
}

// libgomp's entry points, declared once.
// CHECK:       llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// CHECK-NEXT:  llvm.func @omp_get_num_threads() -> i32
// CHECK-NEXT:  llvm.func @omp_get_thread_num() -> i32

// Through convert-to-llvm the casts vanish: the context holds the bare pointers.
// LLVM-LABEL: llvm.func @k(%x: !llvm.ptr {llvm.noalias}, %y: !llvm.ptr {llvm.noalias}) {
// LLVM-NOT:     unrealized_conversion_cast
// LLVM:         llvm.store %x, %{{.*}} : !llvm.ptr, !llvm.ptr
// LLVM:         llvm.call @GOMP_parallel(
// LLVM-LABEL: llvm.func @k_i_par(%ctx{{.*}}: !llvm.ptr) {
// LLVM-NOT:     unrealized_conversion_cast
// LLVM:         llvm.call @k_i_par_body(

