"""``python -m qidao`` is the ``qidao`` command."""

import sys

from qidao.tools.cli import main

sys.exit(main())
