"""The fuzzer's ``training`` kind (``qidao/fuzz/training.py``; issue 29, item 10)
reports a failure when the check it tests is taken out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qidao.compiler import optim
from qidao.fuzz.training import training_case


def test_the_training_kind_reports_settings_that_are_not_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the optimizers' settings unchecked (any value taken, as a plain
    dataclass would), the cases that assign a bad one are wrong."""
    monkeypatch.setattr(optim._Settings, "__setattr__", object.__setattr__)
    monkeypatch.setattr(optim._Settings, "__delattr__", object.__delattr__)
    outcomes = [training_case(np.random.default_rng([s, 8]), Path()) for s in range(6)]
    assert any(status == "wrong" for status, _ in outcomes), outcomes
