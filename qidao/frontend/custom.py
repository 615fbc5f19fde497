"""User-defined operators: a name, a forward written with the builder, an optional vjp.

```python
import qidao
from qidao.frontend.builder import Graph

def swish_vjp(g, x, y, dy):          # builder Values: inputs, outputs, output grads
    s = g.sigmoid(x)
    return dy * (s + x * s * (1.0 - s))

@qidao.custom_op("demo::swish", vjp=swish_vjp)
def swish(g, x):                     # g: a builder Graph, x: a builder Value
    return x * g.sigmoid(x)

g = Graph("main")
x = g.input("x", (4, 8))
y = swish(x)                         # or g.custom("demo::swish", x): one tg.custom
                                     # (g.custom_results: a tuple, several results)
g.output(g.reduce_sum(y))
f = qidao.compile(g, grad=["x"])     # the gradient runs swish_vjp's ops
```

The same registered name is picked up by the other frontends:

- ONNX: a node of domain ``demo`` and op type ``swish`` imports as the op (an
  unregistered custom-domain node stays an ``UnsupportedOpsError``);
- PyTorch: ``torch.library.custom_op("demo::swish", mutates_args=())`` (with a
  ``register_fake`` so that ``torch.export`` can trace it) imports as the op from an
  FX graph when qidao has ``demo::swish`` registered (``torch/custom.py``).

``custom_op(name, forward, vjp=..., infer=...)`` (or the decorator form) registers
a :class:`CustomOpDef` and returns it; the builder (``Graph.custom``) turns it into
one ``tg.custom`` op (``qidao/dialects/tg/custom.py``) whose regions hold the
forward and the vjp as tg ops, built on fresh block arguments. So the IR carries
everything: below the frontend nothing looks this registry up. The ``autodiff``
pass copies the vjp's ops where the gradient needs them (single-result ops only),
then ``expand-custom`` puts the forward in the op's place.

- ``forward(g, *inputs)`` returns a ``Value`` or a sequence of them (the results);
- ``vjp(g, *inputs, *outputs, *output_grads)`` returns one gradient per input (a
  ``Value`` of the input's shape and dtype, or None for zero), or a single
  ``Value`` when there is one input. Without a vjp the op compiles for inference,
  and differentiating through it is an error that names the op;
- the shape/dtype rule: by default the output types are those the forward builds
  on the input types. ``infer(*inputs)``, each input a ``(shape, dtype)`` pair
  (``((4, 8), "float32")``), returns the output pairs (one pair, or a list); it is
  checked against the forward whenever the op is built, so a mismatch is a
  ``GraphError`` naming the op and both answers.

Names are ``namespace::name`` (the namespace may hold dots, as ONNX domains do);
registering a name twice is a ``ValueError`` (``unregister`` frees it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Forward = Callable[..., Any]
"""``forward(g, *inputs) -> Value | Sequence[Value]``, on builder values."""

Vjp = Callable[..., Any]
"""``vjp(g, *inputs, *outputs, *output_grads) -> Value | Sequence[Value | None]``."""

TypePair = tuple[tuple[int, ...], str]
"""A tensor's ``(shape, dtype)``: ``((4, 8), "float32")``."""

Infer = Callable[..., Any]
"""``infer(*input_pairs) -> TypePair | Sequence[TypePair]``."""

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*::[A-Za-z_][A-Za-z0-9_]*$")
"""``namespace::name``, as ``tg.custom``'s verifier wants it."""


@dataclass(frozen=True)
class CustomOpDef:
    """A registered custom op. Called on builder values, it builds itself in their
    graph: ``swish(x)`` is ``x.graph.custom("demo::swish", x)`` (a tuple of
    values when the op has several results: ``Graph.custom_results``)."""

    name: str
    forward: Forward
    vjp: Vjp | None = None
    infer: Infer | None = None

    @property
    def domain(self) -> str:
        """The ONNX domain (and ``torch.library`` namespace): before ``::``."""
        return self.name.partition("::")[0]

    @property
    def op_type(self) -> str:
        """The ONNX op type (and ``torch.library`` op name): after ``::``."""
        return self.name.partition("::")[2]

    def __call__(self, *inputs: Any) -> Any:
        graph = next((v.graph for v in inputs if hasattr(v, "graph")), None)
        if graph is None:
            raise TypeError(
                f"custom op '{self.name}' is called on builder Values (or use "
                f"g.custom('{self.name}', ...)), got "
                f"({', '.join(type(v).__name__ for v in inputs)})"
            )
        results = graph.custom_results(self.name, *inputs)
        return results[0] if len(results) == 1 else results

    def inferred(self, inputs: Sequence[TypePair]) -> list[TypePair] | None:
        """``infer``'s output pairs for ``inputs``, as a list (None without
        ``infer``); a malformed answer is a ``TypeError`` naming the op."""
        if self.infer is None:
            return None
        answer = self.infer(*inputs)
        pairs = [answer] if _is_pair(answer) else list(answer)
        if not all(_is_pair(p) for p in pairs):
            raise TypeError(
                f"custom op '{self.name}': infer must return (shape, dtype) pairs "
                f"such as ((4, 8), 'float32'), got {answer!r}"
            )
        return [(tuple(int(d) for d in shape), str(dtype)) for shape, dtype in pairs]


def _is_pair(value: Any) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[1], str)
        and isinstance(value[0], Sequence)
    )


REGISTRY: dict[str, CustomOpDef] = {}
"""Name -> its custom op; filled by ``custom_op``."""


def custom_op(
    name: str,
    forward: Forward | None = None,
    *,
    vjp: Vjp | None = None,
    infer: Infer | None = None,
) -> Any:
    """Register the custom op ``name`` (``namespace::name``) and return its
    :class:`CustomOpDef`; without ``forward``, a decorator that takes it."""
    if not isinstance(name, str) or not NAME.match(name):
        raise ValueError(
            f"a custom op name is 'namespace::name' (letters, digits, '_'; dots in "
            f"the namespace), such as 'demo::swish'; got {name!r}"
        )
    for what, fn in (("vjp", vjp), ("infer", infer)):
        if fn is not None and not callable(fn):
            raise TypeError(f"custom op '{name}': {what} must be callable")

    def register(fn: Forward) -> CustomOpDef:
        if not callable(fn):
            raise TypeError(f"custom op '{name}': the forward must be callable")
        if name in REGISTRY:
            raise ValueError(
                f"custom op '{name}' is already registered (unregister it first)"
            )
        definition = CustomOpDef(name, fn, vjp, infer)
        REGISTRY[name] = definition
        return definition

    return register if forward is None else register(forward)


def lookup(name: str) -> CustomOpDef | None:
    """The custom op registered as ``name``, or None."""
    return REGISTRY.get(name)


def unregister(name: str) -> None:
    """Forget the custom op ``name`` (a ``KeyError`` if it is not registered)."""
    del REGISTRY[name]


def registered_names() -> frozenset[str]:
    """Every registered name, ``namespace::name``: what the ONNX scan accepts."""
    return frozenset(REGISTRY)
