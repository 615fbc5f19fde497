"""Dialects that qidao owns. ``tg`` (tensor graph) is the entry level of the tower."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect

from qidao.dialects.lexer import fix_string_literal_regex
from qidao.dialects.purity import fix_extsi_purity

fix_string_literal_regex()  # xDSL's string literal regex backtracks exponentially
fix_extsi_purity()  # xDSL's arith.extsi lacks the Pure trait


def all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Every dialect qidao defines, by name, loaded lazily."""

    def tg() -> Dialect:
        from qidao.dialects.tg import TG

        return TG

    def amx() -> Dialect:
        from qidao.dialects.amx import AMX

        return AMX

    def x86vector() -> Dialect:
        from qidao.dialects.x86vector import X86Vector

        return X86Vector

    def lanes() -> Dialect:
        from qidao.dialects.lanes import Lanes

        return Lanes

    def cache() -> Dialect:
        from qidao.dialects.cache import Cache

        return Cache

    return {
        "tg": tg,
        "amx": amx,
        "x86vector": x86vector,
        "lanes": lanes,
        "cache": cache,
    }
