"""The oracle of the vjp rules: float64 central differences of the NumPy evaluator.

``check_vjp(build, inputs)`` builds a graph with ``build(g, *values)`` (a builder
``Graph`` and one input ``Value`` per array of ``inputs``, all float64 unless an
array says otherwise), differentiates ``sum(w * output)`` for a fixed random ``w``
(so that a wrong but symmetric gradient cannot pass) with the ``autodiff`` pass,
evaluates forward and backward with ``qidao.dialects.tg.numpy_eval`` and compares
each gradient with central differences of the forward, element by element. No JIT:
the rules are checked in milliseconds; ``tests/compiler/test_grad.py`` compiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph, Value
from qidao.passes.graph.autodiff import AutodiffPass

Build = Callable[..., Value]


def weighted_module(
    build: Build, inputs: Sequence[np.ndarray], seed: int = 0
) -> tuple[ModuleOp, list[str]]:
    """``sum(w * build(...))`` as a module, its inputs named ``in0, in1, ...``."""
    g = Graph("main")
    names = [f"in{k}" for k in range(len(inputs))]
    values = [
        g.input(n, a.shape, a.dtype.name) for n, a in zip(names, inputs, strict=True)
    ]
    out = build(g, *values)
    w = np.random.default_rng(seed).uniform(0.5, 1.5, out.shape).astype(out.dtype)
    g.output(
        g.reduce_sum(out * g.constant(w, dtype=out.dtype), list(range(out.rank)))
        if out.rank
        else out * float(w)
    )
    return g.module(), names


def _main(module: ModuleOp) -> func.FuncOp:
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    return fn


def gradients(
    build: Build, inputs: Sequence[np.ndarray], wrt: Sequence[int]
) -> list[np.ndarray]:
    """The gradients of ``sum(w * output)`` w.r.t. ``inputs[k]`` for ``k`` in ``wrt``,
    by the autodiff pass and the NumPy evaluator."""
    module, names = weighted_module(build, inputs)
    AutodiffPass(wrt=tuple(names[k] for k in wrt)).apply(Context(), module)
    module.verify()
    results = evaluate_function(_main(module), list(inputs))
    return results[1:]


def numeric(
    build: Build, inputs: Sequence[np.ndarray], k: int, eps: float = 1e-6
) -> np.ndarray:
    """Central differences of ``sum(w * output)`` w.r.t. ``inputs[k]``."""
    module, _ = weighted_module(build, inputs)
    fn = _main(module)
    base = [np.array(a, copy=True) for a in inputs]
    grad = np.zeros_like(base[k], dtype=np.float64)
    flat = base[k].reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        up = float(evaluate_function(fn, base)[0])
        flat[i] = old - eps
        down = float(evaluate_function(fn, base)[0])
        flat[i] = old
        grad.reshape(-1)[i] = (up - down) / (2 * eps)
    return grad


def check_vjp(
    build: Build,
    inputs: Sequence[Any],
    wrt: Sequence[int] | None = None,
    rtol: float = 1e-5,
    atol: float = 1e-7,
) -> None:
    """Assert that the autodiff gradients of ``build`` match central differences
    for every float input (or those in ``wrt``)."""
    arrays = [np.asarray(a) for a in inputs]
    if wrt is None:
        wrt = [k for k, a in enumerate(arrays) if a.dtype.kind == "f"]
    got = gradients(build, arrays, wrt)
    for k, g in zip(wrt, got, strict=True):
        assert g.shape == arrays[k].shape, f"input {k}: gradient shape {g.shape}"
        want = numeric(build, arrays, k)
        np.testing.assert_allclose(
            g, want, rtol=rtol, atol=atol, err_msg=f"gradient of input {k}"
        )
