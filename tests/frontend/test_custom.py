"""User-defined operators (``qidao.custom_op``): the registry, the builder's
``tg.custom``, gradients against float64 central differences (``gradcheck.py``),
the ONNX and PyTorch frontends, and compiled results against NumPy / PyTorch.

Compiles are few (four JIT builds); the rest runs on the NumPy evaluator."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper
from xdsl.context import Context
from xdsl.dialects.func import FuncOp

import qidao
from qidao.dialects.tg import CustomOp
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph, Value
from qidao.frontend.custom import CustomOpDef, custom_op, lookup, unregister
from qidao.frontend.errors import GraphError, OnnxImportError, UnsupportedOpsError
from qidao.frontend.onnx import import_onnx
from qidao.passes.graph.autodiff import AutodiffError, AutodiffPass
from qidao.passes.graph.expand_custom import ExpandCustomPass
from tests.dialects.tg.grad.gradcheck import check_vjp

RNG = np.random.default_rng(14)


def sigmoid(x: np.ndarray) -> Any:
    return 1.0 / (1.0 + np.exp(-x))


def swish_forward(g: Graph, x: Value) -> Value:
    return x * g.sigmoid(x)


def swish_vjp(g: Graph, x: Value, y: Value, dy: Value) -> Value:
    s = g.sigmoid(x)
    return dy * (s + x * s * (1.0 - s))


def wrong_swish_vjp(g: Graph, x: Value, y: Value, dy: Value) -> Value:
    return dy * g.sigmoid(x)  # forgets the x * s * (1 - s) term


def scaled_forward(g: Graph, x: Value, w: Value) -> Value:
    """``tanh(x) * w``, ``w`` broadcast over the rows of ``x``."""
    return g.tanh(x) * w


def scaled_vjp(g: Graph, x: Value, w: Value, y: Value, dy: Value) -> list[Value]:
    t = g.tanh(x)
    return [dy * w * (1.0 - t * t), g.reduce_sum(dy * t, 0)]


@pytest.fixture
def register() -> Iterator[Callable[..., CustomOpDef]]:
    """``register(name, forward, **kw)``: ``custom_op``, undone after the test."""
    names: list[str] = []

    def add(name: str, forward: Callable[..., Any], **kw: Any) -> CustomOpDef:
        definition: CustomOpDef = custom_op(name, forward, **kw)
        names.append(name)
        return definition

    yield add
    for name in names:
        unregister(name)


def main(module: Any) -> FuncOp:
    return next(o for o in module.ops if isinstance(o, FuncOp))


# --- the registry ---------------------------------------------------------------------


def test_decorator_registers_and_is_public(
    register: Callable[..., CustomOpDef],
) -> None:
    assert qidao.custom_op is custom_op
    definition = qidao.custom_op("demo::swish_dec", vjp=swish_vjp)(swish_forward)
    try:
        assert lookup("demo::swish_dec") is definition
        assert isinstance(definition, CustomOpDef)
        assert (definition.domain, definition.op_type) == ("demo", "swish_dec")
    finally:
        unregister("demo::swish_dec")
    assert lookup("demo::swish_dec") is None


def test_bad_names_and_duplicates(register: Callable[..., CustomOpDef]) -> None:
    for bad in ("swish", "demo:swish", "demo::", "::swish", "demo::sw ish"):
        with pytest.raises(ValueError, match="'namespace::name'"):
            custom_op(bad, swish_forward)
    register("demo::twice", swish_forward)
    with pytest.raises(ValueError, match="'demo::twice' is already registered"):
        custom_op("demo::twice", swish_forward)
    with pytest.raises(TypeError, match="vjp must be callable"):
        custom_op("demo::other", swish_forward, vjp=3)  # type: ignore[arg-type]


# --- the builder ------------------------------------------------------------------------


def test_builder_builds_one_custom_op_with_both_regions(
    register: Callable[..., CustomOpDef],
) -> None:
    swish = register("demo::swish_b", swish_forward, vjp=swish_vjp)
    g = Graph()
    x = g.input("x", (2, 3))
    y = swish(x)
    assert (y.shape, y.dtype) == ((2, 3), "float32")
    g.output(g.custom("demo::swish_b", y))  # the other spelling
    module = g.module()
    ops = [o for o in main(module).body.block.ops if isinstance(o, CustomOp)]
    assert len(ops) == 2 and all(o.has_vjp() for o in ops)
    a = RNG.normal(size=(2, 3)).astype(np.float32)
    (got,) = evaluate_function(main(module), [a])
    once = a.astype(np.float64) * sigmoid(a.astype(np.float64))
    np.testing.assert_allclose(got, once * sigmoid(once), rtol=1e-6)


def test_several_results_and_strided_outputs(
    register: Callable[..., CustomOpDef],
) -> None:
    """A forward may return several values; a transpose comes out row-major."""
    split = register("demo::split_t", lambda g, x: (g.transpose(x), g.reduce_sum(x, 1)))
    g = Graph()
    x = g.input("x", (2, 3))
    with pytest.raises(GraphError, match="has 2 results: build it with custom_results"):
        g.custom("demo::split_t", x)
    t, s = split(x)
    assert t.shape == (3, 2) and s.shape == (2,)
    g.output(t, s)
    a = RNG.normal(size=(2, 3)).astype(np.float32)
    got = evaluate_function(main(g.module()), [a])
    np.testing.assert_array_equal(got[0], a.T)
    np.testing.assert_allclose(got[1], a.sum(1), rtol=1e-6)


def test_infer_is_checked_against_the_forward(
    register: Callable[..., CustomOpDef],
) -> None:
    register("demo::good_infer", swish_forward, infer=lambda x: (x[0], x[1]))
    register("demo::bad_infer", swish_forward, infer=lambda x: ((x[0][0],), "float64"))
    g = Graph()
    x = g.input("x", (2, 3))
    assert g.custom("demo::good_infer", x).shape == (2, 3)
    with pytest.raises(
        GraphError, match=r"'demo::bad_infer': infer gives \[\(\(2,\), "
    ):
        g.custom("demo::bad_infer", x)


def test_builder_errors_name_the_op(register: Callable[..., CustomOpDef]) -> None:
    register("demo::bad_vjp_count", swish_forward, vjp=lambda g, x, y, dy: [dy, dy])
    register(
        "demo::bad_vjp_shape", swish_forward, vjp=lambda g, x, y, dy: g.reduce_sum(dy)
    )
    register("demo::bad_forward", lambda g, x: x @ x)
    g = Graph()
    x = g.input("x", (2, 3))
    with pytest.raises(GraphError, match="custom op 'demo::nowhere' is not registered"):
        g.custom("demo::nowhere", x)
    with pytest.raises(GraphError, match=r"returns 2 gradient.*1 input"):
        g.custom("demo::bad_vjp_count", x)
    with pytest.raises(
        GraphError, match=r"gradient #0 is \[\] float32, but input #0 is \[2, 3\]"
    ):
        g.custom("demo::bad_vjp_shape", x)
    with pytest.raises(
        GraphError, match="custom op 'demo::bad_forward': the forward: matmul"
    ):
        g.custom("demo::bad_forward", x)


# --- gradients ---------------------------------------------------------------------------


def test_gradient_matches_central_differences(
    register: Callable[..., CustomOpDef],
) -> None:
    register("demo::swish_g", swish_forward, vjp=swish_vjp)
    check_vjp(lambda g, x: g.custom("demo::swish_g", x), [RNG.normal(size=(3, 4))])


def test_two_input_gradient_with_broadcasting(
    register: Callable[..., CustomOpDef],
) -> None:
    register("demo::scaled", scaled_forward, vjp=scaled_vjp)
    inputs = [RNG.normal(size=(3, 4)), RNG.uniform(0.5, 1.5, (4,))]
    check_vjp(lambda g, x, w: g.custom("demo::scaled", x, w), inputs)
    check_vjp(lambda g, x, w: g.custom("demo::scaled", x, w) * x, inputs, wrt=[1])


def test_wrong_vjp_is_caught(register: Callable[..., CustomOpDef]) -> None:
    register("demo::swish_wrong", swish_forward, vjp=wrong_swish_vjp)
    with pytest.raises(AssertionError, match="gradient of input 0"):
        check_vjp(
            lambda g, x: g.custom("demo::swish_wrong", x), [RNG.normal(size=(5,))]
        )


def test_none_is_a_zero_gradient(register: Callable[..., CustomOpDef]) -> None:
    register(
        "demo::scaled_x_only",
        scaled_forward,
        vjp=lambda g, x, w, y, dy: [scaled_vjp(g, x, w, y, dy)[0], None],
    )
    build = lambda g, x, w: g.custom("demo::scaled_x_only", x, w)  # noqa: E731
    inputs = [RNG.normal(size=(2, 4)), RNG.uniform(0.5, 1.5, (4,))]
    check_vjp(build, inputs, wrt=[0])
    g = Graph()
    x, w = g.input("x", (2, 4), "float64"), g.input("w", (4,), "float64")
    g.output(g.reduce_sum(build(g, x, w)))
    module = g.module()
    AutodiffPass(wrt=("w",)).apply(Context(), module)
    _, grad_w = evaluate_function(main(module), inputs)
    np.testing.assert_array_equal(grad_w, np.zeros(4))


def test_no_vjp_is_a_clear_error_when_differentiated(
    register: Callable[..., CustomOpDef],
) -> None:
    register("demo::swish_nv", swish_forward)
    g = Graph()
    x = g.input("x", (4,))
    g.output(g.reduce_sum(g.custom("demo::swish_nv", x)))
    with pytest.raises(AutodiffError, match="custom op 'demo::swish_nv' has no vjp"):
        AutodiffPass(wrt=("x",)).apply(Context(), g.module())


# --- compiled ----------------------------------------------------------------------------


def test_compiled_inference_without_vjp_matches_numpy(
    register: Callable[..., CustomOpDef],
) -> None:
    """A custom op without vjp compiles fine for inference (beside one with)."""
    register("demo::swish_c", swish_forward)
    register("demo::scaled_c", scaled_forward, vjp=scaled_vjp)
    g = Graph()
    x, w = g.input("x", (3, 4)), g.input("w", (4,))
    g.output(g.custom("demo::scaled_c", g.custom("demo::swish_c", x), w))
    compiled = qidao.compile(g)
    assert "tg.custom" not in compiled.ir("tg")
    a = RNG.normal(size=(3, 4)).astype(np.float32)
    b = RNG.normal(size=(4,)).astype(np.float32)
    (got,) = compiled(a, b)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(
        got, np.tanh(a64 * sigmoid(a64)) * b, rtol=1e-5, atol=1e-6
    )


def test_compiled_gradient_matches_numpy(register: Callable[..., CustomOpDef]) -> None:
    register("demo::swish_cg", swish_forward, vjp=swish_vjp)
    g = Graph()
    x = g.input("x", (8,))
    g.output(g.reduce_sum(g.custom("demo::swish_cg", x)))
    compiled = qidao.compile(g, grad=["x"])
    a = RNG.normal(size=(8,)).astype(np.float32)
    loss, grad = compiled(a)
    a64 = a.astype(np.float64)
    s = sigmoid(a64)
    np.testing.assert_allclose(loss, np.sum(a64 * s), rtol=1e-5)
    np.testing.assert_allclose(grad, s + a64 * s * (1 - s), rtol=1e-5, atol=1e-6)


# --- ONNX ---------------------------------------------------------------------------------


def _onnx_model(domain: str, op_type: str, **attrs: Any) -> Any:
    """``Relu(domain::op_type(x))`` on a float32 ``x`` of shape [2, 3]."""
    nodes = [
        helper.make_node(op_type, ["x"], ["y"], domain=domain, **attrs),
        helper.make_node("Relu", ["y"], ["z"]),
    ]
    info = helper.make_tensor_value_info
    graph = helper.make_graph(
        nodes,
        "custom",
        [info("x", TensorProto.FLOAT, [2, 3])],
        [info("z", TensorProto.FLOAT, [2, 3])],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)]
    return helper.make_model(graph, opset_imports=opsets)


def test_onnx_custom_domain_node(register: Callable[..., CustomOpDef]) -> None:
    register("qidao_test::swish", swish_forward)
    module = import_onnx(_onnx_model("qidao_test", "swish"))
    assert any(
        isinstance(o, CustomOp) and o.op_name.data == "qidao_test::swish"
        for o in module.walk()
    )
    ExpandCustomPass().apply(Context(), module)
    a = RNG.normal(size=(2, 3)).astype(np.float32)
    (got,) = evaluate_function(main(module), [a])
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(got, np.maximum(a64 * sigmoid(a64), 0), rtol=1e-6)


def test_onnx_unregistered_or_with_attributes(
    register: Callable[..., CustomOpDef],
) -> None:
    with pytest.raises(UnsupportedOpsError, match="qidao_test::unknown"):
        import_onnx(_onnx_model("qidao_test", "unknown"))
    register("qidao_test::swish_attr", swish_forward)
    with pytest.raises(
        OnnxImportError, match=r"takes no attributes, the node has \['beta'\]"
    ):
        import_onnx(_onnx_model("qidao_test", "swish_attr", beta=1.0))


# --- PyTorch -----------------------------------------------------------------------------


def test_torch_library_op_through_qidao_compile(
    register: Callable[..., CustomOpDef],
) -> None:
    torch = pytest.importorskip("torch", reason="the PyTorch frontend needs torch")
    from qidao.frontend.torch.backend import TorchCompiled

    name = "qidao_test::swish_t"
    if not hasattr(torch.ops.qidao_test, "swish_t"):
        # the schema spelled out: this module's annotations are strings
        @torch.library.custom_op(name, mutates_args=(), schema="(Tensor x) -> Tensor")  # type: ignore[untyped-decorator]
        def swish_t(x: Any) -> Any:
            return x * torch.sigmoid(x)

        @swish_t.register_fake  # type: ignore[untyped-decorator]
        def _(x: Any) -> Any:
            return torch.empty_like(x)

    register(name, swish_forward)

    module: Any = torch.nn.Module

    class Model(module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(3, 4)

        def forward(self, x: Any) -> Any:
            return torch.relu(torch.ops.qidao_test.swish_t(self.linear(x))) + 1.0

    torch.manual_seed(0)
    model = Model().eval()
    x = torch.randn(2, 3)
    compiled = qidao.compile(model, example_inputs=(x,), strict=True)
    assert isinstance(compiled, TorchCompiled) and compiled.compiled is not None
    assert "tg.custom" in compiled.compiled.ir("input")
    with torch.no_grad():
        np.testing.assert_allclose(
            compiled(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6
        )


def test_qidao_gradcheck_verifies_a_custom_vjp(
    register: Callable[..., CustomOpDef],
) -> None:
    """The public gradcheck (compiled, float64 central differences) passes the right
    vjp and names the input and element where a wrong one disagrees."""
    register("demo::swish_ok", swish_forward, vjp=swish_vjp)
    register("demo::swish_bad", swish_forward, vjp=wrong_swish_vjp)
    x = RNG.normal(size=(2, 3)).astype(np.float32)

    def model(name: str) -> Graph:
        g = Graph()
        g.output(g.reduce_sum(g.custom(name, g.input("x", (2, 3)))))
        return g

    assert qidao.gradcheck(model("demo::swish_ok"), [x], wrt=["x"])
    with pytest.raises(qidao.GradcheckError, match=r"'x'.*element"):
        qidao.gradcheck(model("demo::swish_bad"), [x], wrt=["x"])
