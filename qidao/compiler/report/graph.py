"""The tg graph of a compiled model with its fusion groups, drawn as SVG.

:func:`op_graph` reads the ``tg`` stage (after the graph passes): every tg op is a
node (the ops inside a ``tg.fused`` too), every value an edge from its producer to
each consumer, and every kernel launch a :class:`Group` of the nodes it computes.
``convert-tg-to-affine`` makes one kernel per compute op or ``tg.fused``, in the
order of the graph, then a ``copy`` kernel per output it cannot write directly
(``passes/kernels/lowering/host.py``); the host program launches them in that order
(``dedupe-kernels`` may point two launches at one kernel). The groups are matched
to the launches by that order and checked against each kernel's ``qd.kernel``
label; views (a transpose as strides) and constants belong to no kernel.

:func:`graph_svg` lays the graph out in layers (``nx.topological_generations``,
each layer ordered by the mean place of its producers, placed by
``nx.multipartite_layout``) and draws it top to bottom: each kernel's nodes in its
colour inside a box, views dashed, inputs and outputs as pills. A graph of more
than ``max_nodes`` nodes hides its constants, and then draws each kernel as one
box, so that a ResNet stays readable.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue

from qidao.compiler.host import entry_function
from qidao.dialects import tg
from qidao.dialects.attributes import INPUT_NAMES_ATTR, OUTPUT_NAMES_ATTR
from qidao.dialects.tg.cost import flops
from qidao.passes.kernels.lowering.fused import fused_label
from qidao.passes.kernels.lowering.host import BUILDERS, is_view

PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#8cd17d",
    "#d37295",
    "#86bcb6",
)
"""One colour per kernel launch, in turn."""


@dataclass
class Node:
    """One node of the drawing."""

    id: str
    kind: str
    """``input``, ``output``, ``tg`` (a tg op) or ``copy`` (a copy kernel)."""
    label: str
    title: str
    """The tooltip: the op's full name and result types."""
    role: str = "compute"
    """For a tg op: ``compute``, ``view`` or ``constant``."""
    group: int | None = None
    """The launch (index into :attr:`OpGraph.groups`) that computes it."""


@dataclass
class Group:
    """One kernel launch and what it computes."""

    index: int
    label: str
    """The tg ops, as the kernel's ``qd.kernel`` says (``tg.matmul+tg.add``)."""
    kernel: str = "?"
    """The kernel's symbol, once matched to the host program's launches."""
    flops: int = 0
    nodes: list[str] = field(default_factory=list)


@dataclass
class OpGraph:
    """The tg graph: nodes by id in a ``networkx.DiGraph`` and the launches."""

    graph: nx.DiGraph
    groups: list[Group]
    matched: bool
    """Whether every group was matched to its launch (else kernels show ``?``)."""

    def node(self, node_id: str) -> Node:
        n = self.graph.nodes[node_id]["node"]
        assert isinstance(n, Node)
        return n

    @property
    def tg_ops(self) -> int:
        return sum(1 for n in self.graph if self.node(n).kind == "tg")


def _type_text(values: Sequence[SSAValue]) -> str:
    return ", ".join(str(v.type) for v in values)


def _names(fn: func.FuncOp, attr: str) -> list[str]:
    names = fn.attributes.get(attr)
    if isinstance(names, ArrayAttr):
        return [n.data for n in names.data if isinstance(n, StringAttr)]
    return []


class _Builder:
    def __init__(self) -> None:
        self.graph = nx.DiGraph()
        self.producer: dict[SSAValue, str] = {}
        self.groups: list[Group] = []

    def add(self, node: Node, operands: Sequence[SSAValue] = ()) -> None:
        self.graph.add_node(node.id, node=node)
        for value in operands:
            source = self.producer.get(value)
            if source is not None:
                self.graph.add_edge(source, node.id, type=str(value.type))
        if node.group is not None:
            self.groups[node.group].nodes.append(node.id)

    def new_group(self, label: str, work: int) -> int:
        self.groups.append(Group(len(self.groups), label, flops=work))
        return len(self.groups) - 1

    def op(self, op: Operation, group: int | None, role: str = "compute") -> None:
        node = Node(
            f"n{len(self.graph)}",
            "tg",
            op.name.removeprefix("tg."),
            f"{op.name} -> {_type_text(op.results)}",
            role,
            group,
        )
        self.add(node, op.operands)
        for result in op.results:
            self.producer[result] = node.id


