// RUN: qidao-opt %s -p 'cache-read{kernel="k" loop="j_o" buffer="w"}' | filecheck %s
// RUN: qidao-opt %s -p 'cache-read{kernel="k_mm" loop="j_o" buffer="w"}' | filecheck %s --check-prefix=MM
// RUN: qidao-opt %s -p 'cache-read{kernel="k_tail" loop="j_o" buffer="w"}' | filecheck %s --check-prefix=TAIL
// RUN: qidao-opt %s -p 'cache-read{kernel="k_llvm" loop="j_o" buffer="w"},lower-affine,convert-scf-to-cf,convert-to-llvm' | filecheck %s --check-prefix=LLVM
// RUN: qidao-opt %s -p 'cache-read{kernel="k_par" loop="i" buffer="w"},parallel{kernel="k_par" loop="i"},lower-affine,convert-parallel-to-gomp{threads=2},convert-scf-to-cf,convert-to-llvm' | filecheck %s --check-prefix=GOMP
// RUN: not qidao-opt %s -p 'cache-read{kernel="k" loop="nope" buffer="w"}' 2>&1 | filecheck %s --check-prefix=ERR-LOOP
// RUN: not qidao-opt %s -p 'cache-read{kernel="k" loop="j_o" buffer="b"}' 2>&1 | filecheck %s --check-prefix=ERR-NAME
// RUN: not qidao-opt %s -p 'cache-read{kernel="k" loop="j_o" buffer="out"}' 2>&1 | filecheck %s --check-prefix=ERR-WRITE
// RUN: not qidao-opt %s -p 'cache-read{kernel="k_view" loop="i" buffer="w"}' 2>&1 | filecheck %s --check-prefix=ERR-VIEW
// RUN: not qidao-opt %s -p 'cache-read{kernel="k_alias" loop="i" buffer="w"}' 2>&1 | filecheck %s --check-prefix=ERR-ALIAS
// RUN: not qidao-opt %s -p 'cache-read{kernel="k_use" loop="i" buffer="w"}' 2>&1 | filecheck %s --check-prefix=ERR-USE
// RUN: not qidao-opt %s -p 'cache-read{kernel="k_mod" loop="j_o" buffer="w"}' 2>&1 | filecheck %s --check-prefix=ERR-MOD
// RUN: not qidao-opt %s -p 'cache-read{kernel="k_big" loop="i" buffer="w"}' 2>&1 | filecheck %s --check-prefix=ERR-BIG

// The docstring's example: %w's tile (all 4 rows, columns [4 * j_o, 4 * j_o + 4))
// packed at the top of j_o's body; %out, which the body writes, is untouched.
// CHECK-LABEL: func.func private @k(
// CHECK-NEXT:    affine.for %j_o = 0 to 2 {
// CHECK-NEXT:      %w_pack = memref.alloca() : memref<4x4xf32>
// CHECK-NEXT:      affine.for %j_o_cr_i0 = 0 to 4 {
// CHECK-NEXT:        affine.for %j_o_cr_i1 = 0 to 4 {
// CHECK-NEXT:          %0 = affine.load %w[%j_o_cr_i0, %j_o_cr_i1 + %j_o * 4] : memref<4x8xf32>
// CHECK-NEXT:          affine.store %0, %w_pack[%j_o_cr_i0, %j_o_cr_i1] : memref<4x4xf32>
// CHECK-NEXT:        } {qd.loop = "j_o_cr_i1"}
// CHECK-NEXT:      } {qd.loop = "j_o_cr_i0"}
// CHECK-NEXT:      affine.for %k = 0 to 4 {
// CHECK-NEXT:        affine.for %j_i = 0 to 4 {
// CHECK-NEXT:          %a = affine.load %w_pack[%k, %j_i] : memref<4x4xf32>
// CHECK-NEXT:          %b = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
// CHECK-NEXT:          %c = arith.addf %a, %b : f32
// CHECK-NEXT:          affine.store %c, %out[%j_o * 4 + %j_i] : memref<8xf32>
// CHECK-NEXT:        } {qd.loop = "j_i"}
// CHECK-NEXT:      } {qd.loop = "k"}
// CHECK-NEXT:    } {qd.loop = "j_o"}
// CHECK-NEXT:    func.return
func.func private @k(%w: memref<4x8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %j_o = 0 to 2 {
    affine.for %k = 0 to 4 {
      affine.for %j_i = 0 to 4 {
        %a = affine.load %w[%k, %j_o * 4 + %j_i] : memref<4x8xf32>
        %b = affine.load %out[%j_o * 4 + %j_i] : memref<8xf32>
        %c = arith.addf %a, %b : f32
        affine.store %c, %out[%j_o * 4 + %j_i] : memref<8xf32>
      } {qd.loop = "j_i"}
    } {qd.loop = "k"}
  } {qd.loop = "j_o"}
  func.return
}

