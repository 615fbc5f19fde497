// RUN: qidao-opt %s -p 'prefetch{kernel="k" loop="k" buffer="b" ahead="j_o"}' | filecheck %s
// RUN: qidao-opt %s -p 'prefetch{kernel="k" loop="k" buffer="b" ahead="j_o" locality=3},lower-affine' | filecheck %s --check-prefix=LOWER
// RUN: qidao-opt %s -p 'prefetch{kernel="k" loop="k" buffer="b" ahead="j_o"},lower-affine,lower-scf-to-cf,convert-to-llvm' | filecheck %s --check-prefix=LLVM
// RUN: qidao-opt %s -p 'prefetch{kernel="k" loop="i_o" buffer="b" ahead="j_o" locality=0}' | filecheck %s --check-prefix=OUTER
// RUN: qidao-opt %s -p 'prefetch{kernel="k" loop="k" buffer="b" ahead="j_o"},parallel{kernel="k" loop="j_o"}' | filecheck %s --check-prefix=PAR
// RUN: qidao-opt %s -p 'prefetch{kernel="k" loop="k" buffer="few" ahead="j_o"}' | filecheck %s --check-prefix=FEW
// RUN: not qidao-opt %s -p 'prefetch{kernel="k" loop="k" buffer="a" ahead="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-FIRST
// RUN: not qidao-opt %s -p 'prefetch{kernel="k" loop="k" buffer="c" ahead="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-NONE
// RUN: not qidao-opt %s -p 'prefetch{kernel="k" loop="j_o" buffer="b" ahead="k"}' 2>&1 | filecheck %s --check-prefix=ERR-NEST
// RUN: not qidao-opt %s -p 'prefetch{kernel="k" loop="k" buffer="b" ahead="j_o" locality=5}' 2>&1 | filecheck %s --check-prefix=ERR-LOCALITY
// RUN: not qidao-opt %s -p 'prefetch{kernel="k_refuse" loop="k" buffer="b" ahead="j_o"}' 2>&1 | filecheck %s --check-prefix=ERR-ONE
// RUN: not qidao-opt %s -p 'prefetch{kernel="k_refuse" loop="k2" buffer="d" ahead="j2"}' 2>&1 | filecheck %s --check-prefix=ERR-LATER
// RUN: not qidao-opt %s -p 'prefetch{kernel="k_refuse" loop="k3" buffer="b3" ahead="j3"}' 2>&1 | filecheck %s --check-prefix=ERR-START

// A matmul's tile loops after split and reorder, B in 3 panels of 8 x 4 (the
// panel j_o reads b[j_o, k, ..]): in k's body, 2 row tiles x 8 steps = 16
// iterations per panel prefetch the next panel's 32 elements, two per iteration
// (e = (i_o * 8 + k) * 2, linear), row e floordiv 4 and column e mod 4, the panel
// index clamped to the last one.
// CHECK-LABEL: func.func private @k(
// CHECK:         affine.for %k = 0 to 8 {
// CHECK-NEXT:      %[[N:.*]] = affine.min affine_map<(d0) -> ((d0 + 1), 2)> (%j_o)
// CHECK-NEXT:      %[[R:.*]] = affine.apply affine_map<(d0, d1) -> ((((d0 * 16) + (d1 * 2)) floordiv 4))> (%i_o, %k)
// CHECK-NEXT:      %[[C:.*]] = affine.apply affine_map<(d0, d1) -> ((((d0 * 16) + (d1 * 2)) mod 4))> (%i_o, %k)
// CHECK-NEXT:      cache.prefetch %b[%[[N]], %[[R]], %[[C]]] locality = 2 : memref<3x8x4xf32>
// CHECK-NEXT:      affine.for %i_i = 0 to 2 {
func.func private @k(%a: memref<4x8xf32> {llvm.noalias}, %b: memref<3x8x4xf32> {llvm.noalias}, %y: memref<4x12xf32> {llvm.noalias}, %few: memref<3x2xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %j_o = 0 to 3 {
    affine.for %i_o = 0 to 2 {
      affine.for %k = 0 to 8 {
        affine.for %i_i = 0 to 2 {
          affine.for %j_i = 0 to 4 {
            %x = affine.load %a[%i_o * 2 + %i_i, %k] : memref<4x8xf32>
            %w = affine.load %b[%j_o, %k, %j_i] : memref<3x8x4xf32>
            %z = affine.load %few[%j_o, 1] : memref<3x2xf32>
            %c = affine.load %y[%i_o * 2 + %i_i, %j_o * 4 + %j_i] : memref<4x12xf32>
            %p = arith.mulf %x, %w : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %y[%i_o * 2 + %i_i, %j_o * 4 + %j_i] : memref<4x12xf32>
          } {qd.loop = "j_i"}
        } {qd.loop = "i_i"}
      } {qd.loop = "k"}
    } {qd.loop = "i_o"}
  } {qd.loop = "j_o"}
  func.return
}

