// The driver's own switches, on a small graph.
// RUN: qidao-opt %s -p fuse,convert-tg-to-affine --print-ir-after=fuse | filecheck %s --check-prefix=AFTER
// RUN: qidao-opt %s -p fuse,convert-tg-to-affine --print-ir-before=convert-tg-to-affine | filecheck %s --check-prefix=BEFORE
// RUN: qidao-opt %s -p cse,fuse,dce --print-ir-after-change | filecheck %s --check-prefix=CHANGE
// RUN: qidao-opt %s -p cse,fuse,dce --print-ir-after-change --print-ir-diff | filecheck %s --check-prefix=DIFF
// RUN: qidao-opt %s -p cse,fuse --print-ir-after=cse | filecheck %s --check-prefix=SAME
// RUN: qidao-opt %s -p fuse,convert-tg-to-affine --print-between-passes | filecheck %s --check-prefix=BETWEEN
// RUN: qidao-opt %s -p fuse --time-passes | filecheck %s --check-prefix=TIME
// RUN: qidao-opt %s -p fuse --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: not qidao-opt %s -p fuse --print-ir-after=fusee 2>&1 | filecheck %s --check-prefix=UNKNOWN

// AFTER:      // -----// IR after fuse //----- //
// AFTER:      tg.fused
// AFTER-NOT:  IR after convert-tg-to-affine
// AFTER:      func.func private @main_k0_fused

// BEFORE:      // -----// IR before convert-tg-to-affine //----- //
// BEFORE-NEXT: builtin.module {
// BEFORE:      tg.fused
// BEFORE:      func.func private @main_k0_fused

// Only fuse changes this graph: cse and dce find nothing to do and print nothing.
// CHANGE-NOT:  IR after cse
// CHANGE:      // -----// IR after fuse //----- //
// CHANGE-NEXT: builtin.module {
// CHANGE-NOT:  IR after dce

// DIFF:      // -----// IR after fuse (diff) //----- //
// DIFF-NEXT: --- before fuse
// DIFF-NEXT: +++ after fuse
// DIFF:      -    %0 = tg.add %x, %b
// DIFF:      +    %0 = tg.fused %x, %b
// DIFF-NOT:  IR after dce

// A pass named with --print-ir-after prints even when it changed nothing.
// SAME:     // -----// IR after cse (unchanged) //----- //
// SAME-NOT: IR after fuse

// BETWEEN:      IR after fuse:
// BETWEEN:      tg.fused
// BETWEEN:      affine.for

// TIME: Pass fuse took

// GENERIC: "tg.fused"(%x, %b)

// UNKNOWN: print-ir names unknown pass 'fusee'; did you mean 'fuse'?

func.func @main(%x: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = tg.add %x, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = tg.relu %0 : tensor<8xf32> -> tensor<8xf32>
  func.return %1 : tensor<8xf32>
}
