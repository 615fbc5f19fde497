"""``qidao bisect`` finds planted bugs: a graph pass that flips a sign in one case, a
split that drops its remainder (in a user's schedule) and a peel that drops its
iteration (in a default schedule), a lowering that is wrong before any schedule, a
buffer shared while still alive; and blames nothing in a right compile."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import arith, memref
from xdsl.dialects.affine import ForOp
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp
from xdsl.ir.affine import AffineMap

from qidao.compiler.bisect import BisectError, Mismatch, bisect, compare
from qidao.compiler.host import entry_function
from qidao.compiler.schedule import Schedule
from qidao.dialects.tg.elementwise import SubOp
from qidao.frontend.builder import Graph
from qidao.passes.graph.simplify import SimplifyPass
from qidao.passes.kernels.convert_tg_to_affine import ConvertTgToAffinePass
from qidao.passes.kernels.plan_memory import PlanMemoryPass
from qidao.passes.schedule.loops.nest import find_loop
from qidao.passes.schedule.peel import PeelPass, peel_loop
from qidao.passes.schedule.split import SplitPass, split_loop
from qidao.tools.cli import main


def three_kernels() -> Graph:
    """x @ w, then softmax, then (s - b) * 2: a matmul, a row kernel and an
    elementwise kernel, the last of 10 columns."""
    g = Graph()
    x = g.input("x", (4, 6))
    w = g.input("w", (6, 10))
    b = g.input("b", (4, 10))
    s = g.softmax(g.matmul(x, w), axis=-1)
    g.output(g.mul(g.sub(s, b), g.constant(np.full((4, 10), 2.0, np.float32))))
    return g


@pytest.mark.slow
def test_a_right_compile_blames_nothing() -> None:
    report = bisect(three_kernels())
    assert report.culprit is None and report.outputs_wrong is None
    kernels = [what for what, _ in report.steps if what.startswith("kernel ")]
    assert len(kernels) >= 2, report  # every kernel checked, not only the output
    assert all(verdict == "ok" for _, verdict in report.steps), report
    assert "agrees" in str(report)


def _flip_one_sub(self: SimplifyPass, ctx: Any, op: ModuleOp) -> None:
    """The real simplify, then one case done wrong: the first ``a - b`` becomes
    ``b - a``."""
    REAL_SIMPLIFY(self, ctx, op)
    for sub in op.walk():
        if isinstance(sub, SubOp):
            a, b = sub.operands
            sub.operands = (b, a)
            return


REAL_SIMPLIFY = SimplifyPass.apply


def test_finds_a_graph_pass_that_flips_a_sign(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SimplifyPass, "apply", _flip_one_sub)
    report = bisect(three_kernels())
    culprit = report.culprit
    assert culprit is not None and culprit.kind == "pass", report
    assert culprit.name == "simplify"
    assert "tg.sub" in culprit.op
    assert "tg.sub" in culprit.diff()
    # the passes before it were checked and right; none after it was run
    names = [what for what, _ in report.steps]
    assert names.index("graph pass simplify") == len(names) - 1
    assert all(v == "ok" for _, v in report.steps[:-1])
    # the worst element is where s - b and b - s differ most: 2 |s - b|
    x, w, b = _inputs(report_seed=0)
    assert culprit.mismatch.error == pytest.approx(
        np.abs(2 * 2 * (_softmax(x @ w) - b)).max(), rel=1e-4
    )


def _drop_remainder(self: SplitPass, ctx: Any, op: ModuleOp) -> None:
    """The real split, but the outer loop stops one tile short where the extent is
    not a multiple of the factor: the remainder is never computed."""
    outer, _ = split_loop(op, self.kernel, self.loop, self.factor)
    _, loop = find_loop(op, "split", self.kernel, outer)
    assert isinstance(loop, ForOp)
    bound = loop.properties["upperBoundMap"]
    assert isinstance(bound, AffineMapAttr)
    tiles = bound.data.eval([], [])[0]
    extent = _EXTENTS.get((self.kernel, self.loop))
    if extent is not None and extent % self.factor:
        loop.properties["upperBoundMap"] = AffineMapAttr(
            AffineMap.constant_map(tiles - 1)
        )


_EXTENTS: dict[tuple[str, str], int] = {}


@pytest.mark.slow
def test_finds_the_primitive_that_drops_a_remainder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    last = list(Schedule.for_model(three_kernels()).kernels())[-1]
    _EXTENTS[(last, "i1")] = 10
    monkeypatch.setattr(SplitPass, "apply", _drop_remainder)

    def schedule(s: Any) -> None:  # fine, fine, then the split that loses a column
        s.reorder(last, "i1", "i0")
        s.reorder(last, "i0", "i1")
        s.split(last, "i1", 4)

    report = bisect(three_kernels(), schedule=schedule)
    culprit = report.culprit
    assert culprit is not None and culprit.kind == "primitive", report
    assert culprit.kernel == last
    assert culprit.name == f's.split("{last}", "i1", 4)'
    assert culprit.mismatch.index[1] in (8, 9)  # the dropped remainder's columns
    assert "i1_o" in culprit.after and "i1_o" not in culprit.before
    assert ("compiled outputs", "differs") in report.steps


@pytest.mark.slow
def test_finds_a_default_schedule_primitive(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default schedule's own primitives are searched the same way: a peel
    that drops the peeled iteration is found among the 37 primitives of a
    matmul's default schedule (37 rows = 4 tiles of 8 + a peeled 5)."""
    monkeypatch.setattr(PeelPass, "apply", _drop_peeled_tail)
    report = bisect(_odd_matmul())
    culprit = report.culprit
    assert culprit is not None and culprit.kind == "primitive", report
    assert culprit.name.startswith('s.peel("main_k0_matmul", ')
    assert culprit.kernel == "main_k0_matmul"
    assert ("compiled outputs", "differs") in report.steps