def op_graph(module: ModuleOp, launches: list[tuple[str, str]]) -> OpGraph:
    """The graph of ``module``'s tg stage, its groups matched to ``launches``
    ((kernel, label) in the host program's order)."""
    fn = entry_function(module)
    block = fn.body.block
    b = _Builder()
    inputs = _names(fn, INPUT_NAMES_ATTR)
    for i, arg in enumerate(block.args):
        name = inputs[i] if i < len(inputs) else arg.name_hint or f"input{i}"
        b.add(Node(f"n{len(b.graph)}", "input", name, f"input {name}: {arg.type}"))
        b.producer[arg] = f"n{len(b.graph) - 1}"
    ret: func.ReturnOp | None = None
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            ret = op
        elif isinstance(op, tg.FusedOp):
            _fused(b, op)
        elif isinstance(op, tg.ConstantOp):
            b.op(op, None, "constant")
        elif is_view(op) or type(op) not in BUILDERS:
            b.op(op, None, "view")
        else:
            b.op(op, b.new_group(op.name, flops(op)))
    if ret is not None:
        _outputs(b, fn, ret)
    matched = len(b.groups) == len(launches) and all(
        g.label == label for g, (_, label) in zip(b.groups, launches, strict=False)
    )
    if matched:
        for group, (kernel, _) in zip(b.groups, launches, strict=True):
            group.kernel = kernel
    return OpGraph(b.graph, b.groups, matched)


def _fused(b: _Builder, op: tg.FusedOp) -> None:
    group = b.new_group(fused_label(op), flops(op))
    body = op.body.block
    for arg, outer in zip(body.args, op.operands, strict=True):
        if outer in b.producer:
            b.producer[arg] = b.producer[outer]
    for inner in body.ops:
        if isinstance(inner, tg.YieldOp):
            for result, value in zip(op.results, inner.operands, strict=True):
                if value in b.producer:
                    b.producer[result] = b.producer[value]
        else:
            b.op(
                inner,
                group,
                "constant" if isinstance(inner, tg.ConstantOp) else "compute",
            )


def _outputs(b: _Builder, fn: func.FuncOp, ret: func.ReturnOp) -> None:
    """An output node per result, behind a ``copy`` kernel where the lowering
    makes one: a returned input, view or constant, or a value returned again."""
    names = _names(fn, OUTPUT_NAMES_ATTR)
    written: set[SSAValue] = set()
    for k, value in enumerate(ret.arguments):
        name = names[k] if k < len(names) else f"output{k}"
        owner = value.owner
        computed = (
            isinstance(owner, Operation)
            and type(owner) in BUILDERS
            and not is_view(owner)
        )
        source = b.producer.get(value)
        if not computed or value in written:
            copy = Node(
                f"n{len(b.graph)}",
                "copy",
                "copy",
                f"copy into {name}",
                group=b.new_group("copy", 0),
            )
            b.add(copy, [value])
            source = copy.id
        written.add(value)
        output = Node(
            f"n{len(b.graph)}", "output", name, f"output {name}: {value.type}"
        )
        b.add(output)
        if source is not None:
            b.graph.add_edge(source, output.id, type=str(value.type))


# --- drawing --------------------------------------------------------------------

NODE_H = 30
LAYER_GAP = 66
CHAR_W = 7.4
PAD = 24


@dataclass
class _Drawn:
    """The graph to draw (perhaps reduced) and what was left out."""

    graph: nx.DiGraph
    note: str = ""
    collapsed: bool = False


def _reduced(og: OpGraph, max_nodes: int) -> _Drawn:
    g = og.graph
    if len(g) <= max_nodes:
        return _Drawn(g)
    g = g.subgraph(n for n in g if og.node(n).role != "constant").copy()
    note = "constants hidden"
    if len(g) <= max_nodes:
        return _Drawn(g, f"{len(og.graph)} nodes: {note}")
    boxes = nx.DiGraph()
    rep: dict[str, str] = {}
    for n in g:
        node = og.node(n)
        if node.group is None:
            rep[n] = n
            boxes.add_node(n, node=node)
            continue
        group = og.groups[node.group]
        key = f"g{group.index}"
        rep[n] = key
        if key not in boxes:
            ops = sum(1 for m in group.nodes if og.node(m).kind == "tg")
            label = group.kernel if og.matched else group.label
            boxes.add_node(
                key,
                node=Node(
                    key,
                    "tg",
                    f"{label} ({ops} op{'s' if ops != 1 else ''})" if ops else label,
                    group.label,
                    "compute",
                    group.index,
                ),
            )
    for a, c in g.edges:
        if rep[a] != rep[c]:
            boxes.add_edge(rep[a], rep[c])
    return _Drawn(
        boxes, f"{len(og.graph)} nodes: {note}, each kernel drawn as one box", True
    )


