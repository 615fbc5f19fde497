"""The rewrite that ``pack-vnni``, ``pack-panels`` and ``bf16-matmul`` share: a matmul's constant
rhs replaced by a packed copy, the matmul rebuilt on it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from qidao.dialects.tg import ConstantOp, MatmulBf16Op, MatmulIntegerOp, MatmulOp


def replace_with_packed_rhs(
    op: MatmulOp | MatmulIntegerOp | MatmulBf16Op,
    rewriter: PatternRewriter,
    packed: np.ndarray,
    suffix: str,
    rebuild: Callable[[SSAValue], Operation],
) -> None:
    """``op`` -> ``rebuild(constant packed)``, which keeps ``op``'s attributes and
    result name; the constant is named ``<rhs>_<suffix>``. The unpacked constant
    goes when nothing else uses it (a view of it is left to ``dce``)."""
    constant = ConstantOp.from_numpy(packed)
    name = op.rhs.name_hint
    constant.result.name_hint = f"{name}_{suffix}" if name else suffix
    new = rebuild(constant.result)
    new.attributes.update(op.attributes)
    new.results[0].name_hint = op.result.name_hint
    unpacked = op.rhs.owner
    rewriter.replace(op, [constant, new], [new.results[0]])
    if isinstance(unpacked, ConstantOp) and not unpacked.result.uses:
        rewriter.erase(unpacked)
