// The driver's own switches, on a small graph.
// RUN: qidao-opt %s -p fuse,convert-tg-to-affine --print-ir-after=fuse | filecheck %s --check-prefix=AFTER
// RUN: qidao-opt %s -p fuse,convert-tg-to-affine --print-between-passes | filecheck %s --check-prefix=BETWEEN
// RUN: qidao-opt %s -p fuse --time-passes | filecheck %s --check-prefix=TIME
// RUN: qidao-opt %s -p fuse --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: not qidao-opt %s -p fuse --print-ir-after=fusee 2>&1 | filecheck %s --check-prefix=UNKNOWN

// AFTER:      // -----// IR after fuse //----- //
// AFTER:      tg.fused
// AFTER-NOT:  IR after convert-tg-to-affine
// AFTER:      func.func private @main_k0_fused

// BETWEEN:      IR after fuse:
// BETWEEN:      tg.fused
// BETWEEN:      affine.for

// TIME: Pass fuse took

// GENERIC: "tg.fused"(%x, %b)

// UNKNOWN: --print-ir-after names unknown pass(es): fusee

func.func @main(%x: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = tg.add %x, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = tg.relu %0 : tensor<8xf32> -> tensor<8xf32>
  func.return %1 : tensor<8xf32>
}