def _layers(g: nx.DiGraph) -> dict[int, list[str]]:
    """Layers top to bottom, each ordered by the mean place of its producers."""
    layer: dict[str, int] = {}
    for depth, generation in enumerate(nx.topological_generations(g)):
        for n in generation:
            layer[n] = depth
    for n in g:  # a constant sits just above its first consumer
        node = g.nodes[n]["node"]
        if node.role == "constant" and g.out_degree(n) and not g.in_degree(n):
            layer[n] = max(0, min(layer[s] for s in g.successors(n)) - 1)
    layers: dict[int, list[str]] = {}
    for n in g:
        layers.setdefault(layer[n], []).append(n)
    place: dict[str, float] = {}
    for depth in sorted(layers):  # down: the ops, by their producers' places
        ops = [n for n in layers[depth] if not _is_constant(g, n)]
        first = {n: i for i, n in enumerate(ops)}

        def key(n: str, first: dict[str, int] = first) -> tuple[float, int, int]:
            above = [place[p] for p in g.predecessors(n) if p in place]
            mean = sum(above) / len(above) if above else float(first[n])
            group = g.nodes[n]["node"].group
            return (mean, -1 if group is None else group, first[n])

        _place(sorted(ops, key=key), place)
    for depth in sorted(layers):  # then each constant beside its consumers
        nodes = layers[depth]

        def beside(n: str) -> float:
            if not _is_constant(g, n):
                return place[n]
            below = [place[c] for c in g.successors(n) if c in place]
            return sum(below) / len(below) + 0.01 if below else float("inf")

        nodes.sort(key=beside)
        _place(nodes, place)
    return layers


def _is_constant(g: nx.DiGraph, n: str) -> bool:
    return bool(g.nodes[n]["node"].role == "constant")


def _place(nodes: list[str], place: dict[str, float]) -> None:
    for i, n in enumerate(nodes):
        place[n] = i - (len(nodes) - 1) / 2


def _width(node: Node) -> float:
    return max(56.0, CHAR_W * len(node.label) + 20)


def _positions(
    g: nx.DiGraph, layers: dict[int, list[str]]
) -> tuple[dict[str, tuple[float, float]], float, float]:
    """Pixel centres of the nodes, and the picture's width and height:
    ``nx.multipartite_layout`` puts the layers in rows, each row's nodes evenly
    spaced about the middle; then each node moves below its producers as far as
    its row's order and spacing allow (:func:`_straighten`), so a chain of ops
    runs straight down."""
    raw = nx.multipartite_layout(g, subset_key=layers, align="horizontal")
    rows = sorted(layers)
    unit = 1.0  # the layout's scale: one step between rows (or places in a row)
    if len(rows) > 1:
        first, last = layers[rows[0]][0], layers[rows[-1]][0]
        unit = abs(raw[last][1] - raw[first][1]) / (len(rows) - 1) or 1.0
    elif len(g) > 1:
        a, c = layers[rows[0]][:2]
        unit = abs(raw[c][0] - raw[a][0]) or 1.0
    x = {n: float(raw[n][0]) / unit for n in g}  # in slots
    y = {n: float(raw[n][1]) / unit for n in g}  # in rows
    _straighten(g, [layers[r] for r in rows], x)
    slot = max(_width(g.nodes[n]["node"]) for n in g) + 22
    x0, y0 = min(x.values()), min(y.values())
    pos = {
        n: (
            PAD + slot / 2 + (x[n] - x0) * slot,
            PAD + 16 + NODE_H / 2 + (y[n] - y0) * LAYER_GAP,
        )
        for n in g
    }
    width = PAD * 2 + slot * (max(x.values()) - x0 + 1)
    height = PAD * 2 + 16 + NODE_H + (max(y.values()) - y0) * LAYER_GAP
    return pos, width, height


def _straighten(g: nx.DiGraph, rows: list[list[str]], x: dict[str, float]) -> None:
    """Move each row's nodes (in slots, in order, one slot apart at least) toward
    the mean place of their producers, top down; then each constant toward its
    consumers."""
    for row in rows[1:]:
        wanted = []
        for n in row:
            above = [x[p] for p in g.predecessors(n)]
            wanted.append(sum(above) / len(above) if above else x[n])
        _spread(row, wanted, x)
    for row in rows:
        if not any(_is_constant(g, n) for n in row):
            continue
        wanted = []
        for n in row:
            below = [x[c] for c in g.successors(n)]
            if _is_constant(g, n) and below:
                wanted.append(sum(below) / len(below) - 0.5)
            else:
                wanted.append(x[n])
        _spread(row, wanted, x)


def _spread(row: list[str], wanted: list[float], x: dict[str, float]) -> None:
    """Place ``row`` in order as near ``wanted`` as one slot apart allows: each
    pushed right of its left neighbour, then the row shifted back so that it
    moved, on the whole, as much left as right."""
    placed: list[float] = []
    for want in wanted:
        placed.append(max(want, placed[-1] + 1.0) if placed else want)
    shift = (sum(wanted) - sum(placed)) / len(placed)
    for n, at in zip(row, placed, strict=True):
        x[n] = at + shift


