"""``python -m qidao`` is the ``qidao`` command."""

import sys

from qidao.compiler.cli import main

sys.exit(main())
