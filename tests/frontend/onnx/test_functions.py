"""ONNX function ops expanded through their bodies (``qidao/frontend/onnx/functions.py``).

An op qidao has no converter for, but that ONNX defines as a function of simpler ops
(``RMSNormalization``, ``Attention``, the losses, ...), is imported through its
function body. Each model is compiled with ``qidao.compile`` and run on the CPU, and
its outputs are compared with ``onnx.reference.ReferenceEvaluator`` on small random
inputs. Then the parts: attribute references, names, opsets, nested functions, and
the errors that name both the op and the inner op qidao lacks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.frontend.errors import ConstantRequiredError, UnsupportedOpsError
from qidao.frontend.onnx import import_onnx, importer
from qidao.frontend.onnx.functions import bind, expanded_key, expanded_nodes
from qidao.tools.conformance_cases import classify_error

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)

FLOAT, INT64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def make_model(
    nodes: list[Any],
    inputs: Mapping[str, tuple[int, Sequence[int]]],
    outputs: Sequence[str] = ("y",),
    opset: int = 23,
) -> Any:
    """A model of ``nodes``; ``inputs`` maps a name to (element type, shape); the
    outputs are float32."""
    graph = helper.make_graph(
        nodes,
        "test",
        [helper.make_tensor_value_info(n, t, s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, FLOAT, None) for n in outputs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def check(
    model: Any, inputs: Mapping[str, Array], rtol: float = 1e-5, atol: float = 1e-6
) -> None:
    """qidao's outputs equal the reference's: same shapes, values close."""
    expected = ReferenceEvaluator(model).run(None, dict(inputs))
    got = qidao.compile(model)(*inputs.values())
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def randn(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


# ---- ops through their bodies, against the reference --------------------------------


@pytest.mark.parametrize(
    "attrs", [{}, {"axis": 1, "epsilon": 1e-3}, {"axis": -2, "stash_type": 1}]
)
def test_rms_normalization(attrs: dict[str, Any]) -> None:
    axis = attrs.get("axis", -1)
    x = randn(2, 3, 4)
    scale = randn(*x.shape[axis:])
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], **attrs)
    model = make_model([node], {"x": (FLOAT, x.shape), "scale": (FLOAT, scale.shape)})
    check(model, {"x": x, "scale": scale})


def _attention(
    inputs: Mapping[str, tuple[int, Sequence[int]]], **attrs: Any
) -> tuple[Any, dict[str, Array]]:
    node = helper.make_node("Attention", list(inputs), ["y"], **attrs)
    arrays = {
        name: (randn(*shape) if t == FLOAT else RNG.random(shape) > 0.3)
        for name, (t, shape) in inputs.items()
    }
    return make_model([node], inputs), arrays


def test_attention_4d() -> None:
    qkv = {n: (FLOAT, [2, 3, 4, 8]) for n in ("q", "k", "v")}
    model, arrays = _attention(qkv)
    check(model, arrays)


def test_attention_3d_grouped_heads_with_a_bool_mask_and_scale() -> None:
    inputs = {
        "q": (FLOAT, [2, 4, 24]),  # 3 query heads of 8
        "k": (FLOAT, [2, 6, 8]),  # 1 key/value head
        "v": (FLOAT, [2, 6, 8]),
        "mask": (BOOL, [4, 6]),
    }
    model, arrays = _attention(inputs, q_num_heads=3, kv_num_heads=1, scale=0.2)
    arrays["mask"][:, 0] = True  # no row fully masked
    check(model, arrays)


def test_attention_causal_with_a_float_mask_and_softcap() -> None:
    inputs = {n: (FLOAT, [1, 2, 5, 4]) for n in ("q", "k", "v")}
    inputs["mask"] = (FLOAT, [5, 5])
    model, arrays = _attention(inputs, is_causal=1, softcap=2.0)
    check(model, arrays)


@pytest.mark.parametrize(
    "attrs", [{}, {"reduction": "none"}, {"reduction": "sum", "ignore_index": 1}]
)
def test_softmax_cross_entropy_loss_a_function_inside_a_function(
    attrs: dict[str, Any],
) -> None:
    """SoftmaxCrossEntropyLoss's body calls NegativeLogLikelihoodLoss, itself a
    function op; ``reduction`` and ``ignore_index`` reach it as attribute references
    (``reduction`` unset: the schema's default "mean")."""
    node = helper.make_node(
        "SoftmaxCrossEntropyLoss", ["x", "labels", "w"], ["y", "log_prob"], **attrs
    )
    inputs = {"x": (FLOAT, [3, 5, 2]), "labels": (INT64, [3, 2]), "w": (FLOAT, [5])}
    model = make_model([node], inputs, outputs=["y", "log_prob"], opset=13)
    labels = RNG.integers(0, 5, (3, 2))
    check(model, {"x": randn(3, 5, 2), "labels": labels, "w": randn(5) ** 2})


def test_negative_log_likelihood_loss() -> None:
    node = helper.make_node(
        "NegativeLogLikelihoodLoss", ["x", "t"], ["y"], reduction="mean"
    )
    model = make_model([node], {"x": (FLOAT, [4, 3]), "t": (INT64, [4])}, opset=22)
    check(model, {"x": randn(4, 3), "t": RNG.integers(0, 3, (4,))})


# ---- attribute references --------------------------------------------------------------


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("attrs", [{}, {"axes": [1]}, {"axes": [0, 2]}])
def test_mean_variance_normalization_axes(opset: int, attrs: dict[str, Any]) -> None:
    """The body's ``axes = Constant <value_ints = @axes>`` takes the node's ``axes``,
    else the schema's default [0, 2, 3] (set on the node before ONNX's strict shape
    inference, which fails on the unset reference); at opset 17 the body is the
    opset-13 one (``ReduceMean`` with an ``axes`` attribute), at 18 the opset-18 one
    (``axes`` an input)."""
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **attrs)
    model = make_model([node], {"x": (FLOAT, [2, 3, 4, 5])}, opset=opset)
    check(model, {"x": randn(2, 3, 4, 5)}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("opset", "body_opset"), [(17, 13), (18, 18), (23, 18)])