def group_colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def graph_svg(og: OpGraph, max_nodes: int = 160) -> tuple[str, str]:
    """The SVG of ``og`` and a note on what a large graph left out (or "")."""
    drawn = _reduced(og, max_nodes)
    g = drawn.graph
    if not len(g):
        return '<svg class="graph" width="200" height="40"></svg>', "an empty graph"
    layers = _layers(g)
    pos, width, height = _positions(g, layers)
    e = html.escape
    out = [
        f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
        'font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" '
        'font-size="12" '
        f'aria-label="the tg graph: {og.tg_ops} ops in {len(og.groups)} kernel '
        'launches">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#777"/></marker></defs>',
    ]
    for group in og.groups:  # the boxes first, under the nodes
        members = [n for n in group.nodes if n in pos] or (
            [f"g{group.index}"] if f"g{group.index}" in pos else []
        )
        colour = group_colour(group.index)
        out.append(
            f'<g class="kernel" id="kernel-box-{group.index}" '
            f'data-kernel="{e(group.kernel)}" data-ops="{e(group.label)}">'
        )
        out.append(f"<title>{e(_group_title(group))}</title>")
        if members and not drawn.collapsed:
            left = min(pos[n][0] - _width(g.nodes[n]["node"]) / 2 for n in members)
            right = max(pos[n][0] + _width(g.nodes[n]["node"]) / 2 for n in members)
            top = min(pos[n][1] for n in members) - NODE_H / 2 - 16
            bottom = max(pos[n][1] for n in members) + NODE_H / 2 + 6
            out.append(
                f'<rect x="{left - 8:.1f}" y="{top:.1f}" width="{right - left + 16:.1f}" '
                f'height="{bottom - top:.1f}" rx="9" fill="{colour}" '
                f'fill-opacity="0.10" stroke="{colour}" stroke-width="1.5"/>'
            )
            out.append(
                f'<text class="kernel-label" x="{left - 2:.1f}" y="{top + 11:.1f}" '
                f'font-size="10.5" fill="{colour}">{e(_short(group))}</text>'
            )
        out.append("</g>")
    for a, c in g.edges:
        (x1, y1), (x2, y2) = pos[a], pos[c]
        y1 += NODE_H / 2
        y2 -= NODE_H / 2
        mid = (y2 - y1) / 2
        title = g.edges[a, c].get("type", "")
        out.append(
            f'<path class="edge" d="M {x1:.1f} {y1:.1f} C {x1:.1f} {y1 + mid:.1f} '
            f'{x2:.1f} {y2 - mid:.1f} {x2:.1f} {y2:.1f}" fill="none" stroke="#8a8a8a" '
            'stroke-width="1.2" marker-end="url(#arrow)">'
            + (f"<title>{e(title)}</title>" if title else "")
            + "</path>"
        )
    for n in g:
        node = g.nodes[n]["node"]
        out.append(_node_svg(node, pos[n]))
    out.append("</svg>")
    return "\n".join(out), drawn.note


def _short(group: Group) -> str:
    return group.kernel if group.kernel != "?" else f"launch {group.index}"


def _group_title(group: Group) -> str:
    return f"kernel {group.kernel} (launch {group.index}): {group.label}"


def _node_svg(node: Node, at: tuple[float, float]) -> str:
    e = html.escape
    x, y = at
    w = _width(node)
    fill, stroke, dash, rx = "#ffffff", "#888888", "", 5
    if node.group is not None:
        stroke = group_colour(node.group)
        fill = stroke
    if node.kind in ("input", "output"):
        fill, stroke, rx = "#f4f4f4", "#555555", NODE_H // 2
    elif node.role == "view":
        dash = ' stroke-dasharray="4 3"'
    elif node.role == "constant":
        fill, stroke = "#eeeeee", "#aaaaaa"
    text_fill = "#ffffff" if node.group is not None else "#222222"
    opacity = ' fill-opacity="0.85"' if node.group is not None else ""
    classes = f"node {node.kind}"
    group = f' data-group="{node.group}"' if node.group is not None else ""
    return (
        f'<g class="{classes}" id="node-{node.id}" data-kind="{node.role}"{group}>'
        f"<title>{e(node.title)}</title>"
        f'<rect x="{x - w / 2:.1f}" y="{y - NODE_H / 2:.1f}" width="{w:.1f}" '
        f'height="{NODE_H}" rx="{rx}" fill="{fill}"{opacity} stroke="{stroke}" '
        f'stroke-width="1.5"{dash}/>'
        f'<text x="{x:.1f}" y="{y + 4.5:.1f}" text-anchor="middle" '
        f'fill="{text_fill}">{e(node.label)}</text></g>'
    )
