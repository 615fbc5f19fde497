"""``tg.custom`` at the IR level: print/parse round trips, the verifier's rules, the
NumPy evaluator running the body, the vjp rule copying the grad region (against
NumPy's derivative) and its refusals, and ``expand-custom`` keeping the values.

The ops are written as MLIR text, so no registry is involved: everything a
``tg.custom`` means is in the IR (``qidao/dialects/tg/custom.py``)."""

from __future__ import annotations

from io import StringIO
from typing import Any

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func, FuncOp
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg import TG, CustomOp, CustomYieldOp, NegOp
from qidao.dialects.tg.numpy_eval import evaluate_function, has_reference
from qidao.dialects.tg.types import tensor_type
from qidao.passes.graph.autodiff import AutodiffError, AutodiffPass
from qidao.passes.graph.expand_custom import ExpandCustomPass

SWISH = """
func.func @main(%x: tensor<5xf64>) -> tensor<f64> attributes {qd.input_names = ["x"], qd.output_names = ["loss"]} {
  %y = tg.custom "demo::swish" %x : (tensor<5xf64>) -> tensor<5xf64> {
  ^bb0(%a: tensor<5xf64>):
    %s = tg.sigmoid %a : tensor<5xf64> -> tensor<5xf64>
    %r = tg.mul %a, %s : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>
    tg.custom_yield %r : tensor<5xf64>
  } grad {
  ^bb0(%a: tensor<5xf64>, %r: tensor<5xf64>, %dr: tensor<5xf64>):
    %s = tg.sigmoid %a : tensor<5xf64> -> tensor<5xf64>
    %one = tg.constant dense<1.000000e+00> : tensor<f64>
    %t = tg.sub %one, %s : (tensor<f64>, tensor<5xf64>) -> tensor<5xf64>
    %u = tg.mul %r, %t : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>
    %d = tg.add %s, %u : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>
    %da = tg.mul %dr, %d : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>
    tg.custom_yield %da : tensor<5xf64>
  }
  %w = tg.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf64>
  %z = tg.mul %y, %w : (tensor<5xf64>, tensor<5xf64>) -> tensor<5xf64>
  %loss = tg.reduce_sum %z axes = [0] : tensor<5xf64> -> tensor<f64>
  func.return %loss : tensor<f64>
}
"""
"""``sum(w * swish(x))``: its gradient is ``w * swish'(x)``."""

NO_VJP = (
    SWISH[: SWISH.index("  } grad {")]
    + "  } grad {\n  }\n"
    + SWISH[SWISH.index("  %w = ") :]
)


def context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, TG):
        ctx.load_dialect(dialect)
    return ctx


def parse(text: str) -> ModuleOp:
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def show(module: ModuleOp, generic: bool = False) -> str:
    stream = StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(module)
    return stream.getvalue()


def main(module: ModuleOp) -> FuncOp:
    return next(o for o in module.ops if isinstance(o, FuncOp))


def swish(x: np.ndarray) -> Any:
    return x / (1.0 + np.exp(-x))


def swish_grad(x: np.ndarray) -> Any:
    s = 1.0 / (1.0 + np.exp(-x))
    return s + x * s * (1.0 - s)


X = np.linspace(-2.0, 2.0, 5)
W = np.arange(1.0, 6.0)


# --- printing, parsing, verifying ---------------------------------------------------


@pytest.mark.parametrize("text", [SWISH, NO_VJP], ids=["vjp", "no_vjp"])
def test_round_trip_custom_and_generic(text: str) -> None:
    module = parse(text)
    printed = show(module)
    assert show(parse(printed)) == printed
    assert show(parse(show(module, generic=True))) == printed
    op = next(o for o in module.walk() if isinstance(o, CustomOp))
    assert op.op_name.data == "demo::swish"
    assert op.has_vjp() == (text is SWISH)


def _identity(arg_types: list, result_types: list) -> CustomOp:  # type: ignore[type-arg]
    """A ``tg.custom`` on fresh values whose body yields its first argument."""
    body = Block(arg_types=arg_types)
    body.add_op(CustomYieldOp(body.args[0]))
    outer = Block(arg_types=arg_types)
    return CustomOp("demo::id", list(outer.args), result_types, Region(body))


