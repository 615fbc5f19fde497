#!/usr/bin/env bash
# Set up what the tests need and run all of them: formatting, lint, types, then pytest
# (which also runs every lit/FileCheck file under tests/filecheck).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
install_qidao dev
export PATH="$PWD/.venv/bin:$PATH"
# `qidao explain --html`'s page is tested in a real headless Chromium (Debian's
# package): installed here where apt can (as root); elsewhere that test skips and
# says why
if ! command -v chromium >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "== chromium (for the browser test)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; } \
    >/dev/null 2>&1 || echo "chromium could not be installed: the browser test will skip"
fi
# the suite starts ~70 Python processes (commands, benchmarks, lit): with bytecode
# caches (__pycache__/, ignored by git) each imports qidao from them instead of
# compiling its ~400 modules again (~0.5 s a process), and pytest caches its
# assertion rewriting; an environment that turned them off gets them back here
unset PYTHONDONTWRITEBYTECODE
echo "== ruff"; ruff format --check qidao tests; ruff check qidao tests
echo "== mypy"; mypy
# one worker per core (pytest-xdist); the longest tests start first (tests/conftest.py)
echo "== pytest"; exec pytest -q -n auto "$@"