def test_an_unset_referenced_attribute_takes_the_schema_default(
    opset: int, body_opset: int
) -> None:
    """MeanVarianceNormalization without ``axes``: the schema's default [0, 2, 3]."""
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"])
    expansion = expanded_nodes(node, opset, "p/", lambda name: None)
    assert expansion is not None
    nodes, got_opset = expansion
    assert got_opset == body_opset
    # opset 13: ReduceMean <axes = @axes>; 18: axes = Constant <value_ints = @axes>
    bound = [a for n in nodes for a in n.attribute if a.name in ("axes", "value_ints")]
    assert [list(a.ints) for a in bound] == [[0, 2, 3]] * len(bound)
    assert len(bound) == (2 if body_opset == 13 else 1)


def _function_with_a_reference() -> Any:
    """F(X) => (Y) { T = LeakyRelu <alpha: float = @a> (X); Y = Neg (T) }."""
    ref = onnx.AttributeProto()
    ref.name, ref.ref_attr_name, ref.type = "alpha", "a", onnx.AttributeProto.FLOAT
    inner = helper.make_node("LeakyRelu", ["X"], ["T"])
    inner.attribute.append(ref)
    return helper.make_function(
        "custom",
        "F",
        ["X"],
        ["Y"],
        [inner, helper.make_node("Neg", ["T"], ["Y"])],
        [helper.make_opsetid("", 18)],
        ["a"],
    )


def test_bind_substitutes_a_set_attribute_and_renames() -> None:
    node = helper.make_node("F", ["x"], ["y"], domain="custom", a=0.5)
    leaky, neg = bind(_function_with_a_reference(), node, "p/", {})
    assert (list(leaky.input), list(leaky.output)) == (["x"], ["p/T"])
    assert (list(neg.input), list(neg.output)) == (["p/T"], ["y"])
    assert [n.name for n in (leaky, neg)] == ["p/#0", "p/#1"]
    (alpha,) = leaky.attribute
    assert (alpha.name, alpha.f, alpha.ref_attr_name) == ("alpha", 0.5, "")


def test_bind_drops_an_unset_attribute_or_takes_the_default() -> None:
    node = helper.make_node("F", ["x"], ["y"], domain="custom")
    leaky, _ = bind(_function_with_a_reference(), node, "p/", {})
    assert list(leaky.attribute) == []  # LeakyRelu's own default alpha applies
    default = helper.make_attribute("a", 0.25)
    leaky, _ = bind(_function_with_a_reference(), node, "p/", {"a": default})
    assert [(a.name, a.f) for a in leaky.attribute] == [("alpha", 0.25)]


