#!/usr/bin/env bash
# Set up qidao (with PyTorch, for the side-by-side timing) and run the main job on its
# built-in default: the book's y = relu(x·w + b), printed at every level of the tower,
# run (x=2, w=3, b=1 gives 7) and timed beside PyTorch eager.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_venv.sh
install_qidao torch
exec .venv/bin/qidao tour "$@"