// Matmul with j split by 4 and j_o outermost: B's 3 x 4 panel is packed once per
// j_o and every row i reads it; the loads of %x and %out are untouched.
// MM-LABEL: func.func private @k_mm(
// MM-NEXT:    affine.for %j_o = 0 to 2 {
// MM-NEXT:      %w_pack = memref.alloca() : memref<3x4xf32>
// MM-NEXT:      affine.for %j_o_cr_i0 = 0 to 3 {
// MM-NEXT:        affine.for %j_o_cr_i1 = 0 to 4 {
// MM-NEXT:          %0 = affine.load %w[%j_o_cr_i0, %j_o_cr_i1 + %j_o * 4] : memref<3x8xf32>
// MM-NEXT:          affine.store %0, %w_pack[%j_o_cr_i0, %j_o_cr_i1] : memref<3x4xf32>
// MM-NEXT:        } {qd.loop = "j_o_cr_i1"}
// MM-NEXT:      } {qd.loop = "j_o_cr_i0"}
// MM-NEXT:      affine.for %i = 0 to 4 {
// MM-NEXT:        affine.for %k = 0 to 3 {
// MM-NEXT:          affine.for %j_i = 0 to 4 {
// MM-NEXT:            %a = affine.load %x[%i, %k] : memref<4x3xf32>
// MM-NEXT:            %b = affine.load %w_pack[%k, %j_i] : memref<3x4xf32>
// MM-NEXT:            %c = affine.load %out[%i, %j_o * 4 + %j_i] : memref<4x8xf32>
func.func private @k_mm(%x: memref<4x3xf32> {llvm.noalias}, %w: memref<3x8xf32> {llvm.noalias}, %out: memref<4x8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %j_o = 0 to 2 {
    affine.for %i = 0 to 4 {
      affine.for %k = 0 to 3 {
        affine.for %j_i = 0 to 4 {
          %a = affine.load %x[%i, %k] : memref<4x3xf32>
          %b = affine.load %w[%k, %j_o * 4 + %j_i] : memref<3x8xf32>
          %c = affine.load %out[%i, %j_o * 4 + %j_i] : memref<4x8xf32>
          %d = arith.mulf %a, %b : f32
          %e = arith.addf %c, %d : f32
          affine.store %e, %out[%i, %j_o * 4 + %j_i] : memref<4x8xf32>
        } {qd.loop = "j_i"}
      } {qd.loop = "k"}
    } {qd.loop = "i"}
  } {qd.loop = "j_o"}
  func.return
}

