"""Converters for ``nll_loss`` (``F.cross_entropy`` with class indices), forward
and backward, each converted whole, and for ``cross_entropy_loss`` itself.

``F.cross_entropy(logits, target)`` is ``log_softmax`` then ``nll_loss_forward``
(``nll_loss2d_forward`` for ``[N, C, H, W]`` logits); its backward is
``nll_loss_backward`` (``nll_loss2d_backward``). PyTorch's decompositions of these
``gather`` with a ``where``-cleaned int64 target and ``scatter`` the gradient: int64
arithmetic and a scatter that tg does not compute. So ``training`` keeps them
out of its decomposition table and they come here, built from a one-hot mask::

    hit[i, c]  = (target[i] == c) and c != ignore_index     tg.equal against 0..C-1
    loss[i]    = -sum_c where(hit, x, 0)[i, c] · w[c]        reduction='none'
    total      = sum_i,c hit[i, c] · w[c]                    the counted weight
    output     = sum_i loss[i] (/ total for 'mean')
    dx[i, c]   = where(hit, -g[i] · w[c] (/ total), 0)       the backward

The class axis is 1 (0 for a 1-D input without batch), ``w`` is 1 without a class
``weight``, and a row whose target is ``ignore_index`` has no hit, so it adds
nothing to the loss nor to ``total``, and gets a zero gradient. ``where`` rather
than a product with the mask keeps a ``-inf`` log-probability of another class
from making a NaN. The forward's second result is ``total`` (0 for 'none' with a
batch, as PyTorch's decomposition returns), which the backward reads for 'mean'.

Inference graphs (torch.export, the frozen no-grad graph of ``torch.compile``)
keep ``cross_entropy_loss`` whole: it is ``log_softmax`` then the forward above,
for class-index targets without ``label_smoothing`` (the others are refused with
that reason). Training graphs never hold it: AOTAutograd decomposes it into
``_log_softmax`` and ``nll_loss_forward``, and there ``label_smoothing`` adds ops
on int64 and bool tensors (a count of the rows kept) that strict mode names, while
a probability target is float32 ops only and converts.

A target outside ``[0, C)`` that is not ``ignore_index`` is an error in PyTorch;
here its row has no hit (loss 0, counted 0). The mask costs ``N × C`` compares:
nothing next to the matmul that made the logits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from qidao.frontend.builder import Value
from qidao.frontend.errors import GraphError
from qidao.frontend.torch.ops import CONVERTERS, Arg, FxValues, converter

aten = torch.ops.aten

NONE, MEAN, SUM = 0, 1, 2
"""ATen's ``reduction`` codes (``torch.nn._reduction``)."""


def _check_reduction(reduction: Any) -> str | None:
    if reduction not in (NONE, MEAN, SUM):
        return f"reduction={reduction} (0 'none', 1 'mean' or 2 'sum' expected)"
    return None


def _check_forward(*args: Any, **kwargs: Any) -> str | None:
    return _check_reduction(kwargs.get("reduction", args[3] if len(args) > 3 else 1))


def _check_backward(*args: Any, **kwargs: Any) -> str | None:
    return _check_reduction(kwargs.get("reduction", args[4] if len(args) > 4 else 1))


def _class_axis(x: Value) -> int:
    return 0 if x.rank < 2 else 1


