"""A PyTorch model with symbolic dimensions, declared the way ``torch.export`` takes
them.

``qidao.compile(model, example_inputs=(ids,), dynamic=({1: Dim("seq", min=1,
max=2048)},))``: ``dynamic`` is ``torch.export``'s ``dynamic_shapes`` for the
positional inputs, one entry per example input (``None``: static), each a dict of
axis -> ``torch.export.Dim`` (with a ``max``) or ``qidao.dialects.symbolic.Dim``.
The model is exported at each dimension's capacity, the example inputs padded to
it (their values kept in front), and again under it; the graphs must agree but for
the sizes (``qidao.frontend.symbolic.check_probe``), and the first is declared
symbolic (``declare_dims``). One compile then serves every size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp

from qidao.dialects.symbolic import Dim
from qidao.errors import ArgumentError
from qidao.frontend.symbolic import check_probe, declare_dims
from qidao.frontend.torch.importer import Captured, capture, to_tg


def _dim(spec: Any, where: str) -> Dim:
    if isinstance(spec, Dim):
        return spec
    name = getattr(spec, "__name__", None)
    lo, hi = getattr(spec, "min", None), getattr(spec, "max", None)
    if name is None or not isinstance(lo, int):
        raise ArgumentError(
            f"dynamic{where}: expected a torch.export.Dim or qidao Dim, got {spec!r}"
        )
    if not isinstance(hi, int) or hi > 1 << 20:  # torch's default: int_oo
        raise ArgumentError(
            f"dynamic{where}: Dim '{name}' needs a max (the model is compiled at "
            "it): torch.export.Dim(name, min=1, max=2048)"
        )
    try:
        return Dim(name, max(lo, 1), hi)
    except ValueError as e:
        raise ArgumentError(f"dynamic{where}: {e}") from None


def symbolic_axes(
    dynamic: Any, example_inputs: Sequence[torch.Tensor]
) -> list[dict[int, Dim]]:
    """``dynamic`` (``torch.export``'s ``dynamic_shapes`` for positional inputs)
    as one ``{axis: Dim}`` per input, checked."""
    if isinstance(dynamic, Mapping) or not isinstance(dynamic, Sequence):
        raise ArgumentError(
            "dynamic= for a PyTorch model takes one entry per example input, as "
            "torch.export's dynamic_shapes: ({1: torch.export.Dim('seq', min=1, "
            f"max=2048)}},); got {dynamic!r}"
        )
    if len(dynamic) != len(example_inputs):
        raise ArgumentError(
            f"dynamic= has {len(dynamic)} entries for {len(example_inputs)} example "
            "inputs"
        )
    axes: list[dict[int, Dim]] = []
    named: dict[str, Dim] = {}
    for k, (entry, tensor) in enumerate(zip(dynamic, example_inputs, strict=True)):
        if entry is None:
            axes.append({})
            continue
        if not isinstance(entry, Mapping):
            raise ArgumentError(
                f"dynamic[{k}]: expected None or {{axis: Dim}}, got {entry!r}"
            )
        mine = {}
        for axis, spec in entry.items():
            if not isinstance(axis, int) or not 0 <= axis < tensor.dim():
                raise ArgumentError(
                    f"dynamic[{k}]: axis {axis!r} of an input of rank {tensor.dim()}"
                )
            dim = _dim(spec, f"[{k}][{axis}]")
            if named.setdefault(dim.name, dim) != dim:
                raise ArgumentError(
                    f"dynamic[{k}][{axis}]: '{dim.name}' is {dim} here and "
                    f"{named[dim.name]} before"
                )
            mine[axis] = dim
        axes.append(mine)
    return axes


def _resized(tensor: torch.Tensor, axes: Mapping[int, int]) -> torch.Tensor:
    """``tensor`` with each axis in ``axes`` of the given size: its values in
    front, zeros after (or cut)."""
    shape = [axes.get(a, s) for a, s in enumerate(tensor.shape)]
    out = torch.zeros(shape, dtype=tensor.dtype)
    common = tuple(
        slice(0, min(s, t)) for s, t in zip(shape, tensor.shape, strict=True)
    )
    out[common] = tensor[common]
    return out


def capture_symbolic(
    model: Any, example_inputs: Sequence[torch.Tensor], dynamic: Any
) -> tuple[Captured, ModuleOp]:
    """Export ``model`` at its dimensions' capacities, checked against the
    exports under them; its capture and its tg module, dimensions declared."""
    args = (
        (example_inputs,)
        if isinstance(example_inputs, torch.Tensor)
        else tuple(example_inputs)
    )
    axes = symbolic_axes(dynamic, args)
    dims = {d.name: d for entry in axes for d in entry.values()}
    at = [
        _resized(t, {a: d.capacity for a, d in e.items()})
        for t, e in zip(args, axes, strict=True)
    ]
    captured = capture(model, at)
    module = to_tg(captured, mutations=True)
    if dims:

        def import_under(k: int) -> ModuleOp:
            under = [
                _resized(t, {a: d.capacity - k for a, d in e.items()})
                for t, e in zip(args, axes, strict=True)
            ]
            return to_tg(capture(model, under), mutations=True)

        check_probe(module, import_under, list(dims.values()))
        labels = [
            [e[a].name if a in e else "" for a in range(t.dim())]
            for t, e in zip(args, axes, strict=True)
        ]
        declare_dims(module, list(dims.values()), labels)
    return captured, module
