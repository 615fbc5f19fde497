// RUN: qidao-opt %s -p 'tensorize{kernel="k" loop="i_t" intrinsic="wmma_tf32"}' | filecheck %s
// RUN: qidao-opt %s -p 'tensorize{kernel="k_f16" loop="i_t" intrinsic="wmma_f16"}' | filecheck %s --check-prefix=F16
// RUN: qidao-opt %s -p 'tensorize{kernel="k_rows" loop="i_t" intrinsic="wmma_tf32"}' | filecheck %s --check-prefix=ROWS
// RUN: not qidao-opt %s -p 'tensorize{kernel="k" loop="i_t" intrinsic="wmma_bf16"}' 2>&1 | filecheck %s --check-prefix=ERR-INTRINSIC
// RUN: not qidao-opt %s -p 'tensorize{kernel="k" loop="i_t" intrinsic="wmma_f16"}' 2>&1 | filecheck %s --check-prefix=ERR-EXTENT
// RUN: not qidao-opt %s -p 'tensorize{kernel="k" loop="j_t" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-NEST
// RUN: not qidao-opt %s -p 'tensorize{kernel="k" loop="tj" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-MAC
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_sub" loop="i_t" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-SUB
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_f64" loop="i_t" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-DTYPE
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_stride" loop="i_t" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-STRIDE
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_ldm" loop="i_t" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-LDM
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_global_f16" loop="i_t" intrinsic="wmma_f16"}' 2>&1 | filecheck %s --check-prefix=ERR-HALF
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_serial" loop="i_t" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-GPU
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_lanes" loop="i_t" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-LANES
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_x" loop="i_t" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-X
// RUN: not qidao-opt %s -p 'tensorize{kernel="k_64" loop="i_t" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-WARPS
// RUN: not qidao-opt %s -p 'tensorize{kernel="k" loop="i_t" intrinsic="wmma_tf32"},tensorize{kernel="k" loop="i_t" intrinsic="wmma_tf32"}' 2>&1 | filecheck %s --check-prefix=ERR-TWICE

// The docstring's example: a warp's 16 x 32 tile of C in %acc (cache_write at
// the warp loop 'w', on threadIdx.y), its copy-in and write-back shared by the 32
// lanes (block-stride loops), and two 16 x 16 x 8 tiles of A (global, TF32)
// times B into it. Only the tile's head is marked; the loops and the other
// loops of the nest are unchanged.
// CHECK-LABEL: func.func private @k(
// CHECK:           } {qd.loop = "w_cw_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
// CHECK-NEXT:      affine.for %tj = 0 to 2 {
// CHECK-NEXT:        affine.for %i_t = 0 to 16 {
// CHECK-NEXT:          affine.for %j_t = 0 to 16 {
// CHECK-NEXT:            affine.for %k_t = 0 to 8 {
// CHECK-NEXT:              %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32>
// CHECK-NEXT:              %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
// CHECK-NEXT:              %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
// CHECK-NEXT:              %p = arith.mulf %x, %y : f32
// CHECK-NEXT:              %s = arith.addf %c, %p : f32
// CHECK-NEXT:              affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
// CHECK-NEXT:            } {qd.loop = "k_t"}
// CHECK-NEXT:          } {qd.loop = "j_t"}
// CHECK-NEXT:        } {qd.loop = "i_t", qd.tensorize = "wmma_tf32"}
// CHECK-NEXT:      } {qd.loop = "tj"}
// CHECK-NOT:       qd.tensorize
// CHECK:         } {qd.loop = "w", qd.bind = "threadIdx.y"}
func.func private @k(%a: memref<32x8xf32> {llvm.noalias}, %b: memref<8x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}

