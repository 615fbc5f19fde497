"""Fold a small all-constant node that has no NumPy folder with ONNX's reference.

Exporters compute shapes with more ops than ``fold.py`` has folders for: PyTorch's
export of MobileViT computes a ``Reshape`` target as ``Ceil(c1 * c2)``, casts and
an integer ``Div``, all on constants. Converted to tg ops, such a value would be a
runtime tensor and the ``Reshape`` would refuse it; evaluated here, it is an array
like an initializer and the ``Reshape`` folds.

So a node in the default domain whose inputs are all constants, none larger than
``MAX_ELEMENTS``, and which has no folder is evaluated once, at import, by
``onnx.reference.ReferenceEvaluator`` at the model's opset: ONNX's own definition
of the op, the same one its conformance suite checks against. When the reference
cannot evaluate it (no version for that opset, inputs it refuses), the node goes
to its converter as any other. Larger constant
inputs (weights) go to the converter as before, and the ``fold-constants`` pass
folds them in tg. Not folded here: ops whose result is random
(``RandomUniform``, ``Bernoulli``, ...), ops with graph attributes (``If``,
``Loop``, ``Scan``), and nodes with no inputs (``Constant`` has its own path).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import AttributeProto, helper, numpy_helper

from qidao.frontend.onnx.node import Node

Array = np.ndarray[Any, Any]

MAX_ELEMENTS = 4096
"""The most elements a constant input may have for the node to fold here."""

_RANDOM = ("Random", "Bernoulli", "Multinomial", "Dropout")
"""Op type prefixes whose results are random: never folded."""


def can_fold(node: Node, args: list[Array | None]) -> bool:
    """Whether ``node`` (all of whose inputs are the constants ``args``) folds here."""
    if not args or node.op_type.startswith(_RANDOM):
        return False
    graphs = (AttributeProto.GRAPH, AttributeProto.GRAPHS)
    if any(a.type in graphs for a in node.proto.attribute):
        return False
    return all(a is None or np.asarray(a).size <= MAX_ELEMENTS for a in args)


def reference_fold(node: Node, args: list[Array | None]) -> list[Array] | None:
    """The node's outputs on ``args``, by ONNX's reference evaluator, or None when
    the reference cannot evaluate it (an opset it has no version for, inputs it
    refuses): the node's converter then decides."""
    from onnx.reference import ReferenceEvaluator

    names = [f"input{k}" if a is not None else "" for k, a in enumerate(args)]
    outputs = [f"output{k}" for k in range(len(node.proto.output))]
    inner = helper.make_node(
        node.op_type, names, outputs, domain=node.proto.domain or ""
    )
    inner.attribute.extend(node.proto.attribute)
    initializers = [
        numpy_helper.from_array(np.asarray(a), name)
        for name, a in zip(names, args, strict=True)
        if a is not None
    ]
    graph = helper.make_graph(
        [inner],
        "fold",
        [],
        [helper.make_empty_tensor_value_info(o) for o in outputs],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", node.opset)]
    )
    try:
        results = list(ReferenceEvaluator(model).run(None, {}))
    except Exception:  # the reference's own refusal: the converter's turn
        return None
    return [np.asarray(r) for r in results]
