"""The errors qidao raises for its users: one hierarchy, ``QidaoError`` at its root.

Catch ``qidao.QidaoError`` to handle every error qidao raises on purpose; each
message names the file and line, node, op, loop or input at fault and what was
expected. The families (each also importable from ``qidao``):

==========================  ===========================================================
class                       raised when
==========================  ===========================================================
``ModelError``              a model cannot be read or imported (ONNX, ``.mlir``,
                            PyTorch, builder graphs, weights files); the frontend's
                            ``FrontendError`` and its subclasses
``UnsupportedError``        a ``ModelError`` for what qidao does not implement: op
                            types, dtypes, attributes, constructs a lowering refuses
``ScheduleError``           a schedule primitive that does not apply (kernel, loop,
                            reason); ``qidao.compiler.schedule`` has its subclasses
``RecordsError``            a tuning-records line or a cache entry that cannot be used
``ArgumentError``           a compiled call's arguments (also a ``TypeError`` and a
                            ``ValueError``)
``ResourceError``           a compile would need more memory than the limit allows
``CheckError``              a call of a model compiled with ``checks=True`` met an
                            index out of range or an integer division by zero (names
                            the node and the values; also a ``ValueError``)
``InternalCompilerError``   a bug in qidao (a pass built IR that does not verify):
                            names the pass and the op; please report it
==========================  ===========================================================

Python-level misuse (an unknown keyword, a wrong option type) stays a ``TypeError`` or
``ValueError``, as Python's own functions raise. This module imports nothing, so that
every layer of the package may raise these (the dialects aside: they know only xDSL).
"""

from __future__ import annotations


class QidaoError(Exception):
    """Base of every error qidao raises on purpose for its users."""


class ModelError(QidaoError):
    """A model that cannot be read or imported."""


class UnsupportedError(ModelError):
    """Something in the model that qidao does not implement (named in the message)."""


class RecordsError(QidaoError, ValueError):
    """A records file line or cache entry that cannot be used: names file and line."""


class ArgumentError(QidaoError, TypeError, ValueError):
    """A call's arguments do not match the compiled function's signature.

    The message names the argument (``input 'x' (#0)``), what was expected and what
    was given. It is both a ``TypeError`` and a ``ValueError`` so either ``except``
    catches it."""


class ResourceError(QidaoError, MemoryError):
    """A compile that would need more memory than qidao's limit: names the node."""


class CheckError(QidaoError, ValueError):
    """A run-time check of ``qidao.compile(..., checks=True)`` failed: an index out
    of its axis or an integer divisor of zero. Names the node and the values."""


class GradcheckError(QidaoError, ValueError):
    """``qidao.gradcheck`` found a compiled gradient that disagrees with central
    differences: names the input, the element and both values."""