// FP16: A and B are staging buffers (their copy will round them to half in
// __shared__), the tile 16 x 16 x 16.
// F16-LABEL: func.func private @k_f16(
// F16:           } {qd.loop = "i_t", qd.tensorize = "wmma_f16"}
func.func private @k_f16(%a: memref<32x16xf32> {llvm.noalias}, %b: memref<16x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %a_pack = memref.alloca() : memref<16x16xf32>
    %b_pack = memref.alloca() : memref<16x32xf32>
    affine.for %w_cr_i0 = 0 to 16 {
      affine.for %w_cr_i1 = 0 to 16 {
        %2 = affine.load %a[%w * 16 + %w_cr_i0, %w_cr_i1] : memref<32x16xf32>
        affine.store %2, %a_pack[%w_cr_i0, %w_cr_i1] : memref<16x16xf32>
      } {qd.loop = "w_cr_i1"}
    } {qd.loop = "w_cr_i0"}
    affine.for %w_cr2_i0 = 0 to 16 {
      affine.for %w_cr2_i1 = 0 to 32 {
        %3 = affine.load %b[%w_cr2_i0, %w_cr2_i1] : memref<16x32xf32>
        affine.store %3, %b_pack[%w_cr2_i0, %w_cr2_i1] : memref<16x32xf32>
      } {qd.loop = "w_cr2_i1"}
    } {qd.loop = "w_cr2_i0"}
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 16 {
            %x = affine.load %a_pack[%i_t, %k_t] : memref<16x16xf32>
            %y = affine.load %b_pack[%k_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}

// The lanes share the tile's rows (its head a block-stride loop of 32 threads):
// C accumulates straight into %out, and the mark joins the binding.
// ROWS-LABEL: func.func private @k_rows(
// ROWS:           } {qd.loop = "i_t", qd.bind = "threadIdx.x", qd.threads = 32 : i64, qd.tensorize = "wmma_tf32"}
func.func private @k_rows(%a: memref<32x8xf32> {llvm.noalias}, %b: memref<8x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
            %c = affine.load %out[%w * 16 + %i_t, %tj * 16 + %j_t] : memref<32x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %out[%w * 16 + %i_t, %tj * 16 + %j_t] : memref<32x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
    } {qd.loop = "tj"}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}

// Errors on the example: an unknown intrinsic; its 16 x 16 x 8 tile for the
// 16 x 16 x 16 FP16 intrinsic; a loop that does not head the tile (the
// innermost, the one around it).
// ERR-INTRINSIC: tensorize: loop 'i_t' in kernel 'k': unknown intrinsic 'wmma_bf16'; the intrinsics are: wmma_tf32 (16x16x8), wmma_f16 (16x16x16)
// ERR-EXTENT: TileExtentError: tensorize: loop 'i_t' in kernel 'k': wmma_f16 computes a 16 x 16 x 16 tile (i x j x k); the loops i='i_t', j='j_t', k='k_t' run 16 x 16 x 8
// ERR-NEST: NotMatmulTileError: tensorize: loop 'j_t' in kernel 'k': it must head a perfect nest of three loops (the tile's i, j and k); the body of 'k_t' holds affine.load, affine.load, affine.load, arith.mulf, arith.addf, affine.store
// ERR-MAC: NotMatmulTileError: tensorize: loop 'tj' in kernel 'k': the innermost body must be a multiply-accumulate: {{.*}}; it is: affine.for

// Not a multiply-accumulate: C - A * B.
// ERR-SUB: NotMatmulTileError: tensorize: loop 'i_t' in kernel 'k_sub': the innermost body must be a multiply-accumulate: three affine.load, an arith.mulf, an arith.addf and an affine.store of C[i, j] + A[i, k] * B[k, j]; it is: affine.load, affine.load, affine.load, arith.mulf, arith.subf, affine.store
func.func private @k_sub(%a: memref<32x8xf32> {llvm.noalias}, %b: memref<8x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.subf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}

// f64: the intrinsics multiply f32 inputs.
// ERR-DTYPE: TileDtypeError: tensorize: loop 'i_t' in kernel 'k_f64': A (%a) holds f64; wmma_tf32 multiplies f32 inputs (rounded to its precision) into an f32 accumulator
func.func private @k_f64(%a: memref<32x8xf64> {llvm.noalias}, %b: memref<8x32xf64> {llvm.noalias}, %out: memref<32x32xf64> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf64>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf64>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf64>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf64>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf64>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf64>
            %p = arith.mulf %x, %y : f64
            %s = arith.addf %c, %p : f64
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf64>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf64>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf64>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}

// A with stride 2 along k and 16 along i: unit stride along neither.
// ERR-STRIDE: TileStrideError: tensorize: loop 'i_t' in kernel 'k_stride': A (%a: memref<32x8xf32, strided<[16, 2]>>) moves by 16 and 2 elements along the tile's two dimensions; WMMA loads a matrix with unit stride along its rows or its columns
func.func private @k_stride(%a: memref<32x8xf32, strided<[16, 2]>> {llvm.noalias}, %b: memref<8x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32, strided<[16, 2]>>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}

// A's rows 10 floats apart: WMMA's leading dimension is a multiple of 16 bytes.
// ERR-LDM: TileStrideError: tensorize: loop 'i_t' in kernel 'k_ldm': A (%a: memref<32x8xf32, strided<[10, 1]>>) has a leading dimension of 10 elements; WMMA needs a positive multiple of 16 bytes (4 floats)
func.func private @k_ldm(%a: memref<32x8xf32, strided<[10, 1]>> {llvm.noalias}, %b: memref<8x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32, strided<[10, 1]>>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}

// FP16 with A and B read from global memory, f32: nothing rounds them to half.
// ERR-HALF: TileDtypeError: tensorize: loop 'i_t' in kernel 'k_global_f16': wmma_f16 multiplies half tiles, and A (%a) is f32 in memory: cache_read it around the tile, so that the copy staging it in __shared__ rounds it to half
func.func private @k_global_f16(%a: memref<32x16xf32> {llvm.noalias}, %b: memref<16x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 16 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x16xf32>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0", qd.bind = "threadIdx.x", qd.threads = 32 : i64}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}

// The warp rules. No bound loop: no warp.
// ERR-GPU: WarpMappingError: tensorize: loop 'i_t' in kernel 'k_serial': WMMA runs on a warp of a GPU, and no loop of the tile's nest is bound to the GPU: bind the loops around it first (blocks, and threadIdx.y/z for the warps)
func.func private @k_serial(%a: memref<32x8xf32> {llvm.noalias}, %b: memref<8x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0"}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0"}
  } {qd.loop = "w"}
  func.return
}

