"""Shared test settings.

The suite verifies the IR after every pass and schedule primitive
(``QIDAO_VERIFY=each``, see ``qidao.compiler.debug``), so a pass that breaks the IR
is named by the test that hits it; ``qidao.compile``'s default verifies once per
stage.
"""

import os

os.environ.setdefault("QIDAO_VERIFY", "each")

# The compile cache is off (a test that monkeypatches the compiler must not be
# answered from an entry an earlier test stored); tests/compiler/test_cache.py turns
# it on in a folder of its own.
os.environ.setdefault("QIDAO_CACHE", "off")
