"""The fuzzer's ``cache`` kind (``qidao/fuzz/cache.py``; issue 29, item 10) reports a
failure when the check it tests is taken out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qidao.compiler.cache import store
from qidao.fuzz.cache import cache_case


def test_the_cache_kind_reports_a_signature_check_that_accepts_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Weights forged by someone without the key (their checksums recomputed) are
    rebuilt; with a store that takes every signature they load, and the case says
    so: a hit on a tampered entry, and an answer that is not NumPy's."""
    forge = ["forge-weights"]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    status, detail = cache_case(np.random.default_rng(0), tmp_path / "a", forge)
    assert status == "ok" and "rebuilt" in detail, detail
    monkeypatch.setattr(store, "signed", lambda key, data, signature: True)
    status, detail = cache_case(np.random.default_rng(0), tmp_path / "b", forge)
    assert status == "wrong", detail
    assert "a hit on a tampered entry" in detail and "differs from NumPy" in detail
