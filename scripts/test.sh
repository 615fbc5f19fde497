#!/usr/bin/env bash
# Set up what the tests need and run all of them: formatting, lint, types, then pytest
# (which also runs every lit/FileCheck file under tests/filecheck).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
install_qidao dev
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff"; ruff format --check qidao tests; ruff check qidao tests
echo "== mypy"; mypy
# one worker per core (pytest-xdist); the longest tests start first (tests/conftest.py)
echo "== pytest"; exec pytest -q -n auto "$@"
