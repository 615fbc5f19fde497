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

Verification is a separate knob, ``qidao.compile(model, verify=...)`` or
``QIDAO_VERIFY``: ``"stage"`` (the default) verifies the IR at the end of every
stage (and the scheduled kernels once, after the schedule), naming the stage and
its passes when it fails; ``"each"`` verifies after every single pass and every
schedule primitive, naming the one that broke it. ``"each"`` costs about 40% more
compile time on the real models; the test suite runs with it (``tests/conftest.py``),
and ``qidao-opt`` always verifies after each pass.
"""

from __future__ import annotations

import os
import sys

LEVELS = range(0, 5)
VERIFY_POLICIES = ("stage", "each")


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


def verify_policy(option: object = None) -> str:
    """``"stage"`` or ``"each"``: from the option, else QIDAO_VERIFY, else stage."""
    raw = option if option is not None else os.environ.get("QIDAO_VERIFY", "stage")
    if raw not in VERIFY_POLICIES:
        raise ValueError(
            f"verify must be one of {', '.join(map(repr, VERIFY_POLICIES))}, got {raw!r}"
        )
    assert isinstance(raw, str)
    return raw


def emit(title: str, text: str = "") -> None:
    """Print one debug section to stderr."""
    print(f"// ----- qidao: {title} -----", file=sys.stderr)
    if text:
        print(text.rstrip(), file=sys.stderr)
