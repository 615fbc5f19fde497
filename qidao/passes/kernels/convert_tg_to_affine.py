"""Lower tg graphs to kernels: ``tg op (tensors) -> func.call @kernel (memrefs)``.

Every ``func.func`` that holds tg ops or takes or returns tensors becomes a *host*
function over memrefs, and every compute op (or ``tg.fused`` group) a private
*kernel* function whose body is an affine loop nest with named loops (``qd.loop``).
Other functions are left alone.

Conventions (the back end and the runtime rely on them):

- host ``@f(%in..., %out0, %out1, ...)``: no results; graph outputs are extra
  row-major memref arguments filled by the host; ``qd.num_inputs = N : i64`` says
  where the outputs start. Intermediates are ``memref.alloc {alignment = 64}`` and
  ``memref.dealloc``'ed right after their last use. An output that is an input, a
  view, a constant or a value returned twice is filled by a ``copy`` kernel.
- kernel ``@<f>_k<i>_<op>(%in..., %out...)``: private, no results, every argument
  ``llvm.noalias``, tagged ``qd.kernel = "tg.matmul"`` (``"tg.mul+tg.add"`` for a
  fused group, ``"copy"`` for output copies).
- loop names: elementwise/copy/batch_norm ``i0, i1, ...``; matmul ``b0.., i, k, j``
  after a zero-fill nest ``b0_init.., i_init, j_init``; conv2d ``n, f, oh, ow, c, kh,
  kw``; reductions ``i0..`` then ``r0..``; pools ``n, c, oh, ow, kh, kw``; softmax
  ``i0..`` then ``r_max``, ``r_sum``, ``r_norm``.
- views (transpose, view, broadcast, reshape-as-view, contiguous of row-major) are
  ``memref.reinterpret_cast``; constants are ``memref.global``s, except splats
  read by elementwise kernels, which become ``arith.constant`` in the kernel.

The per-family loop nests live in ``lowering/*.py`` (one file per op family); the host side in
``lowering/host.py``.

Before:
    func.func @main(%x: tensor<4x3xf32>, %w: tensor<3x5xf32>) -> tensor<4x5xf32> {
      %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
      %1 = tg.relu %0 : tensor<4x5xf32> -> tensor<4x5xf32>
      func.return %1 : tensor<4x5xf32>
    }

After:
    func.func private @main_k0_matmul(%x: memref<4x3xf32> {llvm.noalias},
        %w: memref<3x5xf32> {llvm.noalias}, %out: memref<4x5xf32> {llvm.noalias})
        attributes {qd.kernel = "tg.matmul"} {
      ... zero-fill nest, then
      affine.for %i = 0 to 4 {
        affine.for %k = 0 to 3 {
          affine.for %j = 0 to 5 {
            ... %out[%i, %j] += %x[%i, %k] * %w[%k, %j]
          } {qd.loop = "j"}
        } {qd.loop = "k"}
      } {qd.loop = "i"}
      func.return
    }
    func.func private @main_k1_relu(...) attributes {qd.kernel = "tg.relu"} {...}
    func.func @main(%x: memref<4x3xf32>, %w: memref<3x5xf32>, %out0: memref<4x5xf32>)
        attributes {qd.num_inputs = 2 : i64} {
      %0 = memref.alloc() {alignment = 64 : i64} : memref<4x5xf32>
      func.call @main_k0_matmul(%x, %w, %0) : (...) -> ()
      func.call @main_k1_relu(%0, %out0) : (...) -> ()
      memref.dealloc %0 : memref<4x5xf32>
      func.return
    }
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.passes import ModulePass

from qidao.passes.kernels.lowering.common import TgLoweringError
from qidao.passes.kernels.lowering.host import GraphLowering, contains_tg

__all__ = ["ConvertTgToAffinePass", "TgLoweringError"]


class ConvertTgToAffinePass(ModulePass):
    """tg graphs -> host functions calling affine-loop kernels over memrefs."""

    name = "convert-tg-to-affine"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        graphs = [
            f
            for f in op.body.block.ops
            if isinstance(f, func.FuncOp) and contains_tg(f)
        ]
        for graph in graphs:
            GraphLowering(op, graph).run()
