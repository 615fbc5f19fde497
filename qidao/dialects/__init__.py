"""Dialects that qidao owns. ``tg`` (tensor graph) is the entry level of the tower."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect

from qidao.dialects.lexer import fix_string_literal_regex

fix_string_literal_regex()  # xDSL's string literal regex backtracks exponentially


def all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Every dialect qidao defines, by name, loaded lazily."""

    def tg() -> Dialect:
        from qidao.dialects.tg import TG

        return TG

    return {"tg": tg}