def test_bind_leaves_omitted_optional_inputs_empty() -> None:
    body = helper.make_function(
        "custom",
        "G",
        ["A", "B"],
        ["Y", "Z"],
        [
            helper.make_node("Identity", ["A"], ["Y"]),
            helper.make_node("Identity", ["B"], ["Z"]),
        ],
        [helper.make_opsetid("", 18)],
    )
    node = helper.make_node("G", ["a"], ["y"], domain="custom")
    first, second = bind(body, node, "p/", {})
    assert (list(first.input), list(first.output)) == (["a"], ["y"])
    assert (list(second.input), list(second.output)) == ([""], ["p/Z"])


# ---- shape inputs: bound by specialization through the body ----------------------------


def test_center_crop_pad_with_a_runtime_shape_specializes() -> None:
    """CenterCropPad's body slices and pads by its ``shape`` input: the inner nodes
    need it as a constant, and the error names the graph input, which is bound."""
    node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], axes=[0, 1])
    model = make_model(
        [node], {"x": (FLOAT, [4, 6, 2]), "shape": (INT64, [2])}, opset=18
    )
    with pytest.raises(ConstantRequiredError) as caught:
        import_onnx(model)
    assert caught.value.names == ("shape",)  # not the inner values, nor float x
    check(model, {"x": randn(4, 6, 2), "shape": np.array([6, 3])})


# ---- unsupported ops: the error names both --------------------------------------------


def _without(monkeypatch: pytest.MonkeyPatch, op_type: str) -> None:
    """Make ``op_type`` unsupported for one test."""
    for table in (importer.CONVERTERS, importer.FOLDERS):
        if op_type in table:
            monkeypatch.delitem(table, op_type)


def test_an_unsupported_inner_op_names_both(monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "Sqrt")
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"])
    model = make_model([node], {"x": (FLOAT, [2, 4]), "scale": (FLOAT, [4])})
    with pytest.raises(UnsupportedOpsError) as caught:
        import_onnx(model)
    assert caught.value.ops == {"RMSNormalization (expanded: Sqrt unsupported)": ["#0"]}
    assert classify_error(caught.value) == (
        "unsupported",
        "op: RMSNormalization (expanded: Sqrt unsupported)",
    )


def test_an_unsupported_op_in_a_nested_body_names_the_chain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _without(monkeypatch, "GatherElements")
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"])
    model = make_model([node], {"x": (FLOAT, [3, 5]), "t": (INT64, [3])}, opset=13)
    with pytest.raises(UnsupportedOpsError) as caught:
        import_onnx(model)
    assert list(caught.value.ops) == [
        "SoftmaxCrossEntropyLoss (expanded: NegativeLogLikelihoodLoss "
        "(expanded: GatherElements unsupported))"
    ]


def test_an_unsupported_function_op_is_reported_with_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before the walk, with an op that has no function: one error lists both."""
    _without(monkeypatch, "Tanh")
    nodes = [
        helper.make_node("Mish", ["x"], ["m"]),  # x * tanh(softplus(x))
        helper.make_node("Det", ["m"], ["y"]),
    ]
    model = make_model(nodes, {"x": (FLOAT, [4])}, opset=22)
    with pytest.raises(UnsupportedOpsError) as caught:
        import_onnx(model)
    assert caught.value.ops == {
        "Det": ["#1"],
        "Mish (expanded: Tanh unsupported)": ["#0"],
    }


def test_expanded_key_lists_leaves_then_nested() -> None:
    key = expanded_key("A", ["Cos", "B (expanded: If unsupported)", "Acos", "Cos"])
    assert key == "A (expanded: Acos, Cos unsupported; B (expanded: If unsupported))"


def test_a_function_op_after_other_nodes_gets_its_input_types() -> None:
    """A context-dependent body needs its input types; here they are computed by
    earlier nodes (no value_info): inference before the walk, the graph in it."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("RMSNormalization", ["r", "scale"], ["y"], epsilon=1e-2),
    ]
    model = make_model(nodes, {"x": (FLOAT, [3, 4]), "scale": (FLOAT, [4])})
    del model.graph.value_info[:]
    check(model, {"x": randn(3, 4), "scale": randn(4)})
