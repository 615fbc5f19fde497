// RUN: qidao-opt %s -p convert-to-llvm | filecheck %s

// The docstring example: memref args become bare pointers, index becomes i64,
// llvm.* argument attributes move to the llvm.func.
// CHECK-LABEL: llvm.func @load_index(%a: !llvm.ptr {llvm.noalias}, %i: i64) -> f32
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %v = llvm.load %[[P]] : !llvm.ptr -> f32
// CHECK-NEXT:    llvm.return %v : f32
func.func @load_index(%a: memref<4xf32> {llvm.noalias}, %i: index) -> f32 {
  %v = memref.load %a[%i] : memref<4xf32>
  func.return %v : f32
}

// Strided layout with offset: base + offset + i*1 + j*4; stride-0 dims drop out.
// CHECK-LABEL: llvm.func @strided(
// CHECK-SAME:      %[[A:[a-z0-9_]+]]: !llvm.ptr, %[[B:[a-z0-9_]+]]: !llvm.ptr, %[[I:[a-z0-9_]+]]: i64, %[[J:[a-z0-9_]+]]: i64, %[[N:[a-z0-9_]+]]: i32) -> f64
// Constants sit at the top of the entry block, once each, in the order asked for.
// CHECK-NEXT:    %[[C4:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[C2:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[M:.*]] = llvm.mul %[[J]], %[[C4]] overflow<nsw> : i64
// CHECK-NEXT:    %[[S:.*]] = llvm.add %[[I]], %[[M]] overflow<nsw> : i64
// CHECK-NEXT:    %[[O:.*]] = llvm.add %[[S]], %[[C2]] overflow<nsw> : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %[[A]][%[[O]]] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[P]] : !llvm.ptr -> f64
// CHECK-NEXT:    %[[Q:.*]] = llvm.getelementptr inbounds %[[B]][%[[J]]] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK-NEXT:    llvm.store %[[N]], %[[Q]] : i32, !llvm.ptr
// CHECK-NEXT:    llvm.return %[[X]] : f64
func.func @strided(%a: memref<4x8xf64, strided<[1, 4], offset: 2>>, %b: memref<4x8xi32, strided<[0, 1]>>, %i: index, %j: index, %n: i32) -> f64 {
  %x = memref.load %a[%i, %j] : memref<4x8xf64, strided<[1, 4], offset: 2>>
  memref.store %n, %b[%i, %j] : memref<4x8xi32, strided<[0, 1]>>
  func.return %x : f64
}

// A constant index folds into the offset (row 2 of a 4x8 array: 16, plus j); one
// llvm.mlir.constant per value for the whole function (the second `2 : index` is
// the first); -0.0 and 0.0 stay two constants. The index constants left unused go
// with the llvm-dialect stage's dce.
// CHECK-LABEL: llvm.func @constant_index(
// CHECK-SAME:      %[[A:[a-z0-9_]+]]: !llvm.ptr, %[[J:[a-z0-9_]+]]: i64) -> f32
// CHECK-NEXT:    %row2 = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %col0 = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %zero = llvm.mlir.constant(0.000000e+00 : f32) : f32
// CHECK-NEXT:    %negzero = llvm.mlir.constant(-0.000000e+00 : f32) : f32
// CHECK-NEXT:    %[[C16:.*]] = llvm.mlir.constant(16) : i64
// CHECK-NEXT:    %[[O:.*]] = llvm.add %[[J]], %[[C16]] overflow<nsw> : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %[[A]][%[[O]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[P]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[Q:.*]] = llvm.getelementptr inbounds %[[A]][%[[C16]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[Y:.*]] = llvm.load %[[Q]] : !llvm.ptr -> f32
// CHECK-NOT:     llvm.mlir.constant
// CHECK:         %signed = llvm.fadd %{{.*}}, %negzero : f32
// CHECK-NEXT:    llvm.return
func.func @constant_index(%a: memref<4x8xf32>, %j: index) -> f32 {
  %row2 = arith.constant 2 : index
  %col0 = arith.constant 0 : index
  %zero = arith.constant 0.000000e+00 : f32
  %negzero = arith.constant -0.000000e+00 : f32
  %row = memref.load %a[%row2, %j] : memref<4x8xf32>
  %corner = memref.load %a[%row2, %col0] : memref<4x8xf32>
  %row2b = arith.constant 2 : index
  %sum = arith.addf %row, %corner : f32
  %clamped = arith.maximumf %sum, %zero : f32
  %signed = arith.addf %clamped, %negzero : f32
  func.return %signed : f32
}

