"""Shared test settings.

The suite verifies the IR once per stage, as ``qidao.compile`` does by default
(``QIDAO_VERIFY=stage``, see ``qidao.compiler.debug``): a pass that breaks the IR
fails the test that hits it. The tests of the passes themselves (``tests/passes/``,
their ``conftest.py``) verify after every pass and schedule primitive
(``QIDAO_VERIFY=each``), which names the pass; that costs about a fifth of a
compile, so the rest of the suite does not pay it.
"""

import os
import subprocess
from pathlib import Path

import pytest

os.environ.setdefault("QIDAO_VERIFY", "stage")

# The compile cache is off (a test that monkeypatches the compiler must not be
# answered from an entry an earlier test stored); tests/compiler/test_cache.py turns
# it on in a folder of its own.
os.environ.setdefault("QIDAO_CACHE", "off")

# Under pytest-xdist each core already runs a worker: a compile's own lowering
# processes (qidao/compiler/targets/cpu/lower.py) would only compete with the other
# workers and add their forks (measured: 4% more time on the compile-heavy tests).
# The tests of that parallel lowering set QIDAO_COMPILE_JOBS themselves.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("QIDAO_COMPILE_JOBS", "1")

# The longest tests first: `scripts/test.sh` runs the suite on every core
# (pytest-xdist), and a long test that starts last keeps one core busy while the
# others wait.
LONGEST_FIRST = (
    "tests/tools/tutorial/test_chapters.py",
    "tests/bench/test_checkpoint.py",
    "tests/tools/test_conformance.py",
    "tests/bench/test_ladder.py",
)


# `pytest -m "not slow"`, the fast check: the tests that tests/slow_tests.txt lists
# (measured: scripts/slow_tests.py) are marked slow here, beside those marked by hand
SLOW_LIST = Path(__file__).resolve().parent / "slow_tests.txt"


def _slow_tests() -> set[str]:
    lines = SLOW_LIST.read_text().splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow = _slow_tests()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return (
            LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)
        )

    items.sort(key=rank)  # stable: the rest keep their order


# No test may leave a file in the repository (a stray `llvm.npz` once sat at its
# root, written by a command run in the repository's folder): the untracked files
# git does not ignore are the same after the run as before it.
ROOT = Path(__file__).resolve().parent.parent
_BEFORE = pytest.StashKey[set[str] | None]()


def _untracked() -> set[str] | None:
    try:
        done = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None  # not a git checkout: nothing to compare
    return {line[3:] for line in done.stdout.splitlines() if line.startswith("??")}


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # the controller only
        session.config.stash[_BEFORE] = _untracked()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return
    before = session.config.stash.get(_BEFORE, None)
    after = _untracked()
    if before is None or after is None:
        return
    left = sorted(after - before)
    if left:
        print(f"\nthe tests left files in the repository: {', '.join(left)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
