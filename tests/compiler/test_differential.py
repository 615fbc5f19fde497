"""Differential testing: random tg graphs, compiled, against NumPy (and eager vs graph).

Hypothesis draws a small program: inputs of random shapes, then a sequence of steps
(elementwise with broadcasting, reductions, matmul, softmax, transpose / view /
reshape / broadcast / slice / gather / concat). Each step is applied twice: to the
builder (tg ops) and to NumPy arrays, so the NumPy side is an independent reference.
The compiled graph, in graph mode and in eager mode, must match it. A failing example
shrinks to a small program, and the tg module is printed in the report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import qidao
from qidao.dialects.tg.layout import view_strides
from qidao.frontend.builder import Graph, Value

Array = np.ndarray[Any, Any]


@dataclass
class Program:
    """A graph under construction and its NumPy twin, value by value."""

    graph: Graph = field(default_factory=lambda: Graph("main"))
    values: list[tuple[Value, Array]] = field(default_factory=list)
    inputs: list[Array] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)

    def __repr__(self) -> str:  # hypothesis prints this for a failing example
        return "Program(" + "; ".join(self.steps) + ")"

    def add(self, value: Value, array: Array, step: str) -> None:
        assert value.shape == array.shape, (step, value.shape, array.shape)
        self.values.append((value, array.astype(np.float32)))
        self.steps.append(step)


def _f32(x: Any) -> Array:
    return np.asarray(x, dtype=np.float32)


UNARY: dict[str, tuple[Callable[[Graph, Value], Value], Callable[[Array], Array]]] = {
    "neg": (Graph.neg, np.negative),
    "relu": (Graph.relu, lambda a: np.maximum(a, 0)),
    "tanh": (Graph.tanh, np.tanh),
    "sin": (Graph.sin, np.sin),
    "cos": (Graph.cos, np.cos),
    "sigmoid": (Graph.sigmoid, lambda a: 1 / (1 + np.exp(-a))),
    # exp, log and sqrt see bounded or positive arguments, so no inf/nan appears.
    "exp": (lambda g, x: g.exp(g.tanh(x)), lambda a: np.exp(np.tanh(a))),
    "log": (lambda g, x: g.log(x * x + 1.0), lambda a: np.log(a * a + 1)),
    "sqrt": (lambda g, x: g.sqrt(x * x + 0.5), lambda a: np.sqrt(a * a + 0.5)),
}
BINARY: dict[
    str, tuple[Callable[[Graph, Value, Any], Value], Callable[[Array, Array], Array]]
] = {
    "add": (Graph.add, np.add),
    "sub": (Graph.sub, np.subtract),
    "mul": (Graph.mul, np.multiply),
    "max": (Graph.maximum, np.maximum),
    "min": (Graph.minimum, np.minimum),
}


def _broadcastable_shape(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with ``shape``: a suffix, some dims set to 1."""
    keep = draw(st.integers(0, len(shape)))
    suffix = list(shape[len(shape) - keep :])
    return tuple(1 if draw(st.booleans()) else d for d in suffix)