// Lowered: the clamp and the element's indices are index arithmetic, the
// prefetch stays (with the locality asked for).
// LOWER-LABEL: func.func private @k(
// LOWER:         cache.prefetch %b[{{.*}}] locality = 3 : memref<3x8x4xf32>

// Lowered to LLVM, the element's address, then llvm.prefetch (read, locality 2,
// data).
// LLVM-LABEL: llvm.func @k(
// LLVM:         %[[P:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// LLVM:         llvm.call_intrinsic "llvm.prefetch.p0"(%[[P]], %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i32, i32, i32) -> ()

// From i_o's body: 2 iterations per panel, 16 elements each (row e floordiv 4
// with e = i_o * 16).
// OUTER-LABEL: func.func private @k(
// OUTER:         affine.for %i_o = 0 to 2 {
// OUTER-NEXT:      %[[N:.*]] = affine.min affine_map<(d0) -> ((d0 + 1), 2)> (%j_o)
// OUTER-NEXT:      %[[R:.*]] = affine.apply affine_map<(d0) -> (((d0 * 16) floordiv 4))> (%i_o)
// OUTER-NEXT:      %[[C:.*]] = affine.apply affine_map<(d0) -> (((d0 * 16) mod 4))> (%i_o)
// OUTER-NEXT:      cache.prefetch %b[%[[N]], %[[R]], %[[C]]] locality = 0 : memref<3x8x4xf32>
// OUTER-NEXT:      affine.for %k = 0 to 8 {

// A slice smaller than the iterations (few's 2 elements over 16): element
// floor(t * 2 / 16), each fetched by 8 iterations.
// FEW-LABEL: func.func private @k(
// FEW:         affine.for %k = 0 to 8 {
// FEW-NEXT:      %[[N:.*]] = affine.min affine_map<(d0) -> ((d0 + 1), 2)> (%j_o)
// FEW-NEXT:      %[[E:.*]] = affine.apply affine_map<(d0, d1) -> ((((d0 * 8) + d1) floordiv 8))> (%i_o, %k)
// FEW-NEXT:      cache.prefetch %few[%[[N]], %[[E]]] locality = 2 : memref<3x2xf32>

// A prefetch changes no result: the panels still run in parallel (each thread's
// prefetch its next).
// PAR-LABEL: func.func private @k(
// PAR:           cache.prefetch %b
// PAR:         } {qd.loop = "j_o", qd.parallel}

// Must not fire: a is read at [row, k] (its first index is not j_o), c is not read,
// k is not around j_o, locality past 3.
// ERR-FIRST: IllegalScheduleError: prefetch: loop 'k' in kernel 'k': 'a' is read at ()[s0, s1, s2] -> (((s0 * 2) + s1), s2) whose first index is not 'j_o' alone: no slice per iteration of it
// ERR-NONE: IllegalScheduleError: prefetch: loop 'k' in kernel 'k': its body loads no memref named 'c'
// ERR-NEST: IllegalScheduleError: prefetch: loop 'j_o' in kernel 'k': it is not nested in 'k'
// ERR-LOCALITY: InvalidArgumentError: prefetch: loop 'k' in kernel 'k': locality must be 0..3, got 5

// ERR-ONE: IllegalScheduleError: prefetch: loop 'j_o' in kernel 'k_refuse': it has one iteration: there is no next slice
// ERR-LATER: IllegalScheduleError: prefetch: loop 'k2' in kernel 'k_refuse': 'd' is read at ()[s0, s1] -> (s0, (s0 + s1)), whose later indices read 'j2' too
// ERR-START: IllegalScheduleError: prefetch: loop 'k3' in kernel 'k_refuse': it starts at 2, not 0
func.func private @k_refuse(%b: memref<1x8xf32>, %d: memref<4x8xf32>, %b3: memref<4x8xf32>, %y: memref<8xf32>) attributes {qd.kernel = "tg.matmul"} {
  affine.for %j_o = 0 to 1 {
    affine.for %k = 0 to 8 {
      %w = affine.load %b[%j_o, %k] : memref<1x8xf32>
      affine.store %w, %y[%k] : memref<8xf32>
    } {qd.loop = "k"}
  } {qd.loop = "j_o"}
  affine.for %j2 = 0 to 4 {
    affine.for %k2 = 0 to 4 {
      %w = affine.load %d[%j2, %j2 + %k2] : memref<4x8xf32>
      affine.store %w, %y[%k2] : memref<8xf32>
    } {qd.loop = "k2"}
  } {qd.loop = "j2"}
  affine.for %j3 = 0 to 4 {
    affine.for %k3 = 2 to 8 {
      %w = affine.load %b3[%j3, %k3] : memref<4x8xf32>
      affine.store %w, %y[%k3] : memref<8xf32>
    } {qd.loop = "k3"}
  } {qd.loop = "j3"}
  func.return
}
