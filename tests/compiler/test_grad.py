"""``qidao.compile(model, grad=[...])`` and ``qidao.gradcheck``: compiled gradients
against PyTorch's autograd and float64 central differences."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.dialects.tg.elementwise import ExpOp
from qidao.dialects.tg.grad import RULES
from qidao.frontend.builder import Graph
from qidao.frontend.errors import OnnxImportError
from qidao.passes.graph.autodiff import AutodiffError

RNG = np.random.default_rng(3)


def _book() -> Graph:
    g = Graph("main")
    x, w, b = (g.input(n, (1,)) for n in "xwb")
    g.output(g.relu(x * w + b))
    return g


def test_the_books_gradients() -> None:
    """y = relu(x w + b) at x = 2, w = 3, b = 1: dy/dx = 3, dy/dw = 2, dy/db = 1."""
    f = qidao.compile(_book(), grad=["x", "w", "b"])
    y, dx, dw, db = f(*(np.array([v], np.float32) for v in (2.0, 3.0, 1.0)))
    assert (y[0], dx[0], dw[0], db[0]) == (7.0, 3.0, 2.0, 1.0)


def test_the_books_gradients_of_scalars() -> None:
    """The form of docs/training.md: rank-0 inputs, called with NumPy scalars (0-d arrays of the
    input's dtype; a float64 scalar for a float32 input is refused)."""
    g = Graph("main")
    x, w, b = (g.input(n, ()) for n in "xwb")
    g.output(g.relu(x * w + b))
    f = qidao.compile(g, grad=["x", "w", "b"])
    y, dx, dw, db = f(np.float32(2), np.float32(3), np.float32(1))
    assert (y, dx, dw, db) == (7.0, 3.0, 2.0, 1.0)
    assert y.shape == () and y.dtype == np.float32
    with pytest.raises(qidao.ArgumentError, match="got dtype float64"):
        f(np.float64(2), np.float32(3), np.float32(1))


@pytest.mark.parametrize("mode", ["graph", "eager"])
def test_mlp_gradients_match_torch(mode: str) -> None:
    """Cross-entropy of a two-layer MLP: every weight's gradient as autograd's."""
    n, d, h, c = 8, 6, 16, 5
    g = Graph("main")
    x, onehot = g.input("x", (n, d)), g.input("t", (n, c))
    w1, b1, w2 = g.input("w1", (d, h)), g.input("b1", (h,)), g.input("w2", (h, c))
    logits = g.tanh(x @ w1 + b1) @ w2
    logp = g.log(g.softmax(logits, -1))
    g.output(g.reduce_mean(-g.reduce_sum(logp * onehot, [1]), [0]))
    f = qidao.compile(g, grad=["w1", "b1", "w2"], mode=mode)
    arrays = {
        "x": RNG.standard_normal((n, d)),
        "t": np.eye(c)[RNG.integers(0, c, n)],
        "w1": RNG.standard_normal((d, h)) * 0.5,
        "b1": RNG.standard_normal(h) * 0.1,
        "w2": RNG.standard_normal((h, c)) * 0.5,
    }
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    loss, *grads = f(*arrays.values())
    ts = {k: torch.tensor(v, requires_grad=True) for k, v in arrays.items()}
    logits_t = torch.tanh(ts["x"] @ ts["w1"] + ts["b1"]) @ ts["w2"]
    ref = torch.nn.functional.cross_entropy(logits_t, ts["t"].argmax(1))
    ref.backward()
    np.testing.assert_allclose(loss, ref.item(), rtol=1e-5)
    for name, got in zip(["w1", "b1", "w2"], grads, strict=True):
        want = ts[name].grad
        assert want is not None
        np.testing.assert_allclose(
            got, want.numpy(), rtol=1e-4, atol=1e-6, err_msg=name
        )


def _torch_grad_of_sum(x: np.ndarray) -> np.ndarray:
    """d sum(x) / dx by ``torch.autograd``: the gradient when output 0 is ``x``."""
    t = torch.tensor(x, requires_grad=True)
    t.sum().backward()
    assert t.grad is not None
    return t.grad.numpy()


@pytest.mark.parametrize(
    "outputs", [["x"], ["x", "x"], ["x", "relu x"], ["x", "x w"]], ids=str
)
def test_output_that_is_the_input_has_the_gradient_of_its_sum(
    outputs: list[str],
) -> None:
    """Issue 29, F4: ``g.output(x)`` with ``grad=["x"]`` gave zeros (no op lies
    between x and output 0, so no vjp made its gradient), also when x is output
    twice or also feeds other outputs; w reaches output 0 nowhere: zeros."""
    x0, w0 = RNG.standard_normal((2, 3)).astype(np.float32)
    g = Graph("main")
    x, w = g.input("x", (3,)), g.input("w", (3,))
    made = {"x": x, "relu x": g.relu(x), "x w": x * w}
    g.output(*(made[name] for name in outputs))
    *ys, dx, dw = qidao.compile(g, grad=["x", "w"])(x0, w0)
    np.testing.assert_array_equal(ys[0], x0)
    np.testing.assert_array_equal(dx, _torch_grad_of_sum(x0))
    np.testing.assert_array_equal(dw, np.zeros_like(w0))


def _passthrough(outputs: list[str]) -> onnx.ModelProto:
    """An ONNX graph whose outputs (by name) are its inputs x and w, or y, an
    ``Identity`` of x."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "passthrough",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in "xw"],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(
    "outputs", [["x"], ["x", "x"], ["w", "x"], ["y", "x"]], ids=str
)
def test_onnx_output_that_is_an_input_has_the_gradient_of_its_sum(
    outputs: list[str],
) -> None:
    """F4 through the ONNX frontend: a graph whose output 0 is a graph input (or
    its ``Identity``, which the importer resolves to the input itself)."""
    arrays = dict(
        zip("xw", RNG.standard_normal((2, 3)).astype(np.float32), strict=True)
    )
    *_, dx, dw = qidao.compile(_passthrough(outputs), grad=["x", "w"])(*arrays.values())
    source = "w" if outputs[0] == "w" else "x"  # the input output 0 is
    grads = {"x": dx, "w": dw}
    np.testing.assert_array_equal(grads[source], _torch_grad_of_sum(arrays[source]))
    other = "x" if source == "w" else "w"
    np.testing.assert_array_equal(grads[other], np.zeros(3, np.float32))


def test_a_training_step_whose_loss_is_the_weight_itself() -> None:
    """F4 in the compiled training step: output 0 is the weight w, so each SGD step
    moves w by ``-lr * d sum(w) / dw``, as ``torch.optim.SGD`` does."""
    w0 = RNG.standard_normal(3).astype(np.float32)
    g = Graph("main")
    x, w = g.input("x", (3,)), g.input("w", (3,))
    g.output(w, x * w)
    step = qidao.compile(
        g, grad=["w"], optimizer=qidao.optim.SGD(lr=0.5), weights={"w": w0}
    )
    wt = torch.tensor(w0, requires_grad=True)
    reference = torch.optim.SGD([wt], lr=0.5)
    for _ in range(2):
        step(np.ones(3, np.float32))
        reference.zero_grad()
        wt.sum().backward()
        reference.step()
    np.testing.assert_allclose(
        step.parameters["w"],  # type: ignore[attr-defined]
        wt.detach().numpy(),
        rtol=1e-6,
    )


def test_torch_compile_of_a_function_returning_its_input() -> None:
    """F4's sibling in the PyTorch frontend: ``torch.compile`` of ``x -> (x,
    relu(x))`` (AOTAutograd's joint graph, compiled by qidao) gives x the gradient
    of the sum of output 0, which is x itself."""
    x0 = RNG.standard_normal(3).astype(np.float32)
    compiled = torch.compile(lambda t: (t, torch.relu(t)), backend="qidao")
    t = torch.tensor(x0, requires_grad=True)
    compiled(t)[0].sum().backward()
    assert t.grad is not None
    np.testing.assert_array_equal(t.grad.numpy(), _torch_grad_of_sum(x0))


def test_the_tg_stage_holds_forward_and_backward_after_graph_passes() -> None:
    f = qidao.compile(_book(), grad=["w", "b"])
    tg = f.ir("tg")
    assert 'qd.output_names = ["output0", "grad_w", "grad_b"]' in tg
    assert "tg.fused" in tg  # the backward's elementwise ops fused like any others
    assert f.stats["kernels"] <= 4


def _onnx_linear() -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"]),
        helper.make_node("Add", ["h", "B"], ["z"]),
        helper.make_node("Relu", ["z"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, w, b


def test_initializers_named_in_grad_are_held_not_folded(tmp_path: object) -> None:
    model, w, b = _onnx_linear()
    f = qidao.compile(model, grad=["W", "B"])
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    _, d_w, d_b = f(x)  # the weights are not arguments
    xt = torch.tensor(x)
    wt, bt = (torch.tensor(a, requires_grad=True) for a in (w, b))
    torch.relu(xt @ wt + bt).sum().backward()
    assert wt.grad is not None and bt.grad is not None
    np.testing.assert_allclose(d_w, wt.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(d_b, bt.grad.numpy(), rtol=1e-5)
    assert list(f.parameters) == ["W", "B"]  # type: ignore[attr-defined]
    np.testing.assert_array_equal(f.parameters["W"], w)  # type: ignore[attr-defined]
    with pytest.raises(qidao.ArgumentError, match="takes 1 input"):
        f(x, w)


def test_unknown_grad_names_are_listed() -> None:
    model, _, _ = _onnx_linear()
    with pytest.raises(
        OnnxImportError,
        match=r"neither graph inputs nor initializers.*\['x'\].*\['B', 'W'\]",
    ):
        qidao.compile(model, grad=["V"])
    with pytest.raises(
        AutodiffError,
        match="wrt names 'v', which is not an input; the inputs are x, w, b",
    ):
        qidao.compile(_book(), grad=["v"])
    with pytest.raises(TypeError, match="grad must be a list"):
        qidao.compile(_book(), grad=[1])


def test_gradcheck_passes_and_names_a_wrong_element() -> None:
    g = Graph("main")
    x, w = g.input("x", (3, 4)), g.input("w", (4, 2))
    g.output(g.exp(g.tanh(x @ w)) * g.sigmoid(x @ w))
    inputs = [RNG.standard_normal((3, 4)), RNG.standard_normal((4, 2))]
    assert qidao.gradcheck(g, inputs, wrt=["x", "w"])


@pytest.fixture
def wrong_exp_rule() -> Iterator[None]:
    """exp's vjp replaced by one that forgets to multiply by exp(x)."""
    right = RULES[ExpOp]
    RULES[ExpOp] = lambda e, op, g: [g]
    yield
    RULES[ExpOp] = right


def test_gradcheck_catches_a_wrong_vjp(wrong_exp_rule: None) -> None:
    g = Graph("main")
    x = g.input("x", (2, 3))
    g.output(g.exp(x))
    with pytest.raises(
        qidao.GradcheckError,
        match=r"with respect to 'x' disagrees at element \(0, 0\): compiled 1\.0",
    ):
        qidao.gradcheck(g, [RNG.standard_normal((2, 3))], wrt=["x"])
