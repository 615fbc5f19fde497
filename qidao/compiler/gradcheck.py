"""``qidao.gradcheck``: the compiled gradient against float64 central differences.

```python
qidao.gradcheck(model, [x, w, b], wrt=["w", "b"])   # True, or GradcheckError
```

The model is widened to f64 (the ``widen-floats`` pass: central differences of a
float32 program measure its rounding, not its derivative, which is why
``torch.autograd.gradcheck`` asks for doubles too) and compiled with ``grad=wrt``;
its gradient of ``sum(output 0)`` is compared, element by element, with
``(f(x + eps) - f(x - eps)) / 2 eps`` of the same widened graph run by the NumPy
evaluator (``qidao.dialects.tg.numpy_eval``, an independent implementation of every
op). A disagreement raises :class:`qidao.GradcheckError` naming the input, the
element and both values; ``elements=n`` checks n random elements of each input
instead of all of them (a large weight takes 2 evaluations per element).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr

from qidao.compiler.models import lift_for_grad, load_model, with_weights
from qidao.dialects.tg.numpy_eval import evaluate_function
from qidao.errors import ArgumentError, GradcheckError
from qidao.passes.graph.widen_floats import WidenFloatsPass

Array = np.ndarray[Any, Any]


def gradcheck(
    model: Any,
    inputs: Sequence[Any],
    wrt: Sequence[str],
    *,
    eps: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-8,
    elements: int | None = None,
    seed: int = 0,
    weights: Any = None,
) -> bool:
    """Check ``qidao.compile(model, grad=wrt)``'s gradients of ``sum(output 0)``
    against central differences, in float64; True, or raise ``GradcheckError``.

    ``inputs``: the model's inputs in order (an ONNX initializer named in ``wrt``
    keeps the model's value and is not given). ``elements``: check that many random
    elements of each gradient (``seed``) instead of all."""
    from qidao.compiler.compile import compile

    wrt = [wrt] if isinstance(wrt, str) else list(wrt)
    if weights is not None:
        model = with_weights(model, weights)
    model, held = lift_for_grad(model, wrt)
    module = load_model(model)
    WidenFloatsPass().apply(Context(), module)
    names = _input_names(module)
    args = [_widened(np.asarray(a)) for a in inputs] + [
        _widened(v) for v in held.values()
    ]
    if len(args) != len(names):
        raise ArgumentError(
            f"gradcheck: the model takes {len(names) - len(held)} input(s) "
            f"({', '.join(n for n in names if n not in held)}), got {len(inputs)}"
        )
    compiled = compile(module, grad=wrt)
    analytic = compiled(*args)[-len(wrt) :]
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    rng = np.random.default_rng(seed)
    for name, got in zip(wrt, analytic, strict=True):
        k = names.index(name)
        flat_indices = np.arange(args[k].size)
        if elements is not None and elements < args[k].size:
            flat_indices = rng.choice(args[k].size, elements, replace=False)
        for i in flat_indices:
            want = _central_difference(fn, args, k, int(i), eps)
            have = float(np.asarray(got).reshape(-1)[i])
            if not abs(have - want) <= atol + rtol * abs(want):
                where = np.unravel_index(int(i), args[k].shape)
                raise GradcheckError(
                    f"gradcheck: the gradient of sum(output 0) with respect to "
                    f"'{name}' disagrees at element {tuple(int(j) for j in where)}: "
                    f"compiled {have!r}, central differences {want!r} (eps={eps}, "
                    f"|difference| {abs(have - want):.3g} > atol + rtol*|numeric| = "
                    f"{atol + rtol * abs(want):.3g})"
                )
    return True


def _input_names(module: ModuleOp) -> list[str]:
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    names = fn.attributes.get("qd.input_names")
    if isinstance(names, ArrayAttr):
        return [n.data for n in names.data if isinstance(n, StringAttr)]
    return [a.name_hint or f"input{i}" for i, a in enumerate(fn.body.blocks[0].args)]


def _widened(a: Array) -> Array:
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def _central_difference(
    fn: func.FuncOp, args: list[Array], k: int, i: int, eps: float
) -> float:
    point = [a.copy() if j == k else a for j, a in enumerate(args)]
    flat = point[k].reshape(-1)
    old = flat[i]
    flat[i] = old + eps
    up = float(np.sum(evaluate_function(fn, point)[0]))
    flat[i] = old - eps
    down = float(np.sum(evaluate_function(fn, point)[0]))
    return (up - down) / (2 * eps)
