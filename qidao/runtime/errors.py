"""Errors the runtime raises before it calls native code."""

from __future__ import annotations

from qidao.errors import QidaoError


class ArgumentError(QidaoError, TypeError, ValueError):
    """A call's arguments do not match the compiled function's signature.

    The message names the argument (``input 'x' (#0)``), what was expected and what
    was given. It is both a ``TypeError`` and a ``ValueError`` so either ``except``
    catches it.
    """
