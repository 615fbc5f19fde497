"""Dialects that qidao owns. ``tg`` (tensor graph) is the entry level of the tower."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Dialect


def all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Every dialect qidao defines, by name, loaded lazily."""

    def tg() -> Dialect:
        from qidao.dialects.tg import TG

        return TG

    return {"tg": tg}