// A warp loop on threadIdx.y but no lanes: each warp would hold 32 different
// tiles.
// ERR-LANES: WarpMappingError: tensorize: loop 'i_t' in kernel 'k_lanes': WMMA is a warp's operation and the nest has no lanes: threadIdx.x must be 32 threads of block_stride loops.
func.func private @k_lanes(%a: memref<32x8xf32> {llvm.noalias}, %b: memref<8x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0"}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0"}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}

// The warp loop on threadIdx.x: the lanes' axis.
// ERR-X: WarpMappingError: tensorize: loop 'i_t' in kernel 'k_x': loop 'w' is bound to threadIdx.x, which is the warp's 32 lanes (block_stride loops of 32 threads); bind the warps to threadIdx.y and threadIdx.z
func.func private @k_x(%a: memref<32x8xf32> {llvm.noalias}, %b: memref<8x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0"}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0"}
  } {qd.loop = "w", qd.bind = "threadIdx.x"}
  func.return
}

// Rows of 64 threads: two warps would run each tile.
// ERR-WARPS: WarpMappingError: tensorize: loop 'i_t' in kernel 'k_64': the nest's block-stride loops have 64 threads, 2 warps a row of threads, which would each run the tile: a row must be one warp (32 threads)
func.func private @k_64(%a: memref<32x8xf32> {llvm.noalias}, %b: memref<8x32xf32> {llvm.noalias}, %out: memref<32x32xf32> {llvm.noalias}) attributes {qd.kernel = "tg.matmul"} {
  affine.for %w = 0 to 2 {
    %acc = memref.alloca() : memref<16x32xf32>
    affine.for %w_cw_i0 = 0 to 16 {
      affine.for %w_cw_i1 = 0 to 32 {
        %0 = affine.load %out[%w * 16 + %w_cw_i0, %w_cw_i1] : memref<32x32xf32>
        affine.store %0, %acc[%w_cw_i0, %w_cw_i1] : memref<16x32xf32>
      } {qd.loop = "w_cw_i1"}
    } {qd.loop = "w_cw_i0", qd.bind = "threadIdx.x", qd.threads = 64 : i64}
    affine.for %tj = 0 to 2 {
      affine.for %i_t = 0 to 16 {
        affine.for %j_t = 0 to 16 {
          affine.for %k_t = 0 to 8 {
            %x = affine.load %a[%w * 16 + %i_t, %k_t] : memref<32x8xf32>
            %y = affine.load %b[%k_t, %tj * 16 + %j_t] : memref<8x32xf32>
            %c = affine.load %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
            %p = arith.mulf %x, %y : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %acc[%i_t, %tj * 16 + %j_t] : memref<16x32xf32>
          } {qd.loop = "k_t"}
        } {qd.loop = "j_t"}
      } {qd.loop = "i_t"}
    } {qd.loop = "tj"}
    affine.for %w_wb_i0 = 0 to 16 {
      affine.for %w_wb_i1 = 0 to 32 {
        %1 = affine.load %acc[%w_wb_i0, %w_wb_i1] : memref<16x32xf32>
        affine.store %1, %out[%w * 16 + %w_wb_i0, %w_wb_i1] : memref<32x32xf32>
      } {qd.loop = "w_wb_i1"}
    } {qd.loop = "w_wb_i0", qd.bind = "threadIdx.x", qd.threads = 64 : i64}
  } {qd.loop = "w", qd.bind = "threadIdx.y"}
  func.return
}

// Tensorized already (the same request twice).
// ERR-TWICE: NotMatmulTileError: tensorize: loop 'i_t' in kernel 'k': it is tensorized already (wmma_tf32)
