"""Declare symbolic dimensions on a tg module a frontend made at their capacity.

``qidao.compile(model, dynamic={"seq": (1, 2048)})`` and the builder's
``g.input("x", (Dim("seq", 1, 2048), 768))`` end here: :func:`declare_dims` marks
the module so that one compile serves every size of each dimension
(``qidao.dialects.symbolic`` says how; ``docs/dynamic-shapes.md``).

A frontend that folds shape arithmetic (ONNX, PyTorch) imports the model twice,
at the capacity and one size under it, and :func:`check_probe` compares the two:
a model that computes *with* a size (divides by it, counts from the end) folds to
values right at the capacity alone, and is refused (``SymbolicShapeError``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Operation

from qidao.dialects import tg
from qidao.dialects.attributes import DIM_LABELS_ATTR, DIMS_ATTR, INPUT_NAMES_ATTR
from qidao.dialects.symbolic import DIMS_INPUT, Dim
from qidao.errors import ArgumentError, UnsupportedError

__all__ = [
    "Dim",
    "SymbolicShapeError",
    "check_probe",
    "declare_dims",
    "parse_dynamic",
]

_NUMBER = re.compile(r"-?\d+")


class SymbolicShapeError(UnsupportedError):
    """The model computes with a symbolic dimension's size, not only along it."""


def parse_dynamic(dynamic: Mapping[str, object]) -> dict[str, Dim]:
    """``dynamic={"seq": (1, 2048)}`` (or ``Dim`` values) as dimensions, checked."""
    if not isinstance(dynamic, Mapping) or not dynamic:
        raise ArgumentError(
            "dynamic= takes a dict of dimension name -> (lo, hi), e.g. "
            f'{{"seq": (1, 2048)}}; got {dynamic!r}'
        )
    dims: dict[str, Dim] = {}
    for name, spec in dynamic.items():
        if isinstance(spec, Dim):
            if spec.name != name:
                raise ArgumentError(
                    f"dynamic={{{name!r}: Dim({spec.name!r}, ...)}}: the key and "
                    "the dimension's name differ"
                )
            dims[name] = spec
            continue
        if (
            not isinstance(spec, tuple | list)
            or len(spec) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in spec)
        ):
            raise ArgumentError(
                f"dynamic[{name!r}] = {spec!r}: expected a range (lo, hi) of ints"
            )
        try:
            dims[name] = Dim(name, int(spec[0]), int(spec[1]))
        except ValueError as e:
            raise ArgumentError(f"dynamic=: {e}") from None
    return dims


def entry(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise ValueError("the model has no entry function @main")


def declare_dims(
    module: ModuleOp, dims: Sequence[Dim], labels: Sequence[Sequence[str]]
) -> None:
    """Mark ``module`` (a tg module built at each dimension's capacity) as serving
    every size of ``dims``: ``labels`` names, per graph input and axis, the
    dimension it is (``""``: static). Adds the :data:`DIMS_INPUT` input."""
    fn = entry(module)
    args = fn.body.block.args
    if len(labels) != len(args):
        raise ValueError(f"{len(labels)} label lists for {len(args)} inputs")
    dims = sorted(dims, key=lambda d: d.name)  # the order of DIMS_INPUT
    by_name = {d.name: d for d in dims}
    used: set[str] = set()
    for arg, axes in zip(args, labels, strict=True):
        t = arg.type
        assert isinstance(t, TensorType)
        shape = t.get_shape()
        if len(axes) != len(shape):
            raise ValueError(f"{len(axes)} labels for an input of rank {len(shape)}")
        for axis, label in enumerate(axes):
            if label and shape[axis] != by_name[label].capacity:
                raise ValueError(
                    f"input axis {axis} is '{label}' but has size {shape[axis]}, "
                    f"not its capacity {by_name[label].capacity}"
                )
            used.add(label)
    unused = [d.name for d in dims if d.name not in used]
    if unused:
        raise ArgumentError(
            f"dimension(s) {', '.join(map(repr, unused))} declared but no input has one"
        )
    t = TensorType(i64, (len(dims),))
    arg = fn.body.block.insert_arg(t, len(args))
    arg.name_hint = DIMS_INPUT
    inputs = [*fn.function_type.inputs.data, t]
    fn.function_type = FunctionType.from_lists(inputs, fn.function_type.outputs.data)
    names = fn.attributes.get(INPUT_NAMES_ATTR)
    if isinstance(names, ArrayAttr):
        fn.attributes[INPUT_NAMES_ATTR] = ArrayAttr(
            [*names.data, StringAttr(DIMS_INPUT)]
        )
    fn.attributes[DIMS_ATTR] = DictionaryAttr(
        {
            d.name: ArrayAttr([IntegerAttr(v, i64) for v in (d.lo, d.hi, d.capacity)])
            for d in dims
        }
    )
    fn.attributes[DIM_LABELS_ATTR] = ArrayAttr(
        [ArrayAttr([StringAttr(a) for a in axes]) for axes in [*labels, [""]]]
    )


def check_probe(
    at: ModuleOp, import_under: Callable[[int], ModuleOp], dims: Sequence[Dim]
) -> None:
    """Raise ``SymbolicShapeError`` unless the model, imported at the capacity
    (``at``) and ``k`` sizes under it (``import_under(k)``), is the same graph but
    for the symbolic sizes (module text).

    ``at`` is compared with the import one size under. Where their ops differ (at
    the capacity an exporter may drop an op that is the identity there alone: a
    slice ``pos[:n]`` of a table of exactly ``n`` rows), the imports one and two
    sizes under are compared instead; the capacity's graph then differs from them
    by such ops only, which the kernels' own checks (``mark-symbolic-loops``) see."""
    names = ", ".join(d.name for d in dims)
    capacity = {d.capacity for d in dims}
    one = import_under(1)
    if _op_names(at) == _op_names(one):
        _compare_all(at, one, [(c, c - 1) for c in capacity], names)
        return
    two = import_under(2)
    if _op_names(one) != _op_names(two):
        first = next(
            (
                (a, b)
                for a, b in zip(_op_names(one), _op_names(two), strict=False)
                if a != b
            ),
            ("", ""),
        )
        raise SymbolicShapeError(
            f"the model's graph changes with the size of {names}: one size under "
            f"the capacity it has {first[0] or 'no op'} where two under has "
            f"{first[1] or 'no op'}; its structure depends on the size, which one "
            "compile cannot serve"
        )
    _compare_all(one, two, [(c - 1, c - 2) for c in capacity], names)


def _op_names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk()]


