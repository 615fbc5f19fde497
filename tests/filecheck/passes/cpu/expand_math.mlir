// RUN: qidao-opt %s -p expand-math | filecheck %s
// RUN: qidao-opt %s -p 'expand-math{ldexp=true}' | filecheck %s --check-prefix=LDEXP

// The docstring's example: exp on f32 becomes range reduction, a polynomial and a
// scaling by 2^n built from exponent bits; no math.exp is left.
// CHECK-LABEL: func.func @exp
// CHECK-NEXT:    %[[HI:.*]] = arith.constant 8.900000e+01 : f32
// CHECK-NEXT:    %[[ABOVE:.*]] = arith.cmpf ogt, %x, %[[HI]] : f32
// CHECK-NEXT:    %[[X1:.*]] = arith.select %[[ABOVE]], %[[HI]], %x : f32
// CHECK-NEXT:    %[[LO:.*]] = arith.constant -1.040000e+02 : f32
// CHECK-NEXT:    %[[BELOW:.*]] = arith.cmpf olt, %[[X1]], %[[LO]] : f32
// CHECK-NEXT:    %xc = arith.select %[[BELOW]], %[[LO]], %[[X1]] : f32
// CHECK-NEXT:    %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
// CHECK-NEXT:    %[[T:.*]] = arith.mulf %xc, %[[LOG2E]] : f32
// CHECK-NEXT:    %n = math.roundeven %[[T]] : f32
// CHECK-NEXT:    %[[LN2HI:.*]] = arith.constant -0.693147182 : f32
// CHECK-NEXT:    %[[R0:.*]] = math.fma %n, %[[LN2HI]], %xc : f32
// CHECK-NEXT:    %[[LN2LO:.*]] = arith.constant 1.90465421e-09 : f32
// CHECK-NEXT:    %r = math.fma %n, %[[LN2LO]], %[[R0]] : f32
// CHECK-COUNT-5: math.fma {{.*}}, %r, {{.*}} : f32
// CHECK:         %exp_r = arith.addf
// CHECK:         %k = arith.subi
// CHECK:         %scale_hi = arith.bitcast {{.*}} : i32 to f32
// CHECK:         %scale_lo = arith.bitcast {{.*}} : i32 to f32
// CHECK-NEXT:    %y = arith.mulf %{{.*}}, %scale_lo : f32
// CHECK-NEXT:    func.return %y : f32
// CHECK-NOT:     math.exp

// With ldexp: the same reduction and polynomial, then one llvm.ldexp by k instead
// of the two factors (AVX-512's vscalefps); no bit-built scale is left.
// LDEXP-LABEL: func.func @exp
// LDEXP:         %exp_r = arith.addf
// LDEXP:         %k = arith.subi
// LDEXP-NEXT:    %y = llvm.call_intrinsic "llvm.ldexp.f32.i32"(%exp_r, %k) : (f32, i32) -> f32
// LDEXP-NEXT:    func.return %y : f32
// LDEXP-NOT:     scale_hi
// Not an exp: log has none inside, and is the same either way.
// LDEXP-LABEL: func.func @log
// LDEXP-NOT:     llvm.ldexp
// LDEXP:         func.return
func.func @exp(%x: f32) -> f32 {
  %y = math.exp %x : f32
  func.return %y : f32
}

// log: the exponent and mantissa fields split by bit manipulation, a polynomial in
// m, and the special values selected at the end.
// CHECK-LABEL: func.func @log
// CHECK:         %tiny = arith.cmpf olt, %x
// CHECK:         %bits = arith.bitcast %{{.*}} : f32 to i32
// CHECK:         arith.shrui %bits
// CHECK:         %f = arith.bitcast %{{.*}} : i32 to f32
// CHECK:         %m = arith.subf
// CHECK:         %e = arith.subf
// CHECK-COUNT-8: math.fma {{.*}}, %m, {{.*}} : f32
// CHECK:         %log = math.fma %e
// CHECK:         %[[INF:.*]] = arith.constant 0x7f800000 : f32
// CHECK-NEXT:    %[[IS_INF:.*]] = arith.cmpf oeq, %x, %[[INF]] : f32
// CHECK:         arith.cmpf ult, %x
// CHECK:         arith.constant 0x7fc00000 : f32
// CHECK:         %[[IS_ZERO:.*]] = arith.cmpf oeq, %x
// CHECK-NEXT:    %[[NEG_INF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:    %y = arith.select %[[IS_ZERO]], %[[NEG_INF]], %{{.*}} : f32
// CHECK-NEXT:    func.return %y : f32
// CHECK-NOT:     math.log
func.func @log(%x: f32) -> f32 {
  %y = math.log %x : f32
  func.return %y : f32
}

// tanh: an odd polynomial near 0, 1 - 2/(exp(2|x|) + 1) beyond (exp expanded in
// place), and the sign put back with copysign.
// CHECK-LABEL: func.func @tanh
// CHECK-NEXT:    %a = math.absf %x : f32
// CHECK:         %small = math.fma
// CHECK:         %exp_2a = arith.mulf
// CHECK:         %large = arith.subf
// CHECK:         %[[SMALL_A:.*]] = arith.cmpf olt, %a
// CHECK-NEXT:    %[[T:.*]] = arith.select %[[SMALL_A]], %small, %large : f32
// CHECK-NEXT:    %y = math.copysign %[[T]], %x : f32
// CHECK-NEXT:    func.return %y : f32
// CHECK-NOT:     math
func.func @tanh(%x: f32) -> f32 {
  %y = math.tanh %x : f32
  func.return %y : f32
}