def test_verifier_result_types_must_be_the_body_yield() -> None:
    t4, t3 = tensor_type((4,)), tensor_type((3,))
    _identity([t4], [t4]).verify()
    with pytest.raises(VerifyException, match=r"the body yields \(tensor<4xf32>\) "):
        _identity([t4], [t3]).verify()


def _with_grad(grad_args: list, grads: int) -> CustomOp:  # type: ignore[type-arg]
    t4 = tensor_type((4,))
    grad = Block(arg_types=grad_args)
    neg = NegOp(grad.args[-1])
    grad.add_ops([neg, CustomYieldOp(*([neg.result] * grads))])
    op = _identity([t4], [t4])
    op.grad.add_block(grad)
    return op


def test_verifier_grad_region() -> None:
    t4 = tensor_type((4,))
    _with_grad([t4, t4, t4], 1).verify()
    with pytest.raises(
        VerifyException, match=r"the grad yields .* operands \(one gradient each\)"
    ):
        _with_grad([t4, t4, t4], 2).verify()
    with pytest.raises(VerifyException, match="the grad arguments"):
        _with_grad([t4, t4], 1).verify()


def test_verifier_grad_yield_types() -> None:
    text = SWISH.replace(
        "    tg.custom_yield %da : tensor<5xf64>",
        "    %c = tg.cast %da : tensor<5xf64> -> tensor<5xf32>\n"
        "    tg.custom_yield %c : tensor<5xf32>",
    )
    with pytest.raises(VerifyException, match=r"the grad yields \(tensor<5xf32>\)"):
        parse(text)


# --- evaluation, gradient, expansion ----------------------------------------------


def test_numpy_eval_runs_the_body() -> None:
    module = parse(SWISH)
    op = next(o for o in module.walk() if isinstance(o, CustomOp))
    assert has_reference(op)
    (loss,) = evaluate_function(main(module), [X])
    np.testing.assert_allclose(loss, np.sum(W * swish(X)), rtol=1e-12)


def test_vjp_rule_copies_the_grad_region() -> None:
    module = parse(SWISH)
    AutodiffPass(wrt=("x",)).apply(Context(), module)
    module.verify()
    loss, grad = evaluate_function(main(module), [X])
    np.testing.assert_allclose(loss, np.sum(W * swish(X)), rtol=1e-12)
    np.testing.assert_allclose(grad, W * swish_grad(X), rtol=1e-12)
    assert sum(isinstance(o, CustomOp) for o in module.walk()) == 1  # only the forward


def test_no_vjp_is_a_clear_error() -> None:
    module = parse(NO_VJP)
    with pytest.raises(AutodiffError, match="custom op 'demo::swish' has no vjp"):
        AutodiffPass(wrt=("x",)).apply(Context(), module)


@pytest.mark.parametrize("result", [0, 1])
def test_several_results_are_refused_for_gradients(result: int) -> None:
    text = """
func.func @main(%x: tensor<3xf64>) -> tensor<3xf64> {
  %y:2 = tg.custom "demo::pair" %x : (tensor<3xf64>) -> tensor<3xf64>, tensor<3xf64> {
  ^bb0(%a: tensor<3xf64>):
    %n = tg.neg %a : tensor<3xf64> -> tensor<3xf64>
    tg.custom_yield %n, %a : tensor<3xf64>, tensor<3xf64>
  } grad {
  ^bb0(%a: tensor<3xf64>, %r0: tensor<3xf64>, %r1: tensor<3xf64>, %d0: tensor<3xf64>, %d1: tensor<3xf64>):
    %n = tg.neg %d0 : tensor<3xf64> -> tensor<3xf64>
    %s = tg.add %n, %d1 : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    tg.custom_yield %s : tensor<3xf64>
  }
  func.return %y#RESULT : tensor<3xf64>
}
""".replace("RESULT", str(result))
    module = parse(text)
    with pytest.raises(AutodiffError, match="has 2 results; gradients flow through"):
        AutodiffPass(wrt=("x",)).apply(Context(), module)


def test_expand_custom_keeps_values_and_gradients() -> None:
    module = parse(SWISH)
    AutodiffPass(wrt=("x",)).apply(Context(), module)
    before = evaluate_function(main(module), [X])
    ExpandCustomPass().apply(Context(), module)
    module.verify()
    assert not any(isinstance(o, CustomOp | CustomYieldOp) for o in module.walk())
    after = evaluate_function(main(module), [X])
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
