"""Converters for ``Transpose``, ``Reshape`` and ``Flatten``."""

from __future__ import annotations

import math

from qidao.frontend.builder import Value
from qidao.frontend.onnx.importer import Array, Importer, Node, converter


@converter("Transpose")
def _transpose(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    perm = node.attr("perm")
    return [im.graph.transpose(x, None if perm is None else list(perm))]


@converter("Reshape")
def _reshape(im: Importer, node: Node) -> list[Value | Array]:
    x = im.input(node, 0)
    target = [int(d) for d in im.const(node, node.inputs[1], "shape").reshape(-1)]
    allowzero = node.attr("allowzero", 0)
    shape = []
    for k, d in enumerate(target):
        if d == 0 and not allowzero:
            if k >= x.rank:
                raise node.error(
                    f"shape {target} copies dimension {k} (0), but the input has rank "
                    f"{x.rank}"
                )
            d = x.shape[k]
        shape.append(d)
    if shape.count(-1) > 1:
        raise node.error(f"shape {target} has more than one -1")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        total = math.prod(x.shape)
        if known == 0 or total % known:
            raise node.error(
                f"cannot infer the -1 in shape {target} for an input of shape "
                f"{list(x.shape)}"
            )
        shape[shape.index(-1)] = total // known
    return [im.graph.reshape(x, shape)]


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
