// The book's y = relu(x·w + b) down the whole tower, one RUN line per level.
// RUN: qidao compile %s --emit tg | filecheck %s --check-prefix=TG
// RUN: qidao compile %s --emit affine | filecheck %s --check-prefix=AFFINE
// RUN: qidao compile %s --emit llvm-dialect | filecheck %s --check-prefix=LLVMD
// RUN: qidao compile %s --emit llvm | filecheck %s --check-prefix=LLVM
// RUN: qidao compile %s --emit llvm-opt | filecheck %s --check-prefix=OPT

// TG:      %[[MM:.*]] = tg.matmul %x, %w
// TG-NEXT: tg.fused %[[MM]], %b
// TG:        tg.add
// TG-NEXT:   tg.relu

// AFFINE-LABEL: func.func private @main_k0_matmul
// AFFINE:         {qd.loop = "j"}
// AFFINE:         {qd.loop = "k"}
// AFFINE:         {qd.loop = "i"}
// AFFINE-LABEL: func.func private @main_k1_fused
// AFFINE-SAME:    qd.kernel = "tg.add+tg.relu"
// AFFINE:         arith.maximumf
// AFFINE-LABEL: func.func @main(%x: memref<8x16xf32>, %w: memref<16x4xf32>, %b: memref<4xf32>, %out0: memref<8x4xf32>)
// AFFINE:         %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x4xf32>
// AFFINE-NEXT:    func.call @main_k0_matmul(%x, %w, %[[T]])
// AFFINE-NEXT:    func.call @main_k1_fused(%[[T]], %b, %out0)
// AFFINE-NEXT:    memref.dealloc %[[T]]

// LLVMD: llvm.func @main_k0_matmul(%x: !llvm.ptr {llvm.noalias}
// LLVMD: llvm.call @aligned_alloc
// LLVMD: llvm.call @free

// LLVM: define void @"main_k0_matmul"(ptr noalias %"x", ptr noalias %"w", ptr noalias %"out")
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
