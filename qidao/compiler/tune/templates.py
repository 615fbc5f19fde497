"""The templates, one per kernel kind: the first that matches a kernel tunes it.

Adding a kind is one entry here and one module like ``matmul.py``.
"""

from __future__ import annotations

from qidao.compiler.tune.matmul import MATMUL
from qidao.compiler.tune.space import Template

TEMPLATES: dict[str, Template] = {t.kind: t for t in (MATMUL,)}


def template_for(
    ops: str, shapes: tuple[tuple[int, ...], ...], dtype: str
) -> Template | None:
    """The template of a kernel with these ``qd.kernel`` ops, argument shapes and
    element type, or None."""
    return next((t for t in TEMPLATES.values() if t.matches(ops, shapes, dtype)), None)
