// RUN: qidao-opt %s -p dedupe-kernels | filecheck %s

// Two kernels equal up to SSA names and their own names: the second is erased and
// its call goes to the first.
// CHECK-LABEL: func.func private @m_k0
// CHECK-NOT:   func.func private @m_k1
func.func private @m_k0(%x: memref<4xf32> {llvm.noalias}, %o: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 4 {
    %v = affine.load %x[%i] : memref<4xf32>
    %r = arith.maximumf %v, %zero : f32
    affine.store %r, %o[%i] : memref<4xf32>
  }
  func.return
}
func.func private @m_k1(%y: memref<4xf32> {llvm.noalias}, %p: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  %c = arith.constant 0.000000e+00 : f32
  affine.for %j = 0 to 4 {
    %w = affine.load %y[%j] : memref<4xf32>
    %s = arith.maximumf %w, %c : f32
    affine.store %s, %p[%j] : memref<4xf32>
  }
  func.return
}

// Must not fire: a different constant.
// CHECK-LABEL: func.func private @m_k2
func.func private @m_k2(%x: memref<4xf32> {llvm.noalias}, %o: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.relu"} {
  %zero = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 4 {
    %v = affine.load %x[%i] : memref<4xf32>
    %r = arith.maximumf %v, %zero : f32
    affine.store %r, %o[%i] : memref<4xf32>
  }
  func.return
}

// Must not fire: the same body, but plan-memory took llvm.noalias away (it writes
// in place).
// CHECK-LABEL: func.func private @m_k3
func.func private @m_k3(%x: memref<4xf32>, %o: memref<4xf32>) attributes {qd.kernel = "tg.relu"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 4 {
    %v = affine.load %x[%i] : memref<4xf32>
    %r = arith.maximumf %v, %zero : f32
    affine.store %r, %o[%i] : memref<4xf32>
  }
  func.return
}

// Must not fire: operands in another order (%v, %zero swapped into a subtraction).
// CHECK-LABEL: func.func private @m_k4
// CHECK-LABEL: func.func private @m_k5
func.func private @m_k4(%x: memref<4xf32> {llvm.noalias}, %o: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.sub"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 4 {
    %v = affine.load %x[%i] : memref<4xf32>
    %r = arith.subf %v, %zero : f32
    affine.store %r, %o[%i] : memref<4xf32>
  }
  func.return
}
func.func private @m_k5(%x: memref<4xf32> {llvm.noalias}, %o: memref<4xf32> {llvm.noalias}) attributes {qd.kernel = "tg.sub"} {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 4 {
    %v = affine.load %x[%i] : memref<4xf32>
    %r = arith.subf %zero, %v : f32
    affine.store %r, %o[%i] : memref<4xf32>
  }
  func.return
}

// Must not fire on host functions (no qd.kernel), even identical ones.
// CHECK-LABEL: func.func @h0
// CHECK-LABEL: func.func @h1
func.func @h0() {
  func.return
}
func.func @h1() {
  func.return
}

// CHECK-LABEL: func.func @m
// CHECK-NEXT:    func.call @m_k0(%a, %b)
// CHECK-NEXT:    func.call @m_k0(%b, %a)
// CHECK-NEXT:    func.call @m_k2(%a, %b)
// CHECK-NEXT:    func.call @m_k3(%a, %b)
// CHECK-NEXT:    func.call @m_k4(%a, %b)
// CHECK-NEXT:    func.call @m_k5(%a, %b)
func.func @m(%a: memref<4xf32>, %b: memref<4xf32>) {
  func.call @m_k0(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @m_k1(%b, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @m_k2(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @m_k3(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @m_k4(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @m_k5(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}
