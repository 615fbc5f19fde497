"""Graph and lowering passes: one pass per file, the file named after the pass.

Registering a pass is one local act: put a ``ModulePass`` subclass whose ``name`` is
the kebab-case form of the file name in ``qidao/passes/<snake_name>.py``. The registry
below finds it; ``tests/test_registry.py`` checks that every pass has a docstring and a
FileCheck test in ``tests/filecheck/passes/<snake_name>.mlir``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
from collections.abc import Callable

from xdsl.passes import ModulePass


def _pass_class(module_name: str) -> type[ModulePass]:
    module = importlib.import_module(f"{__name__}.{module_name}")
    expected = module_name.replace("_", "-")
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
            f"qidao/passes/{module_name}.py must define exactly one ModulePass "
            f"named '{expected}', found {len(found)}"
        )
    return found[0]


def pass_module_names() -> list[str]:
    """The snake_case module names of every pass, sorted."""
    return sorted(
        info.name
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_")
    )


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every qidao pass by its kebab-case name; each pass's module loads on first use."""
    return {
        name.replace("_", "-"): functools.partial(_pass_class, name)
        for name in pass_module_names()
    }


def get_pass(name: str) -> type[ModulePass]:
    """The pass class registered under ``name`` (kebab case)."""
    passes = all_passes()
    if name not in passes:
        known = ", ".join(sorted(passes))
        raise KeyError(f"unknown qidao pass '{name}'; known passes: {known}")
    return passes[name]()
