"""The templates, one per kernel kind: the first that matches a kernel tunes it.

Adding a kind is one entry here and one module like ``matmul.py``.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.tune.matmul import MATMUL
from qidao.compiler.tune.space import Template
from qidao.compiler.tune.task import Task, kernel_signatures

TEMPLATES: dict[str, Template] = {t.kind: t for t in (MATMUL,)}


def template_for(
    ops: str, shapes: tuple[tuple[int, ...], ...], dtype: str
) -> Template | None:
    """The template of a kernel with these ``qd.kernel`` ops, argument shapes and
    element type, or None."""
    return next((t for t in TEMPLATES.values() if t.matches(ops, shapes, dtype)), None)


def kernel_tasks(module: ModuleOp) -> dict[str, Task]:
    """Kernel name -> its task, for every kernel of an affine-stage module that a
    template knows (see ``TEMPLATES``)."""
    tasks: dict[str, Task] = {}
    for name, (ops, shapes, dtype) in kernel_signatures(module).items():
        template = template_for(ops, shapes, dtype)
        if template is not None:
            tasks[name] = Task(template.kind, ops, shapes, dtype)
    return tasks
