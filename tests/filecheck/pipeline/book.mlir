// The book's y = relu(x·w + b) down the whole tower, one RUN line per level.
// RUN: qidao compile %s --emit tg | filecheck %s --check-prefix=TG
// RUN: qidao compile %s --emit affine | filecheck %s --check-prefix=AFFINE
// RUN: qidao compile %s --emit llvm-dialect | filecheck %s --check-prefix=LLVMD
// RUN: qidao compile %s --emit llvm | filecheck %s --check-prefix=LLVM
// RUN: qidao compile %s --emit llvm-opt | filecheck %s --check-prefix=OPT

// TG:      tg.fused %x, %w, %b
// TG:        tg.matmul
// TG-NEXT:   tg.add
// TG-NEXT:   tg.relu

// AFFINE-LABEL: func.func private @main_k0_fused
// AFFINE-SAME:    qd.kernel = "tg.matmul+tg.add+tg.relu"
// AFFINE:         {qd.loop = "j"}
// AFFINE:         {qd.loop = "k"}
// AFFINE:         {qd.loop = "i"}
// AFFINE:         arith.maximumf
// AFFINE:         {qd.loop = "j_epi"}
// AFFINE:         {qd.loop = "i_epi"}
// AFFINE-LABEL: func.func @main(%x: memref<8x16xf32>, %w: memref<16x4xf32>, %b: memref<4xf32>, %out0: memref<8x4xf32>)
// AFFINE-NOT:     memref.alloc
// AFFINE:         func.call @main_k0_fused(%x, %w, %b, %out0)
// AFFINE-NEXT:    func.return

// LLVMD: llvm.func @main_k0_fused(%x: !llvm.ptr {llvm.noalias}
// LLVMD-NOT: llvm.call @aligned_alloc

// LLVM: define void @"main_k0_fused"(ptr noalias %"x", ptr noalias %"w", ptr noalias %"b", ptr noalias %"out")
// LLVM: define void @"main"(ptr %"x", ptr %"w", ptr %"b", ptr %"out0")

// After -O3 for the host CPU the fused epilogue is vectorized.
// OPT: define void @main(
// OPT: <{{[0-9]+}} x float>

func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
  %0 = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = tg.add %0, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %2 = tg.relu %1 : tensor<8x4xf32> -> tensor<8x4xf32>
  func.return %2 : tensor<8x4xf32>
}
