"""The passes' tests verify the IR after every pass and schedule primitive.

``QIDAO_VERIFY=each`` (``qidao.compiler.debug``): a pass that makes invalid IR is
named by the test that hits it, not only the stage it ran in (the rest of the suite
verifies once per stage, ``tests/conftest.py``). A compile with ``verify="each"`` is
never stored in or answered from the compile cache.
"""

import pytest


@pytest.fixture(autouse=True)
def _verify_after_every_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QIDAO_VERIFY", "each")
