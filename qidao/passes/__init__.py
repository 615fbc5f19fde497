"""Every IR -> IR pass of qidao, one pass per file, in one folder per level of the tower.

==============  ==========================================================================
folder          the passes
==============  ==========================================================================
``graph/``      tg -> tg: autodiff, expand-custom, apply-optimizer, widen-floats,
                insert-checks, fold-constants, simplify, pack-vnni, lift-conv1d, layout,
                select-conv-algo, materialize-padding, pack-panels, sink-reshape, fuse,
                collapse-matmul-batch
``kernels/``    tg -> kernels over memrefs: convert-tg-to-affine (one lowering per op
                family in ``kernels/lowering/``), plan-memory
``schedule/``   affine loops -> affine loops: the schedule primitives (split, peel,
                reorder, vectorize, parallel, bind, cache-read, ...) and the loop library they
                share (``schedule/loops/``: loop lookup, rewriting, footprints)
``cpu/``        affine -> llvm dialect: expand-math, lower-affine,
                convert-parallel-to-gomp, lower-scf-to-cf, convert-to-llvm
                (patterns in ``cpu/llvm/``)
==============  ==========================================================================

Registering a pass is one local act: put a ``ModulePass`` subclass whose ``name`` is
the kebab-case form of the file name in ``qidao/passes/<level>/<snake_name>.py``. In a
level folder every public module is a pass; a module whose name starts with ``_`` is
a private helper of the passes beside it, and a subfolder is a library they share.
``tests/passes/test_registry.py`` checks that every pass has a docstring and a
FileCheck test in ``tests/filecheck/passes/<level>/<snake_name>.mlir``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from pathlib import Path

from xdsl.passes import ModulePass

LEVELS: tuple[str, ...] = ("graph", "kernels", "schedule", "cpu")
"""The level folders, in the order the pipeline goes down the tower."""


@functools.cache
def pass_modules() -> dict[str, str]:
    """Every pass's kebab-case name -> its module (``qidao.passes.<level>.<file>``),
    level by level, each level's passes sorted."""
    found: dict[str, str] = {}
    for level in LEVELS:
        folder = Path(__file__).parent / level
        for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda i: i.name):
            if info.ispkg or info.name.startswith("_"):
                continue
            name = info.name.replace("_", "-")
            module = f"{__name__}.{level}.{info.name}"
            if name in found:
                raise LookupError(
                    f"two passes are named '{name}': {found[name]} and {module}"
                )
            found[name] = module
    return found


def _pass_class(module_name: str) -> type[ModulePass]:
    module = importlib.import_module(module_name)
    expected = module_name.rpartition(".")[2].replace("_", "-")
    found = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, ModulePass)
        and obj.__module__ == module.__name__
        and getattr(obj, "name", None) == expected
    ]
    if len(found) != 1:
        raise LookupError(
            f"{module.__file__} must define exactly one ModulePass named "
            f"'{expected}', found {len(found)}"
        )
    return found[0]


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every qidao pass by its kebab-case name; each pass's module loads on first use."""
    return {
        name: functools.partial(_pass_class, module)
        for name, module in pass_modules().items()
    }
