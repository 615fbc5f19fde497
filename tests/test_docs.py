"""The documentation: the site in ``docs/`` builds with ``mkdocs build --strict``
(a broken link, a missing anchor or page is an error), and the README stays short,
its links pointing at files that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip(
        "mkdocs", reason="mkdocs is not installed (pip install -e '.[dev]')"
    )
    site = tmp_path / "site"  # outside the repository: the suite leaves no files there
    result = subprocess.run(
        [
            *(sys.executable, "-m", "mkdocs", "build", "--strict"),
            *("--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    warnings = "\n".join(line for line in output.splitlines() if "WARNING" in line)
    assert result.returncode == 0, (
        f"mkdocs build --strict failed:\n{warnings}\n\nmkdocs said:\n{output}"
    )
    assert (site / "index.html").is_file()
    assert (site / "pipeline" / "index.html").is_file()


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 220, f"README.md has {lines} lines: move the detail into docs/"


def test_the_readmes_links_point_at_files_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert local, "the README links to no page of docs/"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README.md links to missing files: {missing}"