// Unary math intrinsics are called by their mangled names, so f32 and f64 uses
// live in one module (xDSL's llvm.intr.fabs would declare one @llvm.fabs).
// CHECK-LABEL: llvm.func @two_widths(
// CHECK-NEXT:    %abs32 = llvm.call_intrinsic "llvm.fabs.f32"(%x32) : (f32) -> f32
// CHECK-NEXT:    %abs64 = llvm.call_intrinsic "llvm.fabs.f64"(%x64) : (f64) -> f64
func.func @two_widths(%x32: f32, %x64: f64) -> f64 {
  %abs32 = math.absf %x32 : f32
  %abs64 = math.absf %x64 : f64
  %wide = arith.extf %abs32 : f32 to f64
  %sum = arith.addf %abs64, %wide : f64
  func.return %sum : f64
}

// uitofp from i64: values >= 2^63 read negative as signed, so they convert
// (x >> 1) | (x & 1) and double it.
// CHECK-LABEL: llvm.func @uitofp_i64(
// CHECK:         %[[DIRECT:.*]] = llvm.sitofp %[[X:.*]] : i64 to f32
// CHECK-NEXT:    %[[HALF:.*]] = llvm.lshr %[[X]], %[[ONE:.*]] : i64
// CHECK-NEXT:    %[[LOW:.*]] = llvm.and %[[X]], %[[ONE]] : i64
// CHECK-NEXT:    %[[STICKY:.*]] = llvm.or %[[HALF]], %[[LOW]] : i64
// CHECK-NEXT:    %[[F:.*]] = llvm.sitofp %[[STICKY]] : i64 to f32
// CHECK-NEXT:    %[[TWICE:.*]] = llvm.fadd %[[F]], %[[F]] : f32
// CHECK:         %[[BIG:.*]] = llvm.icmp "slt" %[[X]], %{{.*}} : i64
// CHECK-NEXT:    %nf = llvm.select %[[BIG]], %[[TWICE]], %[[DIRECT]] : i1, f32
func.func @uitofp_i64(%n: i64) -> f32 {
  %nf = arith.uitofp %n : i64 to f32
  func.return %nf : f32
}

// Float ops keep fastmath; maximumf is the NaN-propagating llvm.maximum; math maps
// to intrinsics (tanh too) or libm (erf).
// CHECK-LABEL: llvm.func @float_ops(
// CHECK-SAME:      %[[X:[a-z0-9_]+]]: f32, %[[Y:[a-z0-9_]+]]: f32) -> f32
// CHECK-NEXT:    %s = llvm.fadd %[[X]], %[[Y]] {fastmathFlags = #llvm.fastmath<reassoc,contract>} : f32
// CHECK-NEXT:    %m = llvm.call_intrinsic "llvm.maximum.f32"(%s, %[[Y]]) : (f32, f32) -> f32
// CHECK-NEXT:    %e = llvm.call_intrinsic "llvm.exp.f32"(%m) : (f32) -> f32
// CHECK-NEXT:    %t = llvm.call_intrinsic "llvm.tanh.f32"(%e) : (f32) -> f32
// CHECK-NEXT:    %r = llvm.call @erff(%t) : (f32) -> f32
// CHECK-NEXT:    %c = llvm.fcmp "olt" %r, %[[X]] : f32
// CHECK-NEXT:    %z = llvm.select %c, %r, %[[X]] : i1, f32
// CHECK-NEXT:    llvm.return %z : f32
func.func @float_ops(%x: f32, %y: f32) -> f32 {
  %s = arith.addf %x, %y fastmath<reassoc, contract> : f32
  %m = arith.maximumf %s, %y : f32
  %e = math.exp %m : f32
  %t = math.tanh %e : f32
  %r = math.erf %t : f32
  %c = arith.cmpf olt, %r, %x : f32
  %z = arith.select %c, %r, %x : f32
  func.return %z : f32
}

