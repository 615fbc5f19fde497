"""Strided layouts: the arithmetic of storage + shape + strides, with no IR in it.

A tensor's elements live in a flat storage; element ``(i0, ..., in)`` sits at
``offset + sum(i_k * strides[k])``. These helpers answer the questions the book asks:
is a layout contiguous, can a new shape be a *view* of it (no copy), and what shape
two operands broadcast to under NumPy's rules.
"""

from __future__ import annotations

from collections.abc import Sequence

Shape = tuple[int, ...]


def contiguous_strides(shape: Sequence[int]) -> Shape:
    """Row-major (C-order) strides, in elements: ``(3, 4) -> (4, 1)``."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * max(shape[k + 1], 1)
    return tuple(strides)


def is_contiguous(
    shape: Sequence[int], strides: Sequence[int], offset: int = 0
) -> bool:
    """True when the layout is plain row-major storage starting at element 0.

    Strides of size-1 dimensions do not matter, as in PyTorch.
    """
    if offset != 0:
        return False
    expected = contiguous_strides(shape)
    return all(
        size == 1 or stride == want
        for size, stride, want in zip(shape, strides, expected, strict=True)
    )


def num_elements(shape: Sequence[int]) -> int:
    n = 1
    for size in shape:
        n *= size
    return n


def view_strides(
    shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]
) -> Shape | None:
    """Strides that let ``new_shape`` view the same storage, or None if impossible.

    This is PyTorch's ``computeStride``: walk the old dimensions in chunks that are
    contiguous with one another; each chunk may be split or merged freely, but a new
    dimension may not span two chunks ("spans across two contiguous subspaces").
    """
    if num_elements(shape) != num_elements(new_shape):
        return None
    if num_elements(shape) == 0 or not shape:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        chunk_ends = tensor_d == 0 or (
            shape[tensor_d - 1] != 1
            and strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        )
        if chunk_ends:
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def broadcast_shapes(*shapes: Sequence[int]) -> Shape | None:
    """NumPy broadcasting of several shapes, or None when they are incompatible."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[int] = []
    for k in range(rank):
        size = 1
        for shape in shapes:
            dim_index = k - (rank - len(shape))
            if dim_index < 0:
                continue
            dim = shape[dim_index]
            if dim == 1:
                continue
            if size not in (1, dim):
                return None
            size = dim
        result.append(size)
    return tuple(result)


def broadcast_strides(
    shape: Sequence[int], strides: Sequence[int], target: Sequence[int]
) -> Shape:
    """Strides that present ``shape`` as ``target`` without copying (stride 0 repeats).

    The caller has checked that ``shape`` broadcasts to ``target``.
    """
    pad = len(target) - len(shape)
    out: list[int] = []
    for k, size in enumerate(target):
        src = k - pad
        if src < 0 or (shape[src] == 1 and size != 1):
            out.append(0)
        else:
            out.append(strides[src])
    return tuple(out)
