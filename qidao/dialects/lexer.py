"""A fix to xDSL's MLIR lexer (xdsl as pinned in ``pyproject.toml``), applied when
qidao's dialects are loaded, so that every parser qidao runs (``qidao.compile`` of a
``.mlir`` file, ``qidao-opt``) has it.

xDSL matches a string literal with ``"(?:[^"\\\\\\n\\v\\f]+|\\\\(?:...))*"``: a run
of plain characters nested in a repeated group. On a string that does not close
properly (a ``"`` typed into an op name, then an invalid escape such as ``\\f`` on a
later line) Python's regex engine tries every way of splitting the run between the
two quantifiers before it fails: exponential time, a parse that never ends (found by
``qidao fuzz --kinds mlir --seed 1495``). The same pattern with possessive
quantifiers (``++``, ``*+``, Python >= 3.11) matches exactly the same strings and
never backtracks into a run: linear time, as fast on a 40 MB ``dense<"0x...">``
constant.
"""

from __future__ import annotations

import re

from xdsl.utils.mlir_lexer import MLIRLexer

STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')


def fix_string_literal_regex() -> None:
    """Give xDSL's lexer the linear-time string literal pattern (idempotent)."""
    MLIRLexer._unescaped_characters_regex = STRING_LITERAL
