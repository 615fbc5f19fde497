"""The pass registry stays complete and documented (STYLE point 3): every pass in
``qidao/passes/<level>/`` is named after its file, has a docstring and a FileCheck
test ``tests/filecheck/passes/<level>/<file>.mlir``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from qidao.passes import LEVELS, all_passes, pass_modules

PASS_TESTS = Path(__file__).parents[1] / "filecheck" / "passes"


def test_pass_registry_uses_kebab_case_file_names() -> None:
    for name, module in pass_modules().items():
        assert module.rpartition(".")[2] == name.replace("-", "_"), (name, module)


@pytest.mark.parametrize("name", list(pass_modules()))
def test_pass_is_documented_and_tested(name: str) -> None:
    module = pass_modules()[name]
    pass_class = all_passes()[name]()
    assert pass_class.name == name, (
        f"{module} defines pass {pass_class.name!r}; name it {name!r} after its file"
    )
    docstring = (
        vars(pass_class).get("__doc__") or sys.modules[pass_class.__module__].__doc__
    )
    assert docstring and docstring.strip(), (
        f"{pass_class.__name__} needs a docstring (class or module)"
    )
    _, level, file = module.rsplit(".", 2)
    test_file = PASS_TESTS / level / f"{file}.mlir"
    assert test_file.is_file(), (
        f"pass {name!r} has no FileCheck test "
        f"tests/filecheck/passes/{level}/{test_file.name}"
    )


def test_every_level_has_passes_and_a_test_folder() -> None:
    levels = {module.split(".")[2] for module in pass_modules().values()}
    assert levels == set(LEVELS)
    for level in LEVELS:
        assert (PASS_TESTS / level).is_dir(), f"no tests/filecheck/passes/{level}/"


def test_every_filecheck_file_belongs_to_a_pass() -> None:
    """A FileCheck file under passes/<level>/ is named after a pass of that level
    (``<pass>.mlir`` or ``<pass>_<case>.mlir``), or after one of xDSL's that acts
    there (``cse``, ``dce``)."""
    ours = {m.split(".", 2)[2].replace(".", "/") for m in pass_modules().values()}
    theirs = {"graph/cse", "graph/dce"}
    for path in sorted(PASS_TESTS.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        stem = f"{path.parent.name}/{path.stem}"
        assert any(stem == p or stem.startswith(p + "_") for p in ours | theirs), (
            f"tests/filecheck/passes/{stem}.mlir names no pass of its level"
        )
