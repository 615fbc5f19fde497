"""PyTorch custom ops (``torch.library.custom_op``) as qidao custom ops.

```python
@torch.library.custom_op("demo::swish", mutates_args=())
def swish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)

@swish.register_fake                 # torch.export traces the op through this
def _(x):
    return torch.empty_like(x)

@qidao.custom_op("demo::swish")      # the same name, in qidao: its forward in tg ops
def qd_swish(g, x):
    return x * g.sigmoid(x)

qidao.compile(model, example_inputs=(x,))   # the FX node -> one tg.custom
```

``torch.export`` keeps a ``torch.library`` op as one FX node whose target is its
overload (``torch.ops.demo.swish.default``). ``converter_for`` gives such a target,
when qidao has a custom op of the same ``namespace::name``, a converter that builds
it with ``Graph.custom``; ``importer.py`` asks it when the ATen table has no entry. Every
argument must be a tensor (a node of the graph): a qidao custom op has tensor
operands only, so a Python number or list argument makes the node unsupported (it
runs in PyTorch, or strict mode lists it). A PyTorch op qidao has not registered
stays unsupported as before.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
import torch.fx

from qidao.frontend.builder import Value
from qidao.frontend.custom import lookup
from qidao.frontend.torch.ops import Arg, Converter, FxValues


def custom_name(target: Any) -> str | None:
    """``namespace::name`` of a ``torch.library`` op overload (not ATen's), or
    None for any other target."""
    if not isinstance(target, torch._ops.OpOverload) or target.namespace == "aten":
        return None
    return str(target._schema.name)


def converter_for(target: Any) -> Converter | None:
    """The converter of an FX target that is a qidao custom op, or None."""
    name = custom_name(target)
    if name is None or lookup(name) is None:
        return None
    return Converter(partial(_convert, name), check=_check)


def _check(*args: Any, **kwargs: Any) -> str | None:
    if kwargs or not all(isinstance(a, torch.fx.Node) for a in args):
        return "a qidao custom op takes tensor arguments only, passed positionally"
    return None


def _convert(name: str, cv: FxValues, *args: Arg) -> Value | tuple[Value, ...]:
    """The op's result, or a tuple of them (read by ``getitem`` nodes)."""
    results = cv.g.custom_results(name, *(cv.tensor(a) for a in args))
    return results[0] if len(results) == 1 else results
