"""Run every lit/FileCheck test under tests/filecheck, one pytest case per file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent / "filecheck"
FILES = sorted(p for p in ROOT.rglob("*.mlir") if "Output" not in p.parts)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_lit(path: Path) -> None:
    lit = shutil.which("lit") or str(Path(sys.executable).parent / "lit")
    proc = subprocess.run(
        [lit, "-v", str(path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