// maxnumf/minnumf (a softmax's row max) are llvm.maxnum/minnum called by their
// type-mangled names: a scalar, a vector and a reduction's halves in one module
// (each of another type) get an intrinsic each, not one @llvm.maxnum for all.
// CHECK-LABEL: llvm.func @maxnum_types(
// CHECK:         %{{.*}} = llvm.call_intrinsic "llvm.maxnum.f32"(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// CHECK-NEXT:    %{{.*}} = llvm.call_intrinsic "llvm.minnum.v16f32"(%{{.*}}, %{{.*}}) : (vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// CHECK:         %{{.*}} = llvm.call_intrinsic "llvm.maxnum.v8f32"(%{{.*}}, %{{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:         %{{.*}} = llvm.call_intrinsic "llvm.maxnum.v4f32"(%{{.*}}, %{{.*}}) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NOT:     "llvm.maxnum"(
func.func @maxnum_types(%x: f32, %y: f32, %v: vector<16xf32>, %w: vector<16xf32>) -> f32 {
  %m = arith.maxnumf %x, %y : f32
  %n = arith.minnumf %v, %w : vector<16xf32>
  %r = vector.reduction <maxnumf>, %n, %m : vector<16xf32> into f32
  func.return %r : f32
}

// sin and cos (tg.sin, tg.cos) are LLVM intrinsics named by their type, f32, f64 and
// vectors alike (LLVM calls libm's sinf/sin/cosf/cos, lane by lane on vectors).
// CHECK-LABEL: llvm.func @sin_cos(
// CHECK-SAME:      %[[X:[a-z0-9_]+]]: f32, %[[D:[a-z0-9_]+]]: f64, %[[V:[a-z0-9_]+]]: vector<8xf32>, %[[P:[a-z0-9_]+]]: !llvm.ptr, %[[Q:[a-z0-9_]+]]: !llvm.ptr)
// CHECK:         %[[S:.*]] = llvm.call_intrinsic "llvm.sin.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %[[C:.*]] = llvm.call_intrinsic "llvm.cos.f32"(%[[S]]) : (f32) -> f32
// CHECK-NEXT:    %[[S64:.*]] = llvm.call_intrinsic "llvm.sin.f64"(%[[D]]) : (f64) -> f64
// CHECK-NEXT:    %[[C64:.*]] = llvm.call_intrinsic "llvm.cos.f64"(%[[S64]]) : (f64) -> f64
// CHECK-NEXT:    %[[SV:.*]] = llvm.call_intrinsic "llvm.sin.v8f32"(%[[V]]) : (vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    %[[CV:.*]] = llvm.call_intrinsic "llvm.cos.v8f32"(%[[SV]]) : (vector<8xf32>) -> vector<8xf32>
func.func @sin_cos(%x: f32, %d: f64, %v: vector<8xf32>, %p: memref<1xf64>, %q: memref<8xf32>) -> f32 {
  %s = math.sin %x : f32
  %c = math.cos %s : f32
  %s64 = math.sin %d : f64
  %c64 = math.cos %s64 : f64
  %sv = math.sin %v : vector<8xf32>
  %cv = math.cos %sv : vector<8xf32>
  %i = arith.constant 0 : index
  memref.store %c64, %p[%i] : memref<1xf64>
  vector.store %cv, %q[%i] : memref<8xf32>, vector<8xf32>
  func.return %c : f32
}

