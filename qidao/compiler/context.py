"""One xDSL context that knows every dialect of the tower, and passes by name."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import get_all_dialects
from xdsl.passes import ModulePass
from xdsl.transforms import get_all_passes

from qidao.dialects import all_dialects
from qidao.passes import all_passes


def make_context() -> Context:
    """A context with xDSL's dialects (loaded lazily) and qidao's."""
    ctx = Context()
    for name, factory in {**get_all_dialects(), **all_dialects()}.items():
        ctx.register_dialect(name, factory)
    return ctx


def make_pass(name: str, **options: object) -> ModulePass:
    """The pass called ``name`` with ``options`` (its dataclass fields): qidao's own
    first, then xDSL's."""
    ours = all_passes()
    if name in ours:
        return ours[name]()(**options)
    theirs = get_all_passes()
    if name in theirs:
        return theirs[name]()(**options)
    raise ValueError(
        f"unknown pass '{name}'; qidao's passes are {', '.join(sorted(ours))}, "
        "and every xDSL pass is known too (`qidao-opt --help` lists them all)"
    )
