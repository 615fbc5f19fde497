"""The package's import graph keeps the layers of the tower (README.md, docs/design.md).

Read from the source (every ``import``, at module level, inside functions and under
``TYPE_CHECKING``), without importing anything:

- no import cycle, between any two modules;
- each layer imports only the layers below it: ``dialects`` know only xDSL,
  ``passes`` and ``frontend`` know ``dialects``, ``runtime`` knows nothing of qidao's
  IR (and no xDSL), ``compiler`` drives them all, ``tools`` sit on top and nothing
  in the core imports them;
- a private module (``_name.py``) is imported only by the modules of its own folder.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).parents[1] / "qidao"

ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "dialects": {"dialects"},
    "passes": {"passes", "dialects", "errors"},
    "frontend": {"frontend", "dialects", "errors"},
    "runtime": {"runtime", "errors"},
    "compiler": {"compiler", "passes", "dialects", "frontend", "runtime", "errors"},
    "examples": {"examples", "frontend", "dialects", "errors"},
    "bench": {
        *("bench", "examples", "api", "compiler", "passes", "dialects", "frontend"),
        *("runtime", "errors"),
    },
    "tools": {
        *("tools", "bench", "fuzz", "examples", "api", "compiler", "passes"),
        *("dialects", "frontend", "runtime", "errors"),
    },
    "fuzz": {
        *("fuzz", "tools", "examples", "api", "compiler", "passes", "dialects"),
        *("frontend", "runtime", "errors"),
    },
    "api": {"api", "compiler", "frontend", "runtime", "errors"},
    "main": {"tools"},
}
"""Layer -> the layers its modules may import. ``api``: ``qidao/__init__.py`` and the
modules beside it (``onnx_backend``, ``dynamo_backend``, ``distributed``, ...); ``main``: ``__main__``;
``errors``: ``qidao/errors.py``, the error hierarchy every layer but the dialects
raises (it imports nothing); ``examples``: the built-in models; ``bench``: the
benchmark harness (the suites, the ladder, the zoo, the CUDA measurements); ``fuzz``:
the fuzzer, which drives the commands as a user would (so it may import ``tools``,
and ``tools``' ``qidao fuzz`` command imports it: the module graph keeps them
acyclic)."""

THIRD_PARTY_FORBIDDEN = {"runtime": {"xdsl"}, "dialects": {"qidao"}}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in (
        "onnx_backend",
        "dynamo_backend",
        "optim",
        "generate",
        "distributed",
    ):
        return "api"
    if parts[1] == "__main__":
        return "main"
    return parts[1]


def imported_names(module: str) -> Iterator[tuple[str, int]]:
    """Every name ``module`` imports (absolute, as written or resolved), with its
    line."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield (full if full in MODULES else base), node.lineno


def resolve(name: str) -> str | None:
    """The qidao module that ``name`` (a module or a name in one) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache  # once, when a test asks (not at collection, in every worker)
def import_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for module in MODULES:
        for name, line in imported_names(module):
            target = resolve(name) if name.startswith("qidao") else None
            if target is not None and target != module:
                graph.add_edge(module, target, line=line)
    return graph


def test_no_import_cycles() -> None:
    cycles = [
        sorted(c)
        for c in nx.strongly_connected_components(import_graph())
        if len(c) > 1
    ]
    assert not cycles, "import cycles (strongly connected modules):\n" + "\n".join(
        " <-> ".join(cycle) for cycle in cycles
    )


def test_layers_import_only_the_layers_below() -> None:
    graph = import_graph()
    wrong = [
        f"{a} (line {graph.edges[a, b]['line']}) imports {b}: layer '{layer(a)}' "
        f"may import only {sorted(ALLOWED[layer(a)])}"
        for a, b in graph.edges
        if layer(b) not in ALLOWED[layer(a)]
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("lower", sorted(THIRD_PARTY_FORBIDDEN))
def test_lower_layers_do_not_import_what_they_must_not_know(lower: str) -> None:
    wrong = [
        f"{module} (line {line}) imports {name}"
        for module in MODULES
        if layer(module) == lower
        for name, line in imported_names(module)
        if name.split(".")[0] in THIRD_PARTY_FORBIDDEN[lower]
        and not name.startswith(f"qidao.{lower}")
    ]
    assert not wrong, "\n".join(wrong)


def test_private_modules_stay_in_their_folder() -> None:
    wrong = [
        f"{a} imports {b}, private to {b.rpartition('.')[0]}"
        for a, b in import_graph().edges
        if b.rpartition(".")[2].startswith("_")
        and not b.endswith("__init__")
        and a.rpartition(".")[0] != b.rpartition(".")[0]
    ]
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_imports() -> None:
    """The graph is not vacuous: known edges of each kind are in it."""
    graph = import_graph()
    assert graph.has_edge("qidao.compiler.compile", "qidao.compiler.pipeline")
    assert graph.has_edge(
        "qidao.passes.graph.layout", "qidao.passes.graph._layout_chains"
    )
    assert graph.has_edge("qidao.tools.cli", "qidao.examples")  # in a function
    assert layer("qidao.onnx_backend") == "api" and layer("qidao") == "api"
