"""Converters for ``Transpose``, ``Reshape`` and ``Flatten``."""

from __future__ import annotations

import math
from collections.abc import Sequence

from qidao.frontend.builder import Value
from qidao.frontend.onnx.importer import Array, Importer, Node, converter


@converter("Transpose")
def _transpose(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    perm = node.attr("perm")
    return [im.graph.transpose(x, None if perm is None else list(perm))]


def reshape_target(
    node: Node, shape: Sequence[int], target: Sequence[int]
) -> list[int]:
    """The ONNX ``Reshape`` of ``shape`` to ``target``, resolved: a 0 copies the input
    dimension (unless ``allowzero``) and one -1 is inferred."""
    target = [int(d) for d in target]
    allowzero = node.attr("allowzero", 0)
    result = []
    for k, d in enumerate(target):
        if d == 0 and not allowzero:
            if k >= len(shape):
                raise node.error(
                    f"shape {target} copies dimension {k} (0), but the input has rank "
                    f"{len(shape)}"
                )
            d = shape[k]
        elif d < -1:
            raise node.error(f"shape {target} has a negative dimension {d}")
        result.append(d)
    if result.count(-1) > 1:
        raise node.error(f"shape {target} has more than one -1")
    total = math.prod(shape)
    if -1 in result:
        known = math.prod(d for d in result if d != -1)
        if known == 0 or total % known:
            raise node.error(
                f"cannot infer the -1 in shape {target} for an input of shape "
                f"{list(shape)}"
            )
        result[result.index(-1)] = total // known
    if math.prod(result) != total:
        raise node.error(
            f"cannot reshape an input of shape {list(shape)} ({total} elements) to "
            f"{result}"
        )
    return result


@converter("Reshape")
def _reshape(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    target = [int(d) for d in im.const(node, node.inputs[1], "shape").reshape(-1)]
    return [im.graph.reshape(x, reshape_target(node, x.shape, target))]


@converter("Flatten")
def _flatten(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    axis = int(node.attr("axis", 1))
    if not -x.rank <= axis <= x.rank:
        raise node.error(f"axis {axis} is out of range for rank {x.rank}")
    if axis < 0:
        axis += x.rank
    shape = (math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))
    return [im.graph.reshape(x, shape)]