// cf blocks keep their arguments (index -> i64).
// CHECK-LABEL: llvm.func @branches(
// CHECK-SAME:      %[[N:[a-z0-9_]+]]: i64)
// CHECK:         llvm.br ^bb1(%c0 : i64)
// CHECK-NEXT:  ^bb1(%[[I:[a-z0-9_]+]]: i64):
// CHECK-NEXT:    %[[LT:.*]] = llvm.icmp "slt" %[[I]], %[[N]] : i64
// CHECK-NEXT:    llvm.cond_br %[[LT]], ^bb2, ^bb3
func.func @branches(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^bb1(%c0 : index)
^bb1(%i: index):
  %lt = arith.cmpi slt, %i, %n : index
  cf.cond_br %lt, ^bb2, ^bb3
^bb2:
  %next = arith.addi %i, %c1 : index
  cf.br ^bb1(%next : index)
^bb3:
  func.return
}

// Host side: alloc -> aligned_alloc(64, bytes rounded to 64); a view (offset 16) passes
// the allocation pointer through unchanged, the callee applies the offset from its type;
// dealloc -> free; the C functions get declared once.
// CHECK-LABEL: llvm.func @host(%in0: !llvm.ptr, %out0: !llvm.ptr)
// CHECK-NEXT:    %[[AL:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[SZ:.*]] = llvm.mlir.constant(128) : i64
// CHECK-NEXT:    %[[T:.*]] = llvm.call @aligned_alloc(%[[AL]], %[[SZ]]) : (i64, i64) -> !llvm.ptr
// CHECK-NEXT:    llvm.call @kernel(%in0, %[[T]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.call @kernel2(%[[T]], %out0) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.call @free(%[[T]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
func.func private @kernel(memref<4x4xf32>, memref<32xf32>)
func.func private @kernel2(memref<4x4xf32, strided<[4, 1], offset: 16>>, memref<4x4xf32>)
func.func @host(%in0: memref<4x4xf32>, %out0: memref<4x4xf32>) {
  %t = memref.alloc() : memref<32xf32>
  %v = memref.reinterpret_cast %t to offset: [16], sizes: [4, 4], strides: [4, 1] : memref<32xf32> to memref<4x4xf32, strided<[4, 1], offset: 16>>
  func.call @kernel(%in0, %t) : (memref<4x4xf32>, memref<32xf32>) -> ()
  func.call @kernel2(%v, %out0) : (memref<4x4xf32, strided<[4, 1], offset: 16>>, memref<4x4xf32>) -> ()
  memref.dealloc %t : memref<32xf32>
  func.return
}

// Must not fire: an existing llvm.func (and llvm ops inside func.func) stay as they are.
// CHECK-LABEL: llvm.func @already_llvm(%arg0: i64) -> i64
// CHECK-NEXT:    %[[R:.*]] = llvm.add %arg0, %arg0 : i64
// CHECK-NEXT:    llvm.return %[[R]] : i64
llvm.func @already_llvm(%arg0: i64) -> i64 {
  %0 = llvm.add %arg0, %arg0 : i64
  llvm.return %0 : i64
}

// CHECK-LABEL: llvm.func @mixed(
// CHECK-SAME:      %[[X:[a-z0-9_]+]]: i64) -> i64
// CHECK-NEXT:    %[[Y:.*]] = llvm.mul %[[X]], %[[X]] : i64
// CHECK-NEXT:    llvm.return %[[Y]] : i64
func.func @mixed(%x: i64) -> i64 {
  %y = llvm.mul %x, %x : i64
  func.return %y : i64
}

// CHECK-DAG: llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @erff(f32) -> f32
// CHECK-DAG: llvm.func @free(!llvm.ptr)
// CHECK-NOT: unrealized_conversion_cast
