"""``qidao.dialects.attributes``: every ``qd.*`` attribute name is defined there once,
documented, and the rest of the package uses the constants, never the string.

Read from the source with ``ast``: a string literal in ``qidao/`` that begins with
``qd.`` outside that module is a second definition of a name. Docstrings (any
string that is a statement of its own) may show IR text and are not counted.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from qidao.dialects import attributes

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "qidao"
HOME = "qidao/dialects/attributes.py"


def _qd_literals(path: Path) -> list[tuple[int, str]]:
    """The ``qd.`` string literals of ``path`` that are not docstrings, with lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("qd.")
        and id(node) not in docstrings
    ]


@functools.cache  # once, when a test asks (not at collection, in every worker)
def _found() -> dict[str, list[tuple[int, str]]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        literals = _qd_literals(path)
        if literals and name != HOME:
            found[name] = literals
    return found


def test_no_qd_string_outside_the_attributes_module() -> None:
    wrong = [
        f"{name}:{line}: {value!r}"
        for name, literals in _found().items()
        for line, value in literals
    ]
    assert not wrong, (
        "a qd.* attribute name spelled as a string; import its constant from "
        "qidao.dialects.attributes (or add the attribute there):\n" + "\n".join(wrong)
    )


def _constants() -> dict[str, tuple[str, str | None]]:
    """Name -> (value, docstring) of each ``qd.`` constant in the module."""
    tree = ast.parse((ROOT / HOME).read_text(encoding="utf-8"))
    body = tree.body
    found: dict[str, tuple[str, str | None]] = {}
    for node, after in zip(body, [*body[1:], None], strict=True):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)):
            continue
        [target] = node.targets
        assert isinstance(target, ast.Name)
        doc = (
            after.value.value
            if isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
            else None
        )
        found[target.id] = (str(node.value.value), doc)
    return found


def test_each_name_is_defined_once_and_documented() -> None:
    constants = _constants()
    assert constants, "no constant found in qidao/dialects/attributes.py"
    for name, (value, doc) in constants.items():
        assert name.endswith("_ATTR"), name
        assert value.startswith("qd."), (name, value)
        assert doc and "Written by" in doc and "read" in doc.lower(), (
            f"{name}: its docstring must say what it means, on which op it sits, "
            "who writes it and who reads it"
        )
        assert getattr(attributes, name) == value
    values = [value for value, _ in constants.values()]
    assert len(values) == len(set(values)), "two constants with the same name"
