"""Debug levels: what ``qidao.compile`` prints to stderr while it works.

Set with ``qidao.compile(model, debug=N)``, ``qidao --debug N <command>`` or the
environment variable ``QIDAO_DEBUG=N`` (the option wins over the variable).

| level | prints                                                       |
|-------|--------------------------------------------------------------|
| 0     | nothing (default)                                            |
| 1     | time of every stage and the kernel / buffer / peak-bytes line |
| 2     | level 1, plus the IR after every stage                       |
| 3     | level 2, plus the IR after every single pass                 |
| 4     | level 3, plus LLVM IR after -O3 and the host assembly        |
"""

from __future__ import annotations

import os
import sys

LEVELS = range(0, 5)


def debug_level(option: object = None) -> int:
    """The level from the option, else from QIDAO_DEBUG, else 0; checked."""
    raw = option if option is not None else os.environ.get("QIDAO_DEBUG", "0")
    try:
        level = int(str(raw))
    except ValueError:
        level = -1
    if level not in LEVELS:
        raise ValueError(f"debug level must be an integer 0-4, got {raw!r}")
    return level


def emit(title: str, text: str = "") -> None:
    """Print one debug section to stderr."""
    print(f"// ----- qidao: {title} -----", file=sys.stderr)
    if text:
        print(text.rstrip(), file=sys.stderr)