def _compare_all(
    big: ModuleOp, small: ModuleOp, sizes: Sequence[tuple[int, int]], names: str
) -> None:
    for a, b in zip(big.walk(), small.walk(), strict=True):
        _compare(a, b, sizes, names)


def _scales(x: int, y: int, sizes: Sequence[tuple[int, int]]) -> bool:
    """``x`` and ``y`` equal, or the same multiple of a dimension's two sizes."""
    return x == y or any(x * small == y * big for big, small in sizes)


def _compare(
    a: Operation, b: Operation, sizes: Sequence[tuple[int, int]], names: str
) -> None:
    where = f"{a.name}"
    at = f"at {names} = {', '.join(str(big) for big, _ in sizes)}"
    under = f"at {', '.join(str(small) for _, small in sizes)}"
    for ra, rb in zip(a.results, b.results, strict=True):
        ta, tb = ra.type, rb.type
        if isinstance(ta, TensorType) and isinstance(tb, TensorType):
            sa, sb = ta.get_shape(), tb.get_shape()
            if len(sa) != len(sb) or not all(
                _scales(x, y, sizes) for x, y in zip(sa, sb, strict=True)
            ):
                raise SymbolicShapeError(
                    f"{where}: its result is {ta} {at} but {tb} {under}; a shape "
                    f"that does not follow {names} alone"
                )
    if isinstance(a, tg.ConstantOp) and isinstance(b, tg.ConstantOp):
        va, vb = a.to_numpy(), b.to_numpy()
        common = tuple(
            slice(0, min(x, y)) for x, y in zip(va.shape, vb.shape, strict=True)
        )
        if not np.array_equal(va[common], vb[common], equal_nan=True):
            raise SymbolicShapeError(
                f"constant {a.result.name_hint or ''} ({a.result.type}) holds other "
                f"values {at} than {under}: the model computes with the size of "
                f"{names} (divides by it, or counts from the end), which one "
                "compile for every size cannot fold"
            )
        return
    for key in sorted(set(a.properties) | set(a.attributes)):
        xa = a.properties.get(key, a.attributes.get(key))
        xb = b.properties.get(key, b.attributes.get(key))
        text_a, text_b = str(xa), str(xb)
        if text_a == text_b:
            continue
        na, nb = _NUMBER.findall(text_a), _NUMBER.findall(text_b)
        if (
            _NUMBER.sub("#", text_a) != _NUMBER.sub("#", text_b)
            or len(na) != len(nb)
            or not all(
                _scales(int(x), int(y), sizes) for x, y in zip(na, nb, strict=True)
            )
        ):
            raise SymbolicShapeError(
                f"{where}: its {key} is {text_a} {at} but {text_b} {under}: the model "
                f"computes with the size of {names}"
            )
