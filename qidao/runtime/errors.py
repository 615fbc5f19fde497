"""Errors the runtime raises before it calls native code (the class lives in the
package's one error hierarchy, ``qidao/errors.py``)."""

from __future__ import annotations

from qidao.errors import ArgumentError

__all__ = ["ArgumentError"]