def _drop_peeled_tail(self: PeelPass, ctx: Any, op: ModuleOp) -> None:
    """The real peel, then the peeled copy runs no iteration: the last one is never
    computed (its loops stay, for the primitives after it)."""
    tail = peel_loop(op, self.kernel, self.loop, self.suffix)
    _, loop = find_loop(op, "peel", self.kernel, tail)
    assert isinstance(loop, ForOp)
    loop.properties["upperBoundMap"] = loop.properties["lowerBoundMap"]


def _odd_matmul() -> Graph:
    g = Graph()
    x = g.input("x", (37, 50))
    y = g.input("y", (50, 70))
    g.output(g.matmul(x, y))
    return g


def _subtract_backwards(self: ConvertTgToAffinePass, ctx: Any, op: ModuleOp) -> None:
    """The real lowering, then the kernels that subtract do it the wrong way round."""
    REAL_LOWERING(self, ctx, op)
    for sub in op.walk():
        if isinstance(sub, arith.SubfOp):
            a, b = sub.operands
            sub.operands = (b, a)


REAL_LOWERING = ConvertTgToAffinePass.apply


@pytest.mark.slow
def test_finds_a_kernel_wrong_as_lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ConvertTgToAffinePass, "apply", _subtract_backwards)
    report = bisect(three_kernels())
    culprit = report.culprit
    # the first kernel that subtracts: softmax's x - max (the matmul before it is
    # right, the sub+mul after it is not looked at)
    assert culprit is not None and culprit.kind == "kernel", report
    assert culprit.op == "tg.softmax" and "tg.softmax" in culprit.before
    assert "arith.subf" in culprit.after
    kernels = [(w, v) for w, v in report.steps if w.startswith("kernel ")]
    assert kernels == [
        ("kernel main_k0_matmul", "ok"),
        (f"kernel {culprit.name}", "differs"),
    ]


def _share_live_buffers(self: PlanMemoryPass, ctx: Any, op: ModuleOp) -> None:
    """The real planner, then two buffers of one type that are alive together
    become one: the second kernel overwrites what the first wrote."""
    REAL_PLANNER(self, ctx, op)
    host = entry_function(op)
    allocs = [a for a in host.body.walk() if isinstance(a, memref.AllocOp)]
    for first, second in itertools.pairwise(allocs):
        if first.memref.type == second.memref.type:
            for use in list(second.memref.uses):
                if isinstance(use.operation, memref.DeallocOp):
                    use.operation.detach()
                    use.operation.erase()
            second.memref.replace_all_uses_with(first.memref)
            second.detach()
            second.erase()
            return


REAL_PLANNER = PlanMemoryPass.apply


@pytest.mark.slow
def test_finds_a_buffer_shared_too_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """exp(x) + (-x), unfused: three kernels, two buffers alive together. Every
    kernel is right when it writes a buffer of its own (exposed), so the blame
    goes to the pass whose absence makes the outputs right."""
    monkeypatch.setattr(PlanMemoryPass, "apply", _share_live_buffers)
    g = Graph()
    x = g.input("x", (4, 8))
    g.output(g.add(g.exp(x), g.neg(x)))
    report = bisect(g, fuse=False)
    culprit = report.culprit
    assert culprit is not None and culprit.kind == "buffers", report
    assert culprit.name == "plan-memory"
    assert ("without plan-memory", "outputs right") in report.steps
    assert report.outputs_wrong is not None


def test_compare_measures_the_worst_element() -> None:
    want = np.array([[1.0, 2.0], [np.nan, np.inf]], np.float32)
    assert compare("y", want.copy(), want) is None  # NaN meets NaN, inf inf
    got = want.copy()
    got[0, 1] = -2.0
    found = compare("y", got, want)
    assert isinstance(found, Mismatch)
    assert (found.index, found.got, found.expected, found.bad) == ((0, 1), -2.0, 2.0, 1)
    got[1, 1] = -np.inf
    found = compare("y", got, want)
    assert found is not None and found.index == (1, 1) and found.bad == 2
    assert compare("i", np.array([1, 2]), np.array([1, 3])) is not None
    shape = compare("y", np.zeros(3), np.zeros(4))
    assert shape is not None and "shape [3], expected [4]" in str(shape)


def test_refuses_what_it_cannot_check() -> None:
    with pytest.raises(BisectError, match="grad"):
        bisect(three_kernels(), grad=["w"])
    with pytest.raises(BisectError, match="takes 3 inputs, got 1"):
        bisect(three_kernels(), inputs=[np.zeros((4, 6), np.float32)])


@pytest.mark.slow
def test_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bisect", "softmax"]) == 0
    out = capsys.readouterr().out
    assert "agrees" in out and "graph pass fuse" in out
    monkeypatch.setattr(SimplifyPass, "apply", _flip_one_sub)
    path = "tests/data/bisect_sub.mlir"
    assert main(["bisect", path]) == 1
    out = capsys.readouterr().out
    assert "first wrong: graph pass 'simplify'" in out and "+" in out
    with pytest.raises(SystemExit, match="neither a file nor a built-in model"):
        main(["bisect", "no-such-model"])


def _softmax(z: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # type: ignore[no-any-return]


def _inputs(report_seed: int) -> list[np.ndarray[Any, Any]]:
    rng = np.random.default_rng(report_seed)
    return [
        rng.standard_normal(shape).astype(np.float32)
        for shape in ((4, 6), (6, 10), (4, 10))
    ]