def _along_classes(x: Value, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``values`` (one per class) shaped to broadcast along ``x``'s class axis."""
    shape = [1] * x.rank
    shape[_class_axis(x)] = -1
    return values.reshape(shape)


def _hits(cv: FxValues, x: Value, target: Value, ignore_index: int) -> Value:
    """The bool one-hot mask of ``target`` in ``x``'s shape, with the column of
    ``ignore_index`` (when it names a class) cleared."""
    axis = _class_axis(x)
    classes = x.shape[axis]
    rows = list(x.shape)
    rows[axis] = 1
    if math.prod(target.shape) != math.prod(rows):
        raise GraphError(
            f"target {list(target.shape)} does not fit input {list(x.shape)}"
        )
    t = cv.g.reshape(target, rows)  # [N] -> [N, 1], [N, H, W] -> [N, 1, H, W]
    labels = _along_classes(x, np.arange(classes, dtype=target.dtype))
    hit = cv.g.equal(t, labels)
    if 0 <= ignore_index < classes:
        keep = _along_classes(x, np.arange(classes) != ignore_index)
        hit = cv.g.logical_and(hit, keep)
    return hit


def _class_weight(cv: FxValues, x: Value, weight: Arg | None) -> Value | None:
    """The class ``weight`` shaped along ``x``'s class axis, or None."""
    if weight is None:
        return None
    w = cv.tensor(weight)
    if w.shape != (x.shape[_class_axis(x)],):
        raise GraphError(
            f"weight {list(w.shape)} must hold one value per class of input "
            f"{list(x.shape)}"
        )
    shape = [1] * x.rank
    shape[_class_axis(x)] = w.shape[0]
    return cv.g.reshape(w, shape)


@converter(
    aten.nll_loss_forward.default,
    aten.nll_loss2d_forward.default,
    check=_check_forward,
    index_args=(1,),
)
def _nll_loss_forward(
    cv: FxValues,
    self: Arg,
    target: Arg,
    weight: Arg | None,
    reduction: int,
    ignore_index: int,
) -> tuple[Value, Value]:
    """(output, total_weight); see the module docstring."""
    x, t = cv.tensor(self), cv.tensor(target)
    hit = _hits(cv, x, t, ignore_index)
    w = _class_weight(cv, x, weight)
    picked = cv.g.where(hit, x, 0.0)  # x[i, t_i] at the target, 0 elsewhere
    if w is not None:
        picked = picked * w
    loss = cv.g.neg(cv.g.reduce_sum(picked, _class_axis(x)))
    if reduction == NONE and x.rank > 1:  # total_weight 0, as PyTorch's decomposition
        return loss, cv.g.constant(np.array(0.0, np.float32))
    counted = cv.g.cast(hit, "float32")
    if w is not None:
        counted = counted * w
    total = cv.g.reduce_sum(counted)
    if reduction != NONE and loss.rank:
        loss = cv.g.reduce_sum(loss)
    if reduction == MEAN:
        loss = loss / total
    return loss, total


@converter(
    aten.nll_loss_backward.default,
    aten.nll_loss2d_backward.default,
    check=_check_backward,
    index_args=(2,),
)
def _nll_loss_backward(
    cv: FxValues,
    grad_output: Arg,
    self: Arg,
    target: Arg,
    weight: Arg | None,
    reduction: int,
    ignore_index: int,
    total_weight: Arg,
) -> Value:
    """The gradient of the loss with respect to ``self``: ``-g · w[c] (/ total)``
    at each row's target, 0 elsewhere (see the module docstring)."""
    x, t = cv.tensor(self), cv.tensor(target)
    hit = _hits(cv, x, t, ignore_index)
    scale = cv.g.neg(cv.tensor(grad_output))
    if reduction == MEAN:
        scale = scale / cv.tensor(total_weight)
    if reduction == NONE and x.rank > 1:  # one per row, spread along the classes
        rows = list(x.shape)
        rows[_class_axis(x)] = 1
        scale = cv.g.reshape(scale, rows)
    elif scale.rank:  # a one-element gradient of a scalar loss
        scale = cv.g.reshape(scale, ())
    w = _class_weight(cv, x, weight)
    if w is not None:
        scale = scale * w
    return cv.g.where(hit, scale, 0.0)  # broadcast to x's shape


def _check_cross_entropy(*args: Any, **kwargs: Any) -> str | None:
    smoothing = kwargs.get("label_smoothing", args[5] if len(args) > 5 else 0.0)
    if smoothing:
        return f"label_smoothing={smoothing} is not supported"
    target = kwargs.get("target", args[1] if len(args) > 1 else None)
    value = getattr(target, "meta", {}).get("val")
    if isinstance(value, torch.Tensor) and value.dtype.is_floating_point:
        return "class probabilities as target are not supported (class indices only)"
    return _check_reduction(kwargs.get("reduction", args[3] if len(args) > 3 else 1))


@converter(aten.cross_entropy_loss.default, check=_check_cross_entropy, index_args=(1,))
def _cross_entropy_loss(
    cv: FxValues,
    self: Arg,
    target: Arg,
    weight: Arg | None = None,
    reduction: int = MEAN,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
) -> Value:
    """``F.cross_entropy`` as inference graphs keep it (torch.export and the
    frozen no-grad graph do not decompose it; training's AOTAutograd does):
    ``log_softmax`` over the classes, then the forward above. Class-index
    targets only (a probability target is float32, refused as an index)."""
    x = cv.tensor(self)
    log_softmax = CONVERTERS[aten._log_softmax.default].fn
    logp = log_softmax(cv, x, _class_axis(x))
    loss, _ = _nll_loss_forward(cv, logp, target, weight, reduction, ignore_index)
    return loss