// In a loop nest (as convert-tg-to-affine emits softmax's exp), the expansion stays
// in the loop body where the op was.
// CHECK-LABEL: func.func @exp_in_loop
// CHECK:         affine.for %i = 0 to 16 {
// CHECK-NEXT:      %v = affine.load %a[%i] : memref<16xf32>
// CHECK-NOT:       math.exp
// CHECK:           %e = arith.mulf
// CHECK-NEXT:      affine.store %e, %o[%i] : memref<16xf32>
// CHECK-NEXT:    } {qd.loop = "i"}
func.func @exp_in_loop(%a: memref<16xf32>, %o: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    %v = affine.load %a[%i] : memref<16xf32>
    %e = math.exp %v : f32
    affine.store %e, %o[%i] : memref<16xf32>
  } {qd.loop = "i"}
  func.return
}

// Must not fire: f64 (no f64 expansion; the ops keep their LLVM lowering).
// CHECK-LABEL: func.func @f64_is_left_alone
// CHECK-NEXT:    %e = math.exp %x : f64
// CHECK-NEXT:    %l = math.log %e : f64
// CHECK-NEXT:    %t = math.tanh %l : f64
// CHECK-NEXT:    func.return %t : f64
func.func @f64_is_left_alone(%x: f64) -> f64 {
  %e = math.exp %x : f64
  %l = math.log %e : f64
  %t = math.tanh %l : f64
  func.return %t : f64
}

// Must not fire: vector operands (the pass expands scalars; LLVM vectorizes loops).
// CHECK-LABEL: func.func @vector_is_left_alone
// CHECK-NEXT:    %e = math.exp %x : vector<4xf32>
func.func @vector_is_left_alone(%x: vector<4xf32>) -> vector<4xf32> {
  %e = math.exp %x : vector<4xf32>
  func.return %e : vector<4xf32>
}

// Must not fire: math ops other than exp, log, tanh and erf (sqrt vectorizes as it
// is; sin and cos, from tg.sin/tg.cos, keep their LLVM intrinsic: libm's sinf/cosf).
// CHECK-LABEL: func.func @other_math_ops
// CHECK-NEXT:    %s = math.sqrt %x : f32
// CHECK-NEXT:    %r = math.sin %s : f32
// CHECK-NEXT:    %l = math.log2 %r : f32
// CHECK-NEXT:    %p = math.exp2 %l : f32
// CHECK-NEXT:    func.return %p : f32
func.func @other_math_ops(%x: f32) -> f32 {
  %s = math.sqrt %x : f32
  %r = math.sin %s : f32
  %l = math.log2 %r : f32
  %p = math.exp2 %l : f32
  func.return %p : f32
}

// erf: both branches computed, one selected. Near 0 the odd polynomial x + x P(x^2);
// beyond, 1 - exp(Q(|x|)) with |x| clamped to 4 and exp expanded in place (without
// exp's own clamp: Q(|x|) lies in [Q(4), 0]), its sign put back with copysign. On
// f64 erf is left alone (libm's erf).
// CHECK-LABEL: func.func @erf
// CHECK-NEXT:    %a = math.absf %x : f32
// CHECK-NEXT:    %[[S:.*]] = arith.mulf %a, %a : f32
// CHECK-COUNT-5: math.fma {{.*}}, %[[S]], {{.*}} : f32
// CHECK-NEXT:    %small = math.fma %{{.*}}, %x, %x : f32
// CHECK-NEXT:    %[[FOUR:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-NEXT:    %[[ABOVE:.*]] = arith.cmpf ogt, %a, %[[FOUR]] : f32
// CHECK-NEXT:    %[[A4:.*]] = arith.select %[[ABOVE]], %[[FOUR]], %a : f32
// CHECK-COUNT-6: math.fma {{.*}}, %[[A4]], {{.*}} : f32
// CHECK-NOT:     %xc = arith.select
// CHECK:         %erfc = arith.mulf
// CHECK-NEXT:    %[[ONE_MINUS:.*]] = arith.subf %{{.*}}, %erfc : f32
// CHECK-NEXT:    %large = math.copysign %[[ONE_MINUS]], %x : f32
// CHECK-NEXT:    %[[EDGE:.*]] = arith.constant 9.218750e-01 : f32
// CHECK-NEXT:    %[[IS_SMALL:.*]] = arith.cmpf olt, %a, %[[EDGE]] : f32
// CHECK-NEXT:    %y = arith.select %[[IS_SMALL]], %small, %large : f32
// CHECK-NEXT:    %y64 = math.erf %d : f64
// CHECK-NEXT:    func.return %y, %y64 : f32, f64
// CHECK-NOT:     math.exp
func.func @erf(%x: f32, %d: f64) -> (f32, f64) {
  %y = math.erf %x : f32
  %y64 = math.erf %d : f64
  func.return %y, %y64 : f32, f64
}
