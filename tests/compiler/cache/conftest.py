"""The compile cache's fixtures: a cache folder and a user key of each test's own,
and a deadline for tests that must not block.

The suite turns the cache off (``tests/conftest.py``); these tests turn it on, in a
folder of their own, and compile with ``verify="stage"`` (``verify="each"``, the
suite's default, is not cached).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder qidao makes (0o700) and a key folder of this test's own."""
    monkeypatch.setenv("QIDAO_CACHE", "on")
    monkeypatch.setenv("QIDAO_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "cache"


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail a test that blocks for 30 s (a FIFO opened for reading, say) instead of
    hanging the suite."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError("blocked for 30 s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(30)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
