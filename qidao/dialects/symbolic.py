"""Symbolic dimensions on the IR: what a model declares, read back by the passes.

A symbolic dimension ``Dim("seq", 1, 2048)`` is a size that each call chooses in
``[lo, hi]``. qidao's symbolic dimensions are *bounded*: the graph is built and
compiled at the dimension's **capacity** (``hi`` rounded up to a multiple of
:data:`CAPACITY_MULTIPLE`), every tensor is laid out for it, and the loops that run
over the dimension run to the size of the call instead (``mark-symbolic-loops``,
``bound-symbolic-loops``; ``docs/dynamic-shapes.md``). The entry function ``@main``
carries the dimensions (``qd.dims``), which axis of each input is which
(``qd.dim_labels``) and one more input, :data:`DIMS_INPUT`, through which a call
hands the sizes. ``qidao.frontend.symbolic.declare_dims`` writes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, StringAttr

from qidao.dialects.attributes import DIM_LABELS_ATTR, DIMS_ATTR

CAPACITY_MULTIPLE = 64
"""A dimension's capacity is its ``hi`` rounded up to this: a loop over it split by
any tile that divides 64 may compute whole tiles past the call's size (into rows
that exist in every buffer) instead of a remainder loop."""

DIMS_INPUT = "symbolic_dims"
"""The entry function's last input once dimensions are declared: the sizes of the
call, one ``int64`` per dimension, in the (sorted) order of ``qd.dims``."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Dim:
    """A symbolic dimension: any size in ``[lo, hi]``, named ``name``."""

    name: str
    lo: int
    hi: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(
                f"dimension name {self.name!r}: expected an identifier "
                "(letters, digits, '_')"
            )
        for what, v in (("lo", self.lo), ("hi", self.hi)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise ValueError(
                    f"dimension '{self.name}': {what} must be an int, got {v!r}"
                )
        if not 1 <= self.lo <= self.hi:
            raise ValueError(
                f"dimension '{self.name}': the range ({self.lo}, {self.hi}) needs "
                "1 <= lo <= hi"
            )

    @property
    def capacity(self) -> int:
        """The size the model is compiled at: ``hi`` rounded up to a multiple of
        :data:`CAPACITY_MULTIPLE`."""
        return -(-self.hi // CAPACITY_MULTIPLE) * CAPACITY_MULTIPLE


def declared_dims(fn: func.FuncOp) -> dict[str, Dim]:
    """The dimensions declared on ``fn`` (none: ``{}``), in sorted order."""
    attr = fn.attributes.get(DIMS_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return {}
    dims = {}
    for name in sorted(attr.data):
        value = attr.data[name]
        assert isinstance(value, ArrayAttr)
        lo, hi, _ = (v.value.data for v in value.data if isinstance(v, IntegerAttr))
        dims[name] = Dim(name, lo, hi)
    return dims


def dim_labels(fn: func.FuncOp, attr: str = DIM_LABELS_ATTR) -> list[list[str]]:
    """Per input (or, with ``OUTPUT_DIM_LABELS_ATTR``, output) and axis: the
    dimension's name, ``""`` where static."""
    labels = fn.attributes.get(attr)
    if not isinstance(labels, ArrayAttr):
        return []
    return [
        [a.data for a in axes.data if isinstance(a, StringAttr)]
        for axes in labels.data
        if isinstance(axes, ArrayAttr)
    ]
