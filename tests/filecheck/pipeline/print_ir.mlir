// qidao compile's pass flags: what each pass changed, around one pass, and skipping one.
// RUN: qidao compile %s --print-ir-after-change --print-ir-diff 2>&1 >/dev/null | filecheck %s --check-prefix=CHANGE
// RUN: qidao compile %s --print-ir-before=fuse --print-ir-after=cse,autodiff 2>&1 >/dev/null | filecheck %s --check-prefix=AROUND
// RUN: qidao compile %s --disable-pass fuse --emit affine | filecheck %s --check-prefix=NOFUSE
// RUN: not qidao compile %s --disable-pass lower-affine 2>&1 | filecheck %s --check-prefix=NEEDED
// RUN: not qidao compile %s --disable-pass fusion 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not qidao compile %s --print-ir-after=fusion 2>&1 | filecheck %s --check-prefix=UNKNOWN-PRINT

// Only the passes that changed the IR print, each as a diff; fuse is the first.
// CHANGE-NOT:  IR after fold-constants
// CHANGE-NOT:  IR after cse
// CHANGE:      // ----- qidao: IR after fuse (diff) -----
// CHANGE-NEXT: --- before fuse
// CHANGE-NEXT: +++ after fuse
// CHANGE:      -    %0 = tg.matmul %x, %w
// CHANGE:      +    %0 = tg.fused %x, %w, %b
// CHANGE-NOT:  IR after dce
// CHANGE:      // ----- qidao: IR after convert-tg-to-affine (diff) -----
// CHANGE:      +    affine.for %i = 0 to 8 {
// CHANGE:      // ----- qidao: IR after lower-affine (diff) -----
// CHANGE:      +    scf.for

// AROUND:      // ----- qidao: pass autodiff did not run: it runs only with `grad=[...]` -----
// AROUND:      // ----- qidao: IR after cse (unchanged) -----
// AROUND-NEXT: // ----- qidao: IR before fuse -----
// AROUND-NEXT: builtin.module {
// AROUND:      tg.matmul
// AROUND-NOT:  qidao: IR

// Without fuse, each tg op is its own kernel.
// NOFUSE-NOT: tg.
// NOFUSE:     func.func private @main_k0_matmul
// NOFUSE:     func.func private @main_k1_add
// NOFUSE:     func.func private @main_k2_relu

// NEEDED: qidao compile: error: disable=['lower-affine']: 'lower-affine' cannot be skipped: LLVM has no affine loops
// UNKNOWN: qidao compile: error: disable names unknown pass 'fusion'; did you mean 'fuse'?
// UNKNOWN-PRINT: qidao compile: error: print-ir names unknown pass 'fusion'; did you mean 'fuse'?

func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) -> tensor<8x4xf32> {
  %0 = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = tg.add %0, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %2 = tg.relu %1 : tensor<8x4xf32> -> tensor<8x4xf32>
  func.return %2 : tensor<8x4xf32>
}
