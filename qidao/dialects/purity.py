"""A fix to xDSL's ``arith.extsi`` (xdsl as pinned in ``pyproject.toml``), applied
when qidao's dialects are loaded.

MLIR's ``arith.extsi`` is ``Pure`` (a sign extension reads nothing but its operand
and writes nothing), as are its siblings ``arith.extui`` and ``arith.trunci``;
xDSL gives the other two the trait and leaves it off ``extsi``. Every schedule
primitive that moves code (``reorder``'s dependence check, ``compute_at``,
``parallel``, ``bind``) asks ``is_side_effect_free`` and refused a loop band that
sign-extends a byte (an int8 matmul's signed operand): "the band holds
arith.extsi, whose effects the dependence check cannot see".
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.traits import Pure


def fix_extsi_purity() -> None:
    """Give ``arith.extsi`` the ``Pure`` trait (idempotent)."""
    if arith.ExtSIOp.get_trait(Pure) is None:
        arith.ExtSIOp.traits.add_trait(Pure())
