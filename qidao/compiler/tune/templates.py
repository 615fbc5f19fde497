"""The templates, one per kernel kind: the first that matches a kernel tunes it.

Adding a kind is one entry here and one module like ``matmul.py``; the GPU's
(``target="cuda"``) are in ``gpu_templates.py``, and ``templates_of(target)``
gives either.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from qidao.compiler.tune.matmul import MATMUL
from qidao.compiler.tune.space import Template
from qidao.compiler.tune.task import Task, kernel_signatures

TEMPLATES: dict[str, Template] = {t.kind: t for t in (MATMUL,)}

TARGETS = ("cpu", "cuda")


def templates_of(target: str = "cpu") -> dict[str, Template]:
    """The templates of ``target``: ``TEMPLATES`` for the CPU, ``GPU_TEMPLATES``
    (``gpu_templates.py``) for ``cuda``."""
    if target == "cuda":
        from qidao.compiler.tune.gpu_templates import GPU_TEMPLATES

        return GPU_TEMPLATES
    if target != "cpu":
        raise ValueError(f"no tuning templates for target {target!r}; one of {TARGETS}")
    return TEMPLATES


def template_for(
    ops: str, shapes: tuple[tuple[int, ...], ...], dtype: str, target: str = "cpu"
) -> Template | None:
    """The template of a kernel with these ``qd.kernel`` ops, argument shapes and
    element type for ``target``, or None."""
    return next(
        (t for t in templates_of(target).values() if t.matches(ops, shapes, dtype)),
        None,
    )


def kernel_tasks(module: ModuleOp, target: str = "cpu") -> dict[str, Task]:
    """Kernel name -> its task, for every kernel of an affine-stage module that a
    template of ``target`` knows (see ``templates_of``)."""
    tasks: dict[str, Task] = {}
    for name, (ops, shapes, dtype) in kernel_signatures(module).items():
        template = template_for(ops, shapes, dtype, target)
        if template is not None:
            tasks[name] = Task(template.kind, ops, shapes, dtype)
    return tasks
