"""Shared test settings.

The suite verifies the IR after every pass and schedule primitive
(``QIDAO_VERIFY=each``, see ``qidao.compiler.debug``), so a pass that breaks the IR
is named by the test that hits it; ``qidao.compile``'s default verifies once per
stage.
"""

import os

import pytest

os.environ.setdefault("QIDAO_VERIFY", "each")

# The compile cache is off (a test that monkeypatches the compiler must not be
# answered from an entry an earlier test stored); tests/compiler/test_cache.py turns
# it on in a folder of its own.
os.environ.setdefault("QIDAO_CACHE", "off")

# The longest tests first: `scripts/test.sh` runs the suite on every core
# (pytest-xdist), and a long test that starts last keeps one core busy while the
# others wait (ONNX conformance alone takes minutes).
LONGEST_FIRST = ("tests/tools/test_conformance.py", "tests/tools/test_ladder.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return (
            LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)
        )

    items.sort(key=rank)  # stable: the rest keep their order