// A split tail (10 = 4 + 4 + 2): the copy is clipped to the memref's shape, and the
// body reads only what was copied.
// TAIL-LABEL: func.func private @k_tail(
// TAIL:         %w_pack = memref.alloca() : memref<4xf32>
// TAIL-NEXT:    affine.for %j_o_cr_i0 = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%j_o) {
// TAIL-NEXT:      %0 = affine.load %w[%j_o_cr_i0 + %j_o * 4] : memref<10xf32>
// TAIL-NEXT:      affine.store %0, %w_pack[%j_o_cr_i0] : memref<4xf32>
// TAIL:         affine.for %j_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%j_o) {
// TAIL-NEXT:      %v = affine.load %w_pack[%j_i] : memref<4xf32>
func.func private @k_tail(%w: memref<10xf32> {llvm.noalias}, %out: memref<10xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %j_o = 0 to 3 {
    affine.for %j_i = 0 to min affine_map<(d0) -> (4, ((d0 * -4) + 10))>(%j_o) {
      %v = affine.load %w[%j_o * 4 + %j_i] : memref<10xf32>
      affine.store %v, %out[%j_o * 4 + %j_i] : memref<10xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  func.return
}

// Lowered to the llvm dialect, the pack's memref.alloca, in j_o's body, becomes an llvm.alloca
// in the function's entry block (constant stack space however long the loop runs).
// LLVM-LABEL: llvm.func @k_llvm(
// LLVM-NOT:     ^bb
// LLVM:         %[[P:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// LLVM-NEXT:    %w_pack = llvm.bitcast %[[P]] : !llvm.ptr to !llvm.ptr
// LLVM-NEXT:    llvm.br ^bb1
// LLVM-NOT:     llvm.alloca
// LLVM:         llvm.return
func.func private @k_llvm(%w: memref<2x8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %j_o = 0 to 2 {
    affine.for %k = 0 to 2 {
      affine.for %j_i = 0 to 4 {
        %a = affine.load %w[%k, %j_o * 4 + %j_i] : memref<2x8xf32>
        affine.store %a, %out[%j_o * 4 + %j_i] : memref<8xf32>
      } {qd.loop = "j_i"}
    } {qd.loop = "k"}
  } {qd.loop = "j_o"}
  func.return
}

// A transposed read: column i of %w (8 elements, stride 8) packed contiguously per
// i. With i on worker threads, the pack lives in the entry block of the outlined
// body that each thread calls: each thread has its own.
// GOMP-LABEL: llvm.func @k_par_i_par_body(
// GOMP-NOT:     ^bb
// GOMP:         %[[P:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// GOMP-NEXT:    %w_pack = llvm.bitcast %[[P]] : !llvm.ptr to !llvm.ptr
// GOMP-NEXT:    llvm.br ^bb1
// GOMP-NOT:     llvm.alloca
// GOMP:         llvm.return
func.func private @k_par(%w: memref<8x8xf32> {llvm.noalias}, %out: memref<8x8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %v = affine.load %w[%j, %i] : memref<8x8xf32>
      affine.store %v, %out[%i, %j] : memref<8x8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// ERR-LOOP: cache-read: loop 'nope' in kernel 'k': no such loop; the kernel's loops are: j_o, k, j_i

// ERR-NAME: cache-read: loop 'j_o' in kernel 'k': no memref named %b is used in its body; it uses: %w, %out

// ERR-WRITE: cache-read: loop 'j_o' in kernel 'k': its body writes %out (affine.store): only a memref that the body only reads can be packed

// The body writes %w through a view of it.
// ERR-VIEW: cache-read: loop 'i' in kernel 'k_view': its body writes %v (affine.store), a view of %w: only a memref that the body only reads can be packed
func.func private @k_view(%w: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  %v = memref.subview %w[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  affine.for %i = 0 to 4 {
    %a = affine.load %w[%i] : memref<8xf32>
    affine.store %a, %v[%i] : memref<4xf32, strided<[1], offset: 4>>
  } {qd.loop = "i"}
  func.return
}

// Neither argument is llvm.noalias: %out may be %w, and the pack could go stale.
// ERR-ALIAS: cache-read: loop 'i' in kernel 'k_alias': its body writes %out (affine.store), which may alias %w (neither is an llvm.noalias argument): the packed copy could go stale
func.func private @k_alias(%w: memref<8xf32>, %out: memref<8xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 4 {
      %a = affine.load %w[%i * 4 + %j] : memref<8xf32>
      affine.store %a, %out[%i * 4 + %j] : memref<8xf32>
    } {qd.loop = "j"}
  } {qd.loop = "i"}
  func.return
}

// ERR-USE: cache-read: loop 'i' in kernel 'k_use': %w is used by memref.load in its body; only its affine.load reads can be packed
func.func private @k_use(%w: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 8 {
    %a = memref.load %w[%i] : memref<8xf32>
    affine.store %a, %out[%i] : memref<8xf32>
  } {qd.loop = "i"}
  func.return
}

// ERR-MOD: cache-read: loop 'j_o' in kernel 'k_mod': index 0 of %w (((d0 * 4) + (d1 mod 3))) is not affine in the loops inside it
func.func private @k_mod(%w: memref<8xf32> {llvm.noalias}, %out: memref<8xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %j_o = 0 to 2 {
    affine.for %j_i = 0 to 4 {
      %a = affine.load %w[%j_o * 4 + %j_i mod 3] : memref<8xf32>
      affine.store %a, %out[%j_o * 4 + %j_i] : memref<8xf32>
    } {qd.loop = "j_i"}
  } {qd.loop = "j_o"}
  func.return
}

// ERR-BIG: cache-read: loop 'i' in kernel 'k_big': the footprint of %w is 512x1024 = 524288 elements, more than 262144
func.func private @k_big(%w: memref<512x1024xf32> {llvm.noalias}, %out: memref<1024xf32> {llvm.noalias}) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 1 {
    affine.for %r = 0 to 512 {
      affine.for %c = 0 to 1024 {
        %a = affine.load %w[%r, %c] : memref<512x1024xf32>
        affine.store %a, %out[%c] : memref<1024xf32>
      } {qd.loop = "c"}
    } {qd.loop = "r"}
  } {qd.loop = "i"}
  func.return
}
