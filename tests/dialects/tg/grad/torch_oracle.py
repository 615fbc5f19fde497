"""The second oracle of the vjp rules: ``torch.autograd`` in float64.

``check_against_torch(build, reference, inputs)`` differentiates ``sum(w * output)``
(a fixed random ``w``) twice: with the ``autodiff`` pass and the NumPy evaluator on
the graph that ``build(g, *values)`` makes, and with ``torch.autograd`` on
``reference(*tensors)``; the gradients of every float input (or of those named in
``wrt``) must agree. Where a
derivative is not defined (max-pool ties), this is the check that the rule picks
PyTorch's answer, which central differences cannot tell.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from xdsl.context import Context
from xdsl.dialects import func

from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.frontend.builder import Graph, Value
from qidao.passes.graph.autodiff import AutodiffPass


def ours(
    build: Callable[..., Value],
    inputs: Sequence[np.ndarray],
    w: np.ndarray,
    wrt: Sequence[int],
) -> list[np.ndarray]:
    """The gradients of ``sum(w * build(...))`` w.r.t. ``inputs[k]``, ``k`` in
    ``wrt``."""
    g = Graph("main")
    names = [f"in{k}" for k in range(len(inputs))]
    values = [
        g.input(n, a.shape, a.dtype.name) for n, a in zip(names, inputs, strict=True)
    ]
    out = build(g, *values)
    weighted = out * g.constant(w, dtype=out.dtype)
    g.output(g.reduce_sum(weighted, list(range(out.rank))) if out.rank else weighted)
    module = g.module()
    AutodiffPass(wrt=tuple(names[k] for k in wrt)).apply(Context(), module)
    module.verify()
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    return evaluate_function(fn, list(inputs))[1:]


def theirs(
    reference: Callable[..., torch.Tensor],
    inputs: Sequence[np.ndarray],
    w: np.ndarray,
    wrt: Sequence[int],
) -> list[np.ndarray]:
    """The gradients of ``sum(w * reference(...))`` by ``torch.autograd``."""
    tensors = [torch.tensor(a, requires_grad=k in wrt) for k, a in enumerate(inputs)]
    (reference(*tensors) * torch.tensor(w)).sum().backward()
    grads = [tensors[k].grad for k in wrt]
    return [
        np.zeros_like(inputs[k]) if t is None else t.numpy()
        for k, t in zip(wrt, grads, strict=True)
    ]


def check_against_torch(
    build: Callable[..., Value],
    reference: Callable[..., torch.Tensor],
    inputs: Sequence[np.ndarray],
    out_shape: Sequence[int],
    wrt: Sequence[int] | None = None,
    seed: int = 0,
    rtol: float = 1e-10,
) -> None:
    """Assert that our gradients of the float inputs (or those in ``wrt``) match
    PyTorch's; ``out_shape`` is the output's shape."""
    if wrt is None:
        wrt = [k for k, a in enumerate(inputs) if a.dtype.kind == "f"]
    w = np.random.default_rng(seed).uniform(0.5, 1.5, tuple(out_shape))
    got, want = ours(build, inputs, w, wrt), theirs(reference, inputs, w, wrt)
    for k, a, b in zip(wrt, got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12, err_msg=f"input {k}")
