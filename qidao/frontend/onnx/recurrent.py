"""ONNX recurrent layers ``RNN``, ``GRU`` and ``LSTM``, unrolled over time.

Like ``Scan`` and ``Loop`` (``control_flow.py``), a recurrent node becomes plain tg
ops, one group per time step (the sequence length is a static dimension):

1. the input projection of every step at once: ``X @ W^T + Wb (+ Rb)`` is one
   matmul of the ``[seq * batch, input]`` rows by the weights of every direction
   (``[input, num_directions * gates * hidden]``), the big GEMM of the layer;
2. per direction and time step (backwards for ``reverse`` and the second
   direction of ``bidirectional``), the recurrence ``H @ R^T`` (a small matmul)
   and the gate math of the ONNX equations, built from elementwise ops that the
   graph passes fuse into one kernel per step (the cell).

Gate orders are ONNX's: ``iofc`` for LSTM, ``zrh`` for GRU. Supported: every
``direction``, ``layout`` 0 and 1, ``B``, ``initial_h``, ``initial_c``, the LSTM
peepholes ``P`` and ``input_forget``, GRU's ``linear_before_reset``, ``clip``
(applied to the input of every activation), the ``activations`` ``Sigmoid``,
``Tanh`` and ``Relu`` (any other is refused, naming it), and ``sequence_lens``, a
runtime tensor: at a step ``t >= sequence_lens[b]`` batch entry ``b`` keeps its
state and its ``Y`` row is zero (a ``where`` on ``t < sequence_lens``), so the last
state of a short entry is its state after its last step, and the reverse direction
starts at its step ``sequence_lens[b] - 1`` (as ONNX Runtime). Lengths past the
sequence count as the whole sequence. Any of the outputs ``Y``, ``Y_h``, ``Y_c``
may be omitted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from qidao.frontend.builder import Graph, Value
from qidao.frontend.onnx.control_flow import MAX_ITERATIONS
from qidao.frontend.onnx.importer import Array, Importer, converter
from qidao.frontend.onnx.node import Node

Activation = Callable[[Value], Value]


@dataclass
class Layer:
    """The operands and attributes of one recurrent node, checked and decoded."""

    x: Value  # [seq, batch, input] (layout 0)
    w: Value  # [dirs, gates * hidden, input]
    r: Value  # [dirs, gates * hidden, hidden]
    b: Value | None  # [dirs, 2 * gates * hidden]
    h0: Value | None  # [dirs, batch, hidden] (layout 0)
    lens: Value | None  # [batch] int32
    hidden: int
    directions: list[bool]  # per direction: True when it runs backwards
    activations: list[list[Activation]]  # per direction
    clip: float | None

    @property
    def steps(self) -> int:
        return self.x.shape[0]

    @property
    def batch(self) -> int:
        return self.x.shape[1]


_DIRECTIONS = {"forward": [False], "reverse": [True], "bidirectional": [False, True]}


def _activation(g: Graph, node: Node, name: str) -> Activation:
    if name.lower() == "sigmoid":
        return g.sigmoid
    if name.lower() == "tanh":
        return g.tanh
    if name.lower() == "relu":
        return g.relu
    raise node.error(
        f"activation '{name}' is not supported (qidao supports Sigmoid, Tanh and Relu)"
    )


def _layer(im: Importer, node: Node, gates: int, defaults: list[str]) -> Layer:
    """Decode and check the operands shared by RNN, GRU and LSTM."""
    g = im.graph
    x, w, r = im.input(node, 0), im.input(node, 1), im.input(node, 2)
    b = im.optional_input(node, 3)
    lens = _sequence_lens(im, node)
    h0 = im.optional_input(node, 5)
    direction = node.attr("direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    if direction not in _DIRECTIONS:
        raise node.error(
            f"direction '{direction}' must be forward, reverse or bidirectional"
        )
    reverse = _DIRECTIONS[direction]
    dirs = len(reverse)
    layout = int(node.attr("layout", 0))
    if layout not in (0, 1):
        raise node.error(f"layout {layout} must be 0 or 1")
    if x.rank != 3 or x.dtype not in ("float32", "float64"):
        raise node.error(
            f"X must be a 3-D float32 or float64 tensor, got {x.dtype} {list(x.shape)}"
        )
    if layout == 1:  # [batch, seq, input] -> [seq, batch, input]
        x = g.transpose(x, (1, 0, 2))
    steps, batch, size = x.shape
    hidden = r.shape[-1] if r.rank == 3 else -1
    if node.attr("hidden_size") is not None and int(node.attr("hidden_size")) != hidden:
        raise node.error(
            f"hidden_size {node.attr('hidden_size')} does not match R "
            f"{list(r.shape)} (R must be [num_directions, {gates} * hidden_size, "
            "hidden_size])"
        )
    _expect(node, "W", w, [dirs, gates * hidden, size], x.dtype)
    _expect(node, "R", r, [dirs, gates * hidden, hidden], x.dtype)
    if b is not None:
        _expect(node, "B", b, [dirs, 2 * gates * hidden], x.dtype)
    if h0 is not None:
        shape = [batch, dirs, hidden] if layout == 1 else [dirs, batch, hidden]
        _expect(node, "initial_h", h0, shape, x.dtype)
        if layout == 1:
            h0 = g.transpose(h0, (1, 0, 2))
    if lens is not None:
        _expect(node, "sequence_lens", lens, [batch], "int32")
    if steps > MAX_ITERATIONS:
        raise node.error(
            f"the sequence length {steps} is more than qidao unrolls "
            f"({MAX_ITERATIONS} steps)"
        )
    if steps == 0:
        raise node.error("the sequence is empty (X has 0 time steps)")
    names = [
        str(a.decode() if isinstance(a, bytes) else a)
        for a in node.attr("activations", [])
    ]
    if not names:
        names = defaults * dirs
    if len(names) != len(defaults) * dirs:
        raise node.error(
            f"activations {names} must name {len(defaults)} function(s) per "
            f"direction ({len(defaults) * dirs} for direction '{direction}')"
        )
    acts = [_activation(g, node, n) for n in names]
    per_direction = [
        acts[k * len(defaults) : (k + 1) * len(defaults)] for k in range(dirs)
    ]
    clip = node.attr("clip")
    return Layer(
        x,
        w,
        r,
        b,
        h0,
        lens,
        hidden,
        reverse,
        per_direction,
        None if clip is None else float(clip),
    )


def _sequence_lens(im: Importer, node: Node) -> Value | None:
    """The optional ``sequence_lens`` (#4); a constant that covers every step of
    every batch entry is dropped (no masking needed)."""
    names = node.inputs
    if len(names) <= 4 or not names[4]:
        return None
    entry = im.env.get(names[4])
    x_shape = im.input(node, 0).shape
    steps = x_shape[1] if int(node.attr("layout", 0)) == 1 else x_shape[0]
    if isinstance(entry, np.ndarray) and entry.size and bool(np.all(entry >= steps)):
        return None
    return im.value(names[4])


def _expect(node: Node, what: str, v: Value, shape: list[int], dtype: str) -> None:
    if list(v.shape) != shape or v.dtype != dtype:
        raise node.error(
            f"{what} must be {dtype} {shape}, got {v.dtype} {list(v.shape)}"
        )


# ---- the shared unrolling -----------------------------------------------------------


def _projection(g: Graph, layer: Layer, bias: Value | None) -> Value:
    """``X @ W^T + bias`` for every step and direction: ``[seq, batch, dirs, G*H]``."""
    dirs, gh, size = layer.w.shape
    rows = g.reshape(layer.x, [layer.steps * layer.batch, size])
    weights = g.transpose(g.reshape(layer.w, [dirs * gh, size]), (1, 0))
    y = g.matmul(rows, weights)
    if bias is not None:
        y = g.add(y, g.reshape(bias, [dirs * gh]))
    return g.reshape(y, [layer.steps, layer.batch, dirs, gh])


def _step(g: Graph, projected: Value, t: int, d: int) -> Value:
    """The projection of step ``t``, direction ``d``: ``[batch, G*H]``."""
    _, batch, _, gh = projected.shape
    picked = g.slice(projected, [t, 0, d, 0], [t + 1, None, d + 1, None])
    return g.reshape(picked, [batch, gh])


def _bias(g: Graph, layer: Layer, gates: int, keep_last_r: bool) -> Value | None:
    """``Wb + Rb`` per direction ``[dirs, G*H]`` (the part that folds into the
    projection); ``keep_last_r``: the last gate's ``Rb`` stays out (GRU with
    ``linear_before_reset``)."""
    if layer.b is None:
        return None
    gh = gates * layer.hidden
    wb = g.slice(layer.b, [0, 0], [None, gh])
    rb = g.slice(layer.b, [0, gh], [None, 2 * gh])
    if keep_last_r:
        last = (gates - 1) * layer.hidden
        rb = g.pad(g.slice(rb, [0, 0], [None, last]), [0, 0], [0, layer.hidden])
    return g.add(wb, rb)


def _pick(g: Graph, v: Value, index: Sequence[int]) -> Value:
    """``v[index]`` (leading indices), as a slice and a reshape."""
    starts: list[int | None] = list(index)
    stops: list[int | None] = [i + 1 for i in index]
    picked = g.slice(v, starts, stops)
    return g.reshape(picked, list(v.shape[len(index) :]))


def _gate(g: Graph, v: Value, k: int, hidden: int) -> Value:
    """Gate ``k`` of ``[batch, G*H]``: columns ``k*H : (k+1)*H``."""
    return g.slice(v, [0, k * hidden], [None, (k + 1) * hidden])


def _clip(g: Graph, layer: Layer, v: Value) -> Value:
    if layer.clip is None:
        return v
    return g.minimum(g.maximum(v, -layer.clip), layer.clip)


def _masks(g: Graph, layer: Layer) -> Value | None:
    """``t < sequence_lens[b]`` for every step ``t`` and batch entry ``b``: a bool
    ``[seq, batch, 1]`` (one kernel), or None without lengths."""
    if layer.lens is None:
        return None
    steps = np.arange(layer.steps, dtype=np.int32).reshape(layer.steps, 1, 1)
    return g.greater(g.reshape(layer.lens, [1, layer.batch, 1]), steps)


def _initial(g: Graph, layer: Layer, v: Value | None, d: int) -> Value:
    if v is None:
        zeros = np.zeros((layer.batch, layer.hidden), dtype=layer.x.dtype)
        return g.constant(zeros, dtype=layer.x.dtype)
    return _pick(g, v, [d])


def _outputs(
    g: Graph, node: Node, layer: Layer, ys: list[list[Value]], finals: list[list[Value]]
) -> list[Value]:
    """``Y`` ``[seq, dirs, batch, H]`` from the per-direction step outputs and each
    final state ``[dirs, batch, H]`` (batch first for ``layout`` 1)."""
    batch, hidden = layer.batch, layer.hidden
    per_dir = [
        g.concat([g.reshape(y, [1, 1, batch, hidden]) for y in steps], axis=0)
        for steps in ys
    ]
    y_all = per_dir[0] if len(per_dir) == 1 else g.concat(per_dir, axis=1)
    results = [y_all]
    for states in finals:
        stacked = [g.reshape(s, [1, batch, hidden]) for s in states]
        results.append(stacked[0] if len(stacked) == 1 else g.concat(stacked, axis=0))
    if int(node.attr("layout", 0)) == 1:
        results = [g.transpose(results[0], (2, 0, 1, 3))] + [
            g.transpose(s, (1, 0, 2)) for s in results[1:]
        ]
    return results


def _unroll(
    g: Graph,
    node: Node,
    layer: Layer,
    bias: Value | None,
    cell: Callable[[int, Value, list[Value]], list[Value]],
    initial: list[Value | None],
) -> list[Value]:
    """Run ``cell(direction, projected_step, states) -> new states`` (state 0 is
    ``H``) over every step of every direction, with the ``sequence_lens`` mask;
    returns ``Y`` and the final states."""
    projected = _projection(g, layer, bias)
    masks = _masks(g, layer)
    ys: list[list[Value]] = []
    finals: list[list[Value]] = [[] for _ in initial]
    for d, backwards in enumerate(layer.directions):
        states = [_initial(g, layer, v, d) for v in initial]
        outs: list[Value] = []
        order = range(layer.steps - 1, -1, -1) if backwards else range(layer.steps)
        for t in order:
            new = cell(d, _step(g, projected, t, d), states)
            if masks is None:
                outs.append(new[0])
                states = new
            else:
                mask = _pick(g, masks, [t])
                outs.append(g.where(mask, new[0], 0.0))
                states = [g.where(mask, n, s) for n, s in zip(new, states, strict=True)]
        ys.append(outs[::-1] if backwards else outs)
        for k, s in enumerate(states):
            finals[k].append(s)
    return _outputs(g, node, layer, ys, finals)


def _recurrence(
    g: Graph, layer: Layer, d: int, h: Value, rows: tuple[int, int]
) -> Value:
    """``h @ R[d][rows]^T``: ``[batch, rows]``."""
    r = g.slice(layer.r, [d, rows[0], 0], [d + 1, rows[1], None])
    r2 = g.reshape(r, [rows[1] - rows[0], layer.hidden])
    return g.matmul(h, g.transpose(r2, (1, 0)))


# ---- the operators ------------------------------------------------------------------


@converter("RNN")
def _rnn(im: Importer, node: Node) -> list[Value | Array]:
    """``H = f(X W^T + H R^T + Wb + Rb)``."""
    g = im.graph
    layer = _layer(im, node, 1, ["Tanh"])
    hidden = layer.hidden

    def cell(d: int, xw: Value, states: list[Value]) -> list[Value]:
        (f,) = layer.activations[d]
        pre = g.add(xw, _recurrence(g, layer, d, states[0], (0, hidden)))
        return [f(_clip(g, layer, pre))]

    bias = _bias(g, layer, 1, keep_last_r=False)
    return list(_unroll(g, node, layer, bias, cell, [layer.h0]))


@converter("GRU")
def _gru(im: Importer, node: Node) -> list[Value | Array]:
    """``z, r = f(...)``; ``h = g(...)`` (``linear_before_reset`` decides where
    ``r`` applies); ``H = (1 - z) h + z H``."""
    g = im.graph
    layer = _layer(im, node, 3, ["Sigmoid", "Tanh"])
    hidden = layer.hidden
    linear = bool(node.attr("linear_before_reset", 0))
    rbh = None
    if linear and layer.b is not None:
        rbh = g.slice(layer.b, [0, 5 * hidden], [None, 6 * hidden])

    def cell(d: int, xw: Value, states: list[Value]) -> list[Value]:
        f, act = layer.activations[d]
        h = states[0]
        if linear:
            hr = _recurrence(g, layer, d, h, (0, 3 * hidden))
            zr = g.add(
                g.slice(xw, [0, 0], [None, 2 * hidden]),
                g.slice(hr, [0, 0], [None, 2 * hidden]),
            )
        else:
            hr = _recurrence(g, layer, d, h, (0, 2 * hidden))
            zr = g.add(g.slice(xw, [0, 0], [None, 2 * hidden]), hr)
        z = f(_clip(g, layer, _gate(g, zr, 0, hidden)))
        r = f(_clip(g, layer, _gate(g, zr, 1, hidden)))
        if linear:
            rh = _gate(g, hr, 2, hidden)
            if rbh is not None:
                rh = g.add(rh, _pick(g, rbh, [d]))
            pre = g.add(_gate(g, xw, 2, hidden), g.mul(r, rh))
        else:
            rh = _recurrence(g, layer, d, g.mul(r, h), (2 * hidden, 3 * hidden))
            pre = g.add(_gate(g, xw, 2, hidden), rh)
        candidate = act(_clip(g, layer, pre))
        return [g.add(g.mul(g.sub(1.0, z), candidate), g.mul(z, h))]

    bias = _bias(g, layer, 3, keep_last_r=linear)
    return list(_unroll(g, node, layer, bias, cell, [layer.h0]))


@converter("LSTM")
def _lstm(im: Importer, node: Node) -> list[Value | Array]:
    """``i, o, f = f(...)`` (with peepholes), ``c = g(...)``, ``C = f C + i c``,
    ``H = o h(C)``; ``input_forget`` makes ``f = 1 - i``."""
    g = im.graph
    layer = _layer(im, node, 4, ["Sigmoid", "Tanh", "Tanh"])
    hidden = layer.hidden
    c0 = im.optional_input(node, 6)
    if c0 is not None:
        layout = int(node.attr("layout", 0))
        dirs = len(layer.directions)
        shape = [layer.batch, dirs, hidden] if layout else [dirs, layer.batch, hidden]
        _expect(node, "initial_c", c0, shape, layer.x.dtype)
        if layout:
            c0 = g.transpose(c0, (1, 0, 2))
    p = im.optional_input(node, 7)
    if p is not None:
        _expect(node, "P", p, [len(layer.directions), 3 * hidden], layer.x.dtype)
    coupled = bool(node.attr("input_forget", 0))

    def peephole(d: int, k: int, c: Value) -> Value | None:
        if p is None:
            return None
        row = g.slice(p, [d, k * hidden], [d + 1, (k + 1) * hidden])
        return g.mul(g.reshape(row, [1, hidden]), c)

    def plus(v: Value, extra: Value | None) -> Value:
        return v if extra is None else g.add(v, extra)

    def cell(d: int, xw: Value, states: list[Value]) -> list[Value]:
        f, act, out = layer.activations[d]
        h, c = states
        pre = g.add(xw, _recurrence(g, layer, d, h, (0, 4 * hidden)))
        i = f(_clip(g, layer, plus(_gate(g, pre, 0, hidden), peephole(d, 0, c))))
        if coupled:
            forget = g.sub(1.0, i)
        else:
            forget = f(
                _clip(g, layer, plus(_gate(g, pre, 2, hidden), peephole(d, 2, c)))
            )
        candidate = act(_clip(g, layer, _gate(g, pre, 3, hidden)))
        c_new = g.add(g.mul(forget, c), g.mul(i, candidate))
        o = f(_clip(g, layer, plus(_gate(g, pre, 1, hidden), peephole(d, 1, c_new))))
        return [g.mul(o, out(c_new)), c_new]

    bias = _bias(g, layer, 4, keep_last_r=False)
    return list(_unroll(g, node, layer, bias, cell, [layer.h0, c0]))
