"""``einsum`` on builder values: an equation as transposes, diagonals, sums and
batched matmuls (NumPy's ``einsum`` semantics, shared by the ONNX and the PyTorch
frontends).

The equation names each operand's dimensions with letters (``"bij,bjk->bik"``);
``...`` stands for the dimensions no letter names (all operands' ``...`` broadcast
together, right-aligned, as NumPy's shapes do). Without ``->`` the output is the
``...`` dimensions, then the letters used exactly once, in sorted (ASCII) order.
A letter the output lacks is summed over. The steps:

1. each operand's repeated letters become its diagonal (``ii``: a ``gather`` of
   the entries ``k * (n + 1)`` of the two dimensions flattened), and the letters
   no other operand and not the output uses are summed (``reduce_sum``);
2. the operands are combined left to right, two at a time: the letters both have
   are batch dimensions when still needed (by the output or a later operand),
   else contracted; each operand is transposed to ``[batch, own, contracted]``
   (its size-1 broadcast dimensions expanded), reshaped to rank 3 and multiplied
   with one ``matmul``, whose result is reshaped back to ``[batch, own of the
   left, own of the right]``;
3. the letters the output lacks are summed and the rest transposed to its order.

Floats compute in their own dtype (float16 in float32, as ``matmul`` and the
reductions do); integers in float64 and converted back (exact while every partial
sum stays below 2^53). A malformed equation, or one that does not fit the operands'
ranks and sizes, is a ``GraphError`` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from qidao.frontend.builder import Graph, Value
from qidao.frontend.errors import GraphError

_COMPUTE = {"float16": "float32", "float32": "float32", "float64": "float64"}
"""The dtype each operand dtype computes in; any other (integers) in float64."""


def parse_equation(
    equation: str, ranks: Sequence[int]
) -> tuple[list[list[str]], list[str]]:
    """The labels of each operand's dimensions and of the output's, ``...``
    expanded into labels ``"...0"``, ``"...1"``, ... (right-aligned across the
    operands); raises ``GraphError`` for an equation that does not fit ``ranks``."""
    text = "".join(equation.split())
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise _error(equation, f"has {len(terms)} operand(s), given {len(ranks)}")
    dims = [
        rank - len(term.replace("...", ""))
        for term, rank in zip(terms, ranks, strict=True)
        if "..." in term
    ]
    widest = max(dims, default=0)
    inputs = [
        _labels(equation, term, rank, widest)
        for term, rank in zip(terms, ranks, strict=True)
    ]
    if arrow:
        output = _labels(equation, rhs, None, widest)
    else:
        letters = [label for labels in inputs for label in labels]
        once = sorted(c for c in set(letters) if c.isalpha() and letters.count(c) == 1)
        output = [f"...{k}" for k in range(widest)] + once
    if len(set(output)) != len(output):
        raise _error(equation, "repeats a letter in its output")
    used = {label for labels in inputs for label in labels}
    missing = [label for label in output if label not in used]
    if missing:
        raise _error(equation, f"outputs {missing[0]!r}, which no operand has")
    return inputs, output


def _labels(equation: str, term: str, rank: int | None, widest: int) -> list[str]:
    """The labels of one term; ``rank`` None for the output (its ``...`` is all the
    ``widest`` ellipsis dimensions)."""
    head, dots, tail = term.partition("...")
    if "." in head + tail:
        raise _error(equation, f"has a malformed ellipsis in {term!r}")
    bad = [c for c in head + tail if not c.isascii() or not c.isalpha()]
    if bad:
        raise _error(equation, f"uses {bad[0]!r}; labels are letters a-z, A-Z")
    count = widest if rank is None else rank - len(head) - len(tail)
    if rank is not None and (count < 0 or (count and not dots)):
        raise _error(equation, f"term {term!r} does not fit an operand of rank {rank}")
    middle = [f"...{widest - count + k}" for k in range(count)] if dots else []
    return [*head, *middle, *tail]


def _error(equation: str, why: str) -> GraphError:
    return GraphError(f"einsum: equation {equation!r} {why}")


def einsum(g: Graph, equation: str, operands: Sequence[Value]) -> Value:
    """NumPy's ``einsum(equation, *operands)`` as tg ops (see the module
    docstring)."""
    if not operands:
        raise _error(equation, "needs at least one operand")
    dtype = operands[0].dtype
    if any(x.dtype != dtype for x in operands):
        dtypes = ", ".join(x.dtype for x in operands)
        raise _error(equation, f"needs operands of one dtype, got {dtypes}")
    inputs, output = parse_equation(equation, [x.rank for x in operands])
    sizes = _sizes(equation, inputs, operands)
    compute = _COMPUTE.get(dtype, "float64")
    values = [x if x.dtype == compute else g.cast(x, compute) for x in operands]
    terms = [_diagonals(g, x, labels) for x, labels in zip(values, inputs, strict=True)]
    result, labels = terms[0]
    for k in range(1, len(terms)):
        later = set(output).union(*(labels_ for _, labels_ in terms[k + 1 :]))
        result, labels = _pair(g, (result, labels), terms[k], later, sizes)
    result, labels = _sum_unused(g, result, labels, set(output))
    result = _broadcast(g, result, labels, sizes)
    perm = [labels.index(label) for label in output]
    if perm != list(range(len(perm))):
        result = g.transpose(result, perm)
    return result if result.dtype == dtype else g.cast(result, dtype)


def _sizes(
    equation: str, inputs: list[list[str]], operands: Sequence[Value]
) -> dict[str, int]:
    """Each label's size: equal wherever it appears (a ``...`` dimension may also
    be 1, which broadcasts)."""
    sizes: dict[str, int] = {}
    for labels, x in zip(inputs, operands, strict=True):
        for label, size in zip(labels, x.shape, strict=True):
            known = sizes.setdefault(label, size)
            if known == size:
                continue
            if label.startswith("...") and 1 in (known, size):
                sizes[label] = max(known, size)
                continue
            raise _error(equation, f"gives {label!r} the sizes {known} and {size}")
    return sizes


def _diagonals(g: Graph, x: Value, labels: list[str]) -> tuple[Value, list[str]]:
    """``x`` with each repeated label taken along its diagonal, once."""
    labels = list(labels)
    while len(set(labels)) != len(labels):
        label = next(c for c in labels if labels.count(c) > 1)
        first, second = (k for k, c in enumerate(labels) if c == label)
        rest = [k for k in range(len(labels)) if k not in (first, second)]
        n = x.shape[first]
        moved = g.transpose(x, [*rest, first, second])
        flat = g.reshape(moved, [*(x.shape[k] for k in rest), n * n])
        x = g.gather(flat, [k * (n + 1) for k in range(n)], axis=len(rest))
        labels = [labels[k] for k in rest] + [label]
    return x, labels


def _sum_unused(
    g: Graph, x: Value, labels: list[str], needed: set[str]
) -> tuple[Value, list[str]]:
    """``x`` summed over the labels ``needed`` lacks."""
    axes = [k for k, label in enumerate(labels) if label not in needed]
    if not axes:
        return x, labels
    kept = [label for label in labels if label in needed]
    return g.reduce_sum(x, axes), kept


def _broadcast(g: Graph, x: Value, labels: list[str], sizes: dict[str, int]) -> Value:
    """``x`` with its size-1 dimensions expanded to their labels' sizes."""
    shape = [sizes[label] for label in labels]
    return x if list(x.shape) == shape else g.broadcast(x, shape)


