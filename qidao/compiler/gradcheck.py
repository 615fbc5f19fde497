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

Every argument is checked first (``check_arguments``): a wrong one is an
``ArgumentError`` (a ``TypeError`` and a ``ValueError`` too) naming it, its value
and what it takes.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr

from qidao.compiler.models import lift_for_grad, load_model, with_weights
from qidao.dialects.attributes import INPUT_NAMES_ATTR
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

    wrt = check_arguments(inputs, wrt, eps, rtol, atol, elements, seed)
    from qidao.frontend.torch.detect import is_torch_model

    if is_torch_model(model):
        raise ArgumentError(
            "gradcheck checks the gradients qidao computes (qidao.compile(model, "
            "grad=...)), which take an ONNX, .mlir or builder model; a PyTorch "
            "model's gradients are PyTorch's: check them with "
            "torch.autograd.gradcheck, or export the module with torch.onnx.export"
        )
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


def check_arguments(
    inputs: object,
    wrt: object,
    eps: object,
    rtol: object,
    atol: object,
    elements: object,
    seed: object,
) -> list[str]:
    """Check :func:`gradcheck`'s arguments; returns ``wrt`` as a list of names.
    Raises ``ArgumentError`` naming the first wrong one."""
    if isinstance(inputs, str | bytes | np.ndarray) or not isinstance(inputs, Sequence):
        raise ArgumentError(
            f"gradcheck: inputs must be a list of the model's inputs (arrays), in "
            f"order, got {_short(inputs)}"
        )
    for k, a in enumerate(inputs):
        kind = np.asarray(a).dtype.kind if _is_array_like(a) else None
        if kind not in ("f", "i", "u", "b"):
            raise ArgumentError(
                f"gradcheck: inputs[{k}] must be a NumPy array (or array-like) of "
                f"numbers, got {_short(a)}"
            )
    names = [wrt] if isinstance(wrt, str) else wrt
    if (
        not isinstance(names, list | tuple)
        or not names
        or not all(isinstance(n, str) for n in names)
        or len(set(names)) != len(names)
    ):
        raise ArgumentError(
            "gradcheck: wrt must name the inputs (or ONNX initializers) to check "
            f"the gradient of: a non-empty list of distinct names, got {wrt!r}"
        )
    _check_number("eps", eps, positive=True, what=" (the central differences' step)")
    _check_number("rtol", rtol)
    _check_number("atol", atol)
    if elements is not None and (
        not isinstance(elements, numbers.Integral)
        or isinstance(elements, bool)
        or elements < 1
    ):
        raise ArgumentError(
            f"gradcheck: elements={elements!r}: expected None (every element) or a "
            "positive integer (that many random elements of each gradient)"
        )
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:
        raise ArgumentError(
            f"gradcheck: seed={seed!r}: expected an integer >= 0 (it picks the "
            "random elements=)"
        )
    return list(names)


def _check_number(
    name: str, value: object, positive: bool = False, what: str = ""
) -> None:
    """``value``: a real number (not a bool), finite, >= 0 (> 0 if ``positive``)."""
    if (
        not isinstance(value, numbers.Real)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value < 0
        or (positive and value == 0)
    ):
        bound = "> 0" if positive else ">= 0"
        raise ArgumentError(
            f"gradcheck: {name}={value!r}: expected a finite number {bound}{what}"
        )


def _is_array_like(value: object) -> bool:
    try:
        np.asarray(value)
    except (TypeError, ValueError):  # ragged lists
        return False
    return True


def _short(value: object) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _input_names(module: ModuleOp) -> list[str]:
    fn = next(o for o in module.ops if isinstance(o, func.FuncOp))
    names = fn.attributes.get(INPUT_NAMES_ATTR)
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