def _factorizations(n: int) -> list[tuple[int, ...]]:
    shapes = [(n,)]
    shapes += [(a, n // a) for a in range(1, n + 1) if n % a == 0]
    return shapes


@st.composite
def programs(draw: st.DrawFn) -> Program:
    p = Program()
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    dims = st.integers(1, 5)
    for i in range(draw(st.integers(1, 2))):
        shape = tuple(draw(st.lists(dims, min_size=1, max_size=3)))
        array = rng.uniform(-2, 2, shape).astype(np.float32)
        p.inputs.append(array)
        p.add(p.graph.input(f"x{i}", shape), array, f"x{i} = input{list(shape)}")
    g = p.graph
    for _ in range(draw(st.integers(1, 6))):
        x, a = p.values[draw(st.integers(0, len(p.values) - 1))]
        kind = draw(
            st.sampled_from(
                [
                    "unary",
                    "binary",
                    "binary",
                    "div",
                    "reduce",
                    "matmul",
                    "softmax",
                    "layout",
                ]
            )
        )
        if kind in ("reduce", "softmax") and a.ndim == 0:
            kind = "unary"  # nothing to reduce over in a rank-0 value
        if kind == "unary":
            name = draw(st.sampled_from(sorted(UNARY)))
            build, ref = UNARY[name]
            p.add(build(g, x), ref(a), name)
        elif kind == "binary":
            name = draw(st.sampled_from(sorted(BINARY)))
            build2, ref2 = BINARY[name]
            if draw(st.booleans()):
                shape = _broadcastable_shape(draw, a.shape)
                c = rng.uniform(-2, 2, shape).astype(np.float32)
                p.add(build2(g, x, c), ref2(a, c), f"{name} const{list(shape)}")
            else:
                compatible = []
                for v, b in p.values:
                    try:
                        np.broadcast_shapes(a.shape, b.shape)
                        compatible.append((v, b))
                    except ValueError:
                        pass
                y, b = compatible[draw(st.integers(0, len(compatible) - 1))]
                p.add(build2(g, x, y), ref2(a, b), name)
        elif kind == "div":
            c = rng.uniform(0.5, 2, _broadcastable_shape(draw, a.shape)).astype(
                np.float32
            )
            p.add(g.div(x, c), a / c, "div const")
        elif kind == "reduce":
            axes = sorted(draw(st.sets(st.integers(0, a.ndim - 1), min_size=1)))
            keep = draw(st.booleans())
            name = draw(st.sampled_from(["sum", "mean", "max"]))
            build_r = {"sum": g.reduce_sum, "mean": g.reduce_mean, "max": g.reduce_max}[
                name
            ]
            ref_r = {"sum": np.sum, "mean": np.mean, "max": np.max}[name]
            p.add(
                build_r(x, axes, keepdims=keep),
                _f32(ref_r(a.astype(np.float64), axis=tuple(axes), keepdims=keep)),
                f"reduce_{name}{axes}{' keepdims' if keep else ''}",
            )
        elif kind == "matmul" and a.ndim >= 2:
            n = draw(dims)
            w = rng.uniform(-1, 1, (a.shape[-1], n)).astype(np.float32)
            p.add(
                g.matmul(x, w),
                _f32(a.astype(np.float64) @ w),
                f"matmul [{a.shape[-1]}, {n}]",
            )
        elif kind == "softmax":
            axis = draw(st.integers(-a.ndim, a.ndim - 1))
            e = np.exp(a - a.max(axis=axis, keepdims=True))
            p.add(
                g.softmax(x, axis),
                e / e.sum(axis=axis, keepdims=True),
                f"softmax {axis}",
            )
        elif kind == "layout":
            how = draw(
                st.sampled_from(
                    [
                        "transpose",
                        "reshape",
                        "view",
                        "broadcast",
                        "slice",
                        "gather",
                        "concat",
                    ]
                )
            )
            if how in ("slice", "gather", "concat") and a.ndim == 0:
                how = "transpose"  # nothing to index in a rank-0 value
            if how == "slice":
                start = [draw(st.integers(0, d - 1)) for d in a.shape]
                stop = [
                    draw(st.integers(lo + 1, d))
                    for lo, d in zip(start, a.shape, strict=True)
                ]
                step = [draw(st.integers(1, 3)) for _ in a.shape]
                index = tuple(slice(*b) for b in zip(start, stop, step, strict=True))
                p.add(
                    g.slice(x, start, stop, step),
                    a[index],
                    f"slice {start}:{stop}:{step}",
                )
            elif how == "gather":
                axis = draw(st.integers(0, a.ndim - 1))
                n = a.shape[axis]
                picked = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=6))
                p.add(
                    g.gather(x, picked, axis),
                    np.take(a, picked, axis=axis),
                    f"gather {picked} axis {axis}",
                )
            elif how == "concat":
                axis = draw(st.integers(0, a.ndim - 1))
                same = [
                    (v, b)
                    for v, b in p.values
                    if b.ndim == a.ndim
                    and all(
                        d == e
                        for k, (d, e) in enumerate(zip(a.shape, b.shape, strict=True))
                        if k != axis
                    )
                ]
                y, b = same[draw(st.integers(0, len(same) - 1))]
                shape = list(a.shape)
                shape[axis] = draw(dims)
                c = rng.uniform(-2, 2, shape).astype(np.float32)
                p.add(
                    g.concat([x, y, g.constant(c)], axis),
                    np.concatenate([a, b, c], axis=axis),
                    f"concat axis {axis} const{shape}",
                )
            elif how == "transpose":
                perm = draw(st.permutations(range(a.ndim)))
                p.add(
                    g.transpose(x, perm),
                    np.transpose(a, perm),
                    f"transpose {list(perm)}",
                )
            elif how == "broadcast":
                shape = (draw(dims), *a.shape)
                p.add(
                    g.broadcast(x, shape),
                    np.broadcast_to(a, shape),
                    f"broadcast {list(shape)}",
                )
            else:
                shape = draw(st.sampled_from(_factorizations(a.size)))
                if (
                    how == "view"
                    and view_strides(x.shape, _tg_strides(x), shape) is None
                ):
                    how = "reshape"  # a view of this layout would be rejected
                op = g.view if how == "view" else g.reshape
                p.add(op(x, shape), a.reshape(shape), f"{how} {list(shape)}")
    last, ref = p.values[-1]
    g.output(last)
    p.steps.append("-> output")
    p.inputs = [np.ascontiguousarray(i) for i in p.inputs]
    p.values[-1] = (last, ref)
    return p


def _tg_strides(x: Value) -> tuple[int, ...]:
    from qidao.dialects.tg.types import strides_of

    return strides_of(x.type)


def _assert_close(got: Array, want: Array, what: str) -> None:
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5 * scale, err_msg=what)


def _modes() -> list[str]:
    import inspect

    source = inspect.getsource(qidao.compiler.compile.compile)
    return ["graph", "eager"] if "eager" in source else ["graph"]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(programs())
def test_random_graphs_match_numpy(program: Program) -> None:
    module = program.graph.module()
    note("steps: " + "; ".join(program.steps))
    note(str(module))
    want = program.values[-1][1]
    results = {}
    for mode in _modes():
        options = {"mode": mode} if mode != "graph" else {}
        (got,) = qidao.compile(module, **options)(*program.inputs)
        _assert_close(got, want, f"{mode} mode vs NumPy")
        results[mode] = got
    if "eager" in results:
        _assert_close(results["graph"], results["eager"], "graph vs eager")


def test_generator_makes_varied_programs() -> None:
    """Guard against a generator that silently stops covering op kinds."""
    seen: set[str] = set()

    @settings(max_examples=40, deadline=None, database=None, derandomize=True)
    @given(programs())
    def collect(program: Program) -> None:
        seen.update(step.split()[0] for step in program.steps)

    collect()
    for kind in ("matmul", "softmax", "transpose", "add"):
        assert any(s.startswith(kind) for s in seen), (kind, sorted(seen))