def _pair(
    g: Graph,
    left: tuple[Value, list[str]],
    right: tuple[Value, list[str]],
    later: set[str],
    sizes: dict[str, int],
) -> tuple[Value, list[str]]:
    """The product of two terms over their common labels, summed over those not
    ``later`` needed, as one batched matmul."""
    (a, a_labels), (b, b_labels) = left, right
    a, a_labels = _sum_unused(g, a, a_labels, later | set(b_labels))
    b, b_labels = _sum_unused(g, b, b_labels, later | set(a_labels))
    common = [label for label in a_labels if label in b_labels]
    batch = [label for label in common if label in later]
    contracted = [label for label in common if label not in later]
    a_own = [label for label in a_labels if label not in common]
    b_own = [label for label in b_labels if label not in common]
    lhs = _grouped(g, a, a_labels, [batch, a_own, contracted], sizes)
    rhs = _grouped(g, b, b_labels, [batch, contracted, b_own], sizes)
    product = g.matmul(lhs, rhs)
    labels = [*batch, *a_own, *b_own]
    return g.reshape(product, [sizes[label] for label in labels]), labels


def _grouped(
    g: Graph,
    x: Value,
    labels: list[str],
    groups: list[list[str]],
    sizes: dict[str, int],
) -> Value:
    """``x`` transposed to the order of ``groups``, broadcast, and reshaped to one
    dimension per group."""
    order = [label for group in groups for label in group]
    perm = [labels.index(label) for label in order]
    if perm != list(range(len(perm))):
        x = g.transpose(x, perm)
    x = _broadcast(g, x, order, sizes)
    shape = [math.prod(sizes[label] for label in group) for group in groups]
    return g.reshape(x, shape)


__all__ = ["einsum", "parse_equation"]
