"""The ops whose operands have a run-time domain, and where an op came from.

These tg ops compute a defined value for operand values that ONNX Runtime and
PyTorch reject at run time (``docs/semantics.md``):

- ``tg.take``, ``tg.gather_elements`` and ``tg.gather_nd`` with an index outside
  ``[-n, n)``: the index is clamped into the axis (``dynamic_indexing.py``,
  ``scatter.py``);
- ``tg.scatter_elements`` and ``tg.scatter_nd`` with an index outside
  ``[-n, n)``: the update is skipped (``scatter.py``);
- ``tg.div`` on integers with a divisor of 0: the quotient is 0 (``elementwise.py``).

No verifier can see a run-time value, so the kernels define these cases rather than
trap. The ``insert-checks`` pass (``qidao.compile(..., checks=True)``) adds the
run-time checks that report them instead, naming the op by ``SOURCE_ATTR``
(``qidao.dialects.attributes``): the frontends set it on these ops to the node they
came from (``Gather node 'g0'``, ``node 'embedding' (aten.embedding)``), and
``NONNEGATIVE_ATTR`` where the source op's indices may not be negative.
"""

from __future__ import annotations

from xdsl.ir import Operation

from qidao.dialects.tg.dynamic_indexing import GatherElementsOp, TakeOp
from qidao.dialects.tg.elementwise import DivOp
from qidao.dialects.tg.scatter import GatherNdOp, ScatterElementsOp, ScatterNdOp
from qidao.dialects.tg.types import kind_of


def has_runtime_domain(op: Operation) -> bool:
    """``op`` is a gather or scatter by a runtime index tensor or an integer
    division."""
    if isinstance(op, TakeOp | GatherElementsOp):
        return True
    if isinstance(op, ScatterElementsOp | ScatterNdOp | GatherNdOp):
        return True
    if isinstance(op, DivOp):
        element = op.result.type.get_element_type()  # type: ignore[attr-defined]
        return kind_of(element) == "int"
    return False
