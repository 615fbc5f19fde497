"""Shared test settings.

The suite verifies the IR after every pass and schedule primitive
(``QIDAO_VERIFY=each``, see ``qidao.compiler.debug``), so a pass that breaks the IR
is named by the test that hits it; ``qidao.compile``'s default verifies once per
stage.
"""

import os

os.environ.setdefault("QIDAO_VERIFY", "each")
