"""How qidao is installed: ``scripts/test.sh`` and ``demo.sh`` install it so that a
script beside a folder named ``qidao`` (a clone of this repository, say) still
imports the package, not the folder (``scripts/_venv.sh``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_a_folder_named_qidao_beside_a_script_does_not_shadow_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "qidao").mkdir()
    (tmp_path / "run.py").write_text("import qidao\nprint(qidao.compile.__module__)\n")
    done = subprocess.run(
        [sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "qidao.compiler.compile"
