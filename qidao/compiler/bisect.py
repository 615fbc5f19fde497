"""Find the pass, kernel or schedule primitive that made a model's result wrong.

``bisect(model)`` runs the model down the pipeline and checks every step against an
independent reference, NumPy's evaluator of tg (``qidao.dialects.tg.numpy_eval``):

1. **graph passes**: the evaluator runs the input program, then the tg graph after
   each graph pass; the first pass after which an output differs is the culprit.
2. **kernels**: the model is compiled as ``qidao.compile`` compiles it (the same
   schedule: default, tuned ``records=`` or the user's ``schedule=``), then once
   more with every kernel's output exposed as an extra output of ``@main`` (the tg
   graph after the graph passes, each intermediate returned; the graph passes are
   not run again, and the schedule is the first compile's trace). The first kernel,
   in launch order, whose output differs from the evaluator's value of the same tg
   value is the culprit.
3. **schedule primitives**: for that kernel, the trace's primitives on it are
   applied one more at a time; the first after which the kernel is wrong is the
   culprit (none: the kernel is wrong as lowered).
4. **buffers**: if every kernel is right when it writes a buffer of its own but the
   outputs are wrong, the passes that share buffers (``plan-memory``,
   ``dedupe-kernels``) are switched off one at a time.

Differences are measured per element: ``|got - expected| <= atol * scale + rtol *
|expected|``, ``scale`` the largest finite ``|expected|`` of the tensor (at least
1); NaN must meet NaN, inf the same inf, integers and booleans exactly.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Operation, SSAValue

from qidao.compiler.compile import compile as compile_model
from qidao.compiler.host import ENTRY, entry_function
from qidao.compiler.models import load_model
from qidao.compiler.options import check_settings
from qidao.compiler.pipeline import run_stages, stages
from qidao.compiler.trace import TraceEntry, parse_trace
from qidao.dialects.attributes import KERNEL_ATTR, NUM_INPUTS_ATTR, OUTPUT_NAMES_ATTR
from qidao.dialects.tg.constant import ConstantOp
from qidao.dialects.tg.layout_ops import ContiguousOp, ShapeOp, TransposeOp
from qidao.dialects.tg.numpy_eval import EvaluationError, evaluate_function
from qidao.dialects.tg.types import is_row_major
from qidao.errors import QidaoError

Array = np.ndarray[Any, Any]

RTOL = 1e-3
ATOL = 1e-4
OPTIONS = ("fuse", "algo", "schedule", "records", "disable", "opt_level")
"""The ``qidao.compile`` options a bisection takes (training and checks change
the program's outputs, which the evaluator does not model). Every compile of a
bisection verifies the IR after each pass and primitive (``verify="each"``), which
also keeps it out of the compile cache: what runs is what the code compiles now."""

BUFFER_PASSES = ("plan-memory", "dedupe-kernels")
"""Passes that make kernels share buffers: step 4 switches them off."""


class BisectError(QidaoError, ValueError):
    """A model or option a bisection cannot take: the message says which and why."""


# --- differences ----------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    """Where a tensor differs most from its reference."""

    name: str
    index: tuple[int, ...]
    got: Any
    expected: Any
    error: float
    bad: int
    """Elements outside the tolerance."""
    total: int
    note: str = ""

    def __str__(self) -> str:
        if self.note:
            return f"{self.name}: {self.note}"
        at = ", ".join(map(str, self.index))
        return (
            f"{self.name}[{at}] = {self.got!r}, expected {self.expected!r} "
            f"(|error| {self.error:.4g}; {self.bad} of {self.total} element(s) "
            "outside the tolerance)"
        )


def compare(
    name: str, got: Any, expected: Any, rtol: float = RTOL, atol: float = ATOL
) -> Mismatch | None:
    """The worst element of ``got`` outside the tolerance of ``expected``, or
    None where every element is within it (see the module docstring)."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        note = f"shape {list(got.shape)}, expected {list(expected.shape)}"
        return Mismatch(name, (), None, None, float("inf"), got.size, got.size, note)
    if got.size == 0:
        return None
    if not np.issubdtype(expected.dtype, np.floating):
        wrong = got != expected
        error = np.where(wrong, 1.0, 0.0)
    else:
        g, e = got.astype(np.float64), expected.astype(np.float64)
        finite = np.isfinite(e)
        scale = max(1.0, float(np.abs(e[finite]).max())) if finite.any() else 1.0
        with np.errstate(all="ignore"):
            diff = np.abs(g - e)
            tolerance = atol * scale + rtol * np.abs(e)
            finite_both = finite & np.isfinite(g)
            special_same = (np.isnan(g) & np.isnan(e)) | (g == e)
            wrong = np.where(finite_both, ~(diff <= tolerance), ~special_same)
            error = np.where(wrong, np.nan_to_num(diff, nan=np.inf), 0.0)
    count = int(wrong.sum())
    if count == 0:
        return None
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(error)), got.shape))
    return Mismatch(
        name,
        index,
        got[index].item(),
        expected[index].item(),
        float(error[index]),
        count,
        got.size,
    )


def _first_mismatch(
    names: Sequence[str],
    got: Sequence[Any],
    expected: Sequence[Any],
    rtol: float,
    atol: float,
) -> Mismatch | None:
    for name, g, e in zip(names, got, expected, strict=True):
        found = compare(name, g, e, rtol, atol)
        if found is not None:
            return found
    return None


# --- the report -------------------------------------------------------------------


@dataclass(frozen=True)
class Culprit:
    """What broke the result."""

    kind: str
    """``pass`` (a graph pass), ``kernel`` (wrong as lowered), ``primitive`` (a
    schedule primitive on a kernel) or ``buffers`` (a pass that shares buffers)."""
    name: str
    """The pass, the kernel, or the primitive as Python (``s.split(...)``)."""
    op: str
    """The op: the tg op(s) the kernel computes, or the ops the pass changed."""
    before: str
    after: str
    """The IR before and after it (the kernel's function, or the whole module)."""
    mismatch: Mismatch
    kernel: str = ""

    def diff(self) -> str:
        """``before`` -> ``after`` as a unified diff."""
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                f"before {self.name}",
                f"after {self.name}",
            )
        )


@dataclass
class BisectReport:
    """Every step checked, in order, and the culprit (None: all agreed)."""

    model: str
    steps: list[tuple[str, str]] = field(default_factory=list)
    """(what was checked, ``ok`` / ``differs`` / ``not checked: <why>``)."""
    culprit: Culprit | None = None
    outputs_wrong: Mismatch | None = None
    """The compiled model's outputs against the input program's."""

    def __str__(self) -> str:
        lines = [f"qidao bisect {self.model}"]
        width = max((len(what) for what, _ in self.steps), default=0)
        lines += [f"  {what:<{width}}  {verdict}" for what, verdict in self.steps]
        c = self.culprit
        if c is None:
            lines.append(
                "every pass and kernel agrees with NumPy's evaluator of tg"
                if self.outputs_wrong is None
                else f"the outputs differ ({self.outputs_wrong}), but no step "
                "could be blamed"
            )
            return "\n".join(lines) + "\n"
        what = {
            "pass": f"graph pass '{c.name}'",
            "kernel": f"kernel '{c.name}' (wrong as lowered, before any schedule)",
            "primitive": f"schedule primitive {c.name} on kernel '{c.kernel}'",
            "buffers": f"pass '{c.name}' (buffers shared between kernels)",
        }[c.kind]
        lines += [
            "",
            f"first wrong: {what}",
            f"op:          {c.op}",
            f"worst:       {c.mismatch}",
            "",
        ]
        if c.kind == "kernel":
            lines += ["the tg op:", c.before, "", "its kernel, as lowered:", c.after]
        else:
            lines.append(c.diff() or f"(the IR is the same before and after {c.name})")
        return "\n".join(lines).rstrip("\n") + "\n"


# --- the bisection --------------------------------------------------------------


def bisect(
    model: Any,
    inputs: Sequence[Any] | None = None,
    *,
    seed: int = 0,
    threads: int | None = 1,
    mode: str = "graph",
    rtol: float = RTOL,
    atol: float = ATOL,
    name: str = "",
    **options: Any,
) -> BisectReport:
    """Check ``model`` pass by pass and kernel by kernel against NumPy's evaluator
    of tg (module docstring); ``inputs`` default to random ones (``seed``).
    ``options``: those of ``qidao.compile`` in :data:`OPTIONS` (a ``schedule``, tuned
    ``records``, ``disable``, ...)."""
    refused = sorted(set(options) - set(OPTIONS))
    if refused:
        raise BisectError(
            f"bisect takes the compile options {', '.join(OPTIONS)}; not "
            f"{', '.join(refused)} (training and checks change the outputs that the "
            "evaluator is compared with)"
        )
    from qidao.compiler.targets import get_target

    cpu = get_target("cpu")
    settings = check_settings(cpu.name, cpu.options, mode, threads, options)
    source = load_model(model)
    arrays = _inputs(source, inputs, seed)
    report = BisectReport(name or _describe(model))

    tg, expected = _graph_passes(source, arrays, settings, report, rtol, atol)
    if report.culprit is not None:
        return report
    _kernels(source, tg, arrays, expected, settings, report, rtol, atol)
    return report


def _describe(model: Any) -> str:
    return model if isinstance(model, str) else type(model).__name__


def _inputs(module: ModuleOp, given: Sequence[Any] | None, seed: int) -> list[Array]:
    fn = entry_function(module)
    types = [arg.type for arg in fn.body.block.args]
    if given is not None:
        if len(given) != len(types):
            raise BisectError(f"@{ENTRY} takes {len(types)} inputs, got {len(given)}")
        return [np.asarray(a) for a in given]
    rng = np.random.default_rng(seed)
    arrays = []
    for t in types:
        if not isinstance(t, TensorType):
            raise BisectError(f"@{ENTRY} takes {t}, not a tensor: give inputs")
        shape = tuple(t.get_shape())
        if any(d < 0 for d in shape):
            raise BisectError(
                f"@{ENTRY} takes {t}, with a dynamic dimension: give inputs"
            )
        dtype = _numpy_dtype(t)
        if np.issubdtype(dtype, np.floating):
            arrays.append(rng.standard_normal(shape).astype(dtype))
        elif dtype == np.bool_:
            arrays.append(rng.random(shape) < 0.5)
        else:
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
    return arrays


def _numpy_dtype(t: TensorType[Any]) -> np.dtype[Any]:
    from qidao.dialects.tg.types import dtype_name

    return np.dtype(dtype_name(t.get_element_type()))


def _evaluate(module: ModuleOp, arrays: Sequence[Array]) -> list[Array]:
    return evaluate_function(entry_function(module), arrays)


def _output_names(module: ModuleOp) -> list[str]:
    fn = entry_function(module)
    names = fn.attributes.get(OUTPUT_NAMES_ATTR)
    count = len(fn.function_type.outputs.data)
    if isinstance(names, ArrayAttr) and len(names.data) == count:
        return [n.data for n in names.data if isinstance(n, StringAttr)]
    return [f"output{i}" for i in range(count)]


def _graph_passes(
    source: ModuleOp,
    arrays: Sequence[Array],
    settings: Any,
    report: BisectReport,
    rtol: float,
    atol: float,
) -> tuple[ModuleOp, list[Array]]:
    """Step 1: the evaluator after every graph pass against the input program."""
    try:
        expected = _evaluate(source, arrays)
    except EvaluationError as err:
        raise BisectError(
            f"NumPy's evaluator cannot run the input program ({err}), so there is "
            "no reference to bisect against"
        ) from None
    names = _output_names(source)
    module = source.clone()
    previous = [str(module)]

    def check(pass_name: str, after: ModuleOp) -> None:
        if report.culprit is not None:
            return
        what = f"graph pass {pass_name}"
        try:
            got = _evaluate(after, arrays)
        except EvaluationError as err:
            report.steps.append((what, f"not checked: {err}"))
            return
        found = _first_mismatch(names, got, expected, rtol, atol)
        text = str(after)
        report.steps.append((what, "ok" if found is None else "differs"))
        if found is not None:
            report.culprit = Culprit(
                "pass", pass_name, _changed_ops(previous[0], text), previous[0], text,
                found,
            )  # fmt: skip
        previous[0] = text

    run_stages(
        module,
        stages("cpu", last="tg"),
        mode=settings.mode,
        settings=settings.values(),
        on_pass=check,
    )
    return module, expected


def _changed_ops(before: str, after: str) -> str:
    """The ops on the lines a pass removed or added, in order."""
    seen: dict[str, None] = {}
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line[:2] in ("- ", "+ "):
            for word in line[2:].replace("=", " ").split():
                if "." in word and word.split(".")[0] in ("tg", "func", "arith"):
                    seen.setdefault(word.rstrip(","), None)
                    break
    return ", ".join(seen) or "(no op line changed)"


# --- kernels ------------------------------------------------------------------------


def _kernels(
    source: ModuleOp,
    tg: ModuleOp,
    arrays: Sequence[Array],
    expected: Sequence[Array],
    settings: Any,
    report: BisectReport,
    rtol: float,
    atol: float,
) -> None:
    """Steps 2-4."""
    opts = {k: v for k, v in settings.options.items() if k in OPTIONS}
    opts["verify"] = "each"
    threads, mode = settings.threads, settings.mode
    compiled = compile_model(source, threads=threads, mode=mode, **opts)
    names = _output_names(source)
    wrong = _first_mismatch(names, _run(compiled, arrays), expected, rtol, atol)
    report.outputs_wrong = wrong
    report.steps.append(("compiled outputs", "ok" if wrong is None else "differs"))
    trace = parse_trace(compiled.stats.get("schedule") or "")

    exposed, ops = expose(tg)
    want = _evaluate(exposed, arrays)
    # the graph passes ran already: only the ones a program needs run again
    disable = sorted({*(opts.get("disable") or ()), *_graph_optional()})
    rest = {k: v for k, v in opts.items() if k not in ("schedule", "records")}
    rest["disable"] = disable

    def build(entries: Sequence[TraceEntry]) -> Any:
        return compile_model(
            exposed, threads=threads, mode=mode, **{**rest, "schedule": entries or None}
        )

    wide = build(trace)
    writers = _writers(wide.module("affine"), [at for _, at in ops])
    got = _run(wide, arrays)
    bad: tuple[int, Mismatch] | None = None
    for k, (op, at) in enumerate(ops):
        kernel = writers[k] or "(no kernel)"
        found = compare(f"{kernel} ({op.name})", got[at], want[at], rtol, atol)
        report.steps.append((f"kernel {kernel}", "ok" if found is None else "differs"))
        if found is not None:
            bad = k, found
            break
    if bad is None:
        if wrong is not None:
            tolerance = (rtol, atol)
            _buffers(
                source,
                arrays,
                expected,
                names,
                settings,
                opts,
                report,
                wrong,
                tolerance,
            )
        return
    k, found = bad
    at = ops[k][1]
    kernel = writers[k] or ""
    mine = [e for e in trace if e.kernel == kernel]
    others = [e for e in trace if e.kernel != kernel]
    label = _kernel_label(wide.module("affine"), kernel) or ops[k][0].name
    if not mine or _wrong_with(build(others), arrays, at, want, rtol, atol):
        report.culprit = Culprit(
            "kernel",
            kernel,
            label,
            str(ops[k][0]),
            _kernel_text(wide.module("affine"), kernel, ()),
            found,
            kernel,
        )
        return
    # the smallest prefix of the kernel's primitives after which it is wrong
    lo, hi = 0, len(mine)  # right with mine[:lo], wrong with mine[:hi]
    worst = found
    while hi - lo > 1:
        mid = (lo + hi) // 2
        miss = _wrong_with(build(others + mine[:mid]), arrays, at, want, rtol, atol)
        if miss is not None:
            hi, worst = mid, miss
        else:
            lo = mid
    affine = wide.module("affine")
    report.steps.append((f"primitives on {kernel}", f"{hi} of {len(mine)} applied"))
    report.culprit = Culprit(
        "primitive",
        mine[hi - 1].python(),
        label,
        _kernel_text(affine, kernel, others + mine[: hi - 1]),
        _kernel_text(affine, kernel, others + mine[:hi]),
        worst,
        kernel,
    )


def _wrong_with(
    compiled: Any,
    arrays: Sequence[Array],
    k: int,
    want: Sequence[Array],
    rtol: float,
    atol: float,
) -> Mismatch | None:
    return compare(f"output #{k}", _run(compiled, arrays)[k], want[k], rtol, atol)


def _run(compiled: Any, arrays: Sequence[Array]) -> list[Array]:
    """Call ``compiled`` with its outputs filled with NaN (integers: their least
    value, booleans: True) first, so that an element no kernel writes cannot pass
    for right by holding what the memory held before."""
    from qidao.runtime.executor import empty_aligned

    given: dict[int, Array] = {}
    for j, spec in enumerate(compiled.outputs):
        dtype = np.dtype(spec.dtype)
        out = empty_aligned(spec.shape, dtype)
        if np.issubdtype(dtype, np.floating):
            out.fill(np.nan)
        elif dtype == np.bool_:
            out.fill(True)
        else:
            out.fill(np.iinfo(dtype).min)
        given[j] = out
    return list(compiled.call_into(arrays, given))


def _graph_optional() -> list[str]:
    tg_stage = next(s for s in stages("cpu") if s.name == "tg")
    return [step.name for step in tg_stage.steps if step.optional]


def expose(tg: ModuleOp) -> tuple[ModuleOp, list[tuple[Operation, int]]]:
    """A copy of ``tg`` whose ``@main`` also returns every value a kernel computes
    (a strided one through ``tg.contiguous``); and, in launch order, each such op
    with the position of its value among ``@main``'s outputs."""
    module = tg.clone()
    fn = entry_function(module)
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    outputs: list[SSAValue] = list(ret.operands)
    found: list[tuple[Operation, int]] = []
    for op in list(fn.body.block.ops):
        if isinstance(op, ConstantOp | ShapeOp | TransposeOp | func.ReturnOp):
            continue  # no kernel: a global, a view or the return
        if len(op.results) != 1 or not isinstance(op.results[0].type, TensorType):
            continue
        value: SSAValue = op.results[0]
        if value in ret.operands:
            found.append((op, list(ret.operands).index(value)))
            continue
        assert isinstance(value.type, TensorType)
        if not is_row_major(value.type):
            copy = ContiguousOp(value)
            fn.body.block.insert_op_before(copy, ret)
            value = copy.results[0]
        found.append((op, len(outputs)))
        outputs.append(value)
    extra = len(outputs) - len(ret.operands)
    new_ret = func.ReturnOp(*outputs)
    fn.body.block.insert_op_before(new_ret, ret)
    fn.body.block.erase_op(ret)
    fn.function_type = FunctionType.from_lists(
        fn.function_type.inputs.data, [v.type for v in outputs]
    )
    names = _output_names(tg) + [f"bisect{k}" for k in range(extra)]
    fn.attributes[OUTPUT_NAMES_ATTR] = ArrayAttr([StringAttr(n) for n in names])
    return module, found


def _calls(host: func.FuncOp) -> list[func.CallOp]:
    return [op for op in host.body.walk() if isinstance(op, func.CallOp)]


def _writers(affine: ModuleOp, positions: Sequence[int]) -> list[str | None]:
    """The kernel that computes the output at each of ``positions``: the first
    call that takes its buffer, or, where that is a copy made to expose a strided
    value, the first call that takes the copy's input."""
    host = entry_function(affine)
    inputs = host.attributes[NUM_INPUTS_ATTR]
    assert isinstance(inputs, IntegerAttr)
    start = inputs.value.data
    calls = _calls(host)

    def first_user(value: SSAValue) -> func.CallOp | None:
        return next((c for c in calls if value in c.operands), None)

    labels = {
        op.sym_name.data: op.attributes.get(KERNEL_ATTR)
        for op in affine.ops
        if isinstance(op, func.FuncOp)
    }
    found: list[str | None] = []
    for k in positions:
        call = first_user(host.body.block.args[start + k])
        if call is not None and labels.get(call.callee.string_value()) == StringAttr(
            "tg.contiguous"
        ):
            source = first_user(call.operands[0])
            call = source if source is not None and source is not call else call
        found.append(call.callee.string_value() if call is not None else None)
    return found


def _kernel_label(affine: ModuleOp, kernel: str) -> str:
    for op in affine.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == kernel:
            label = op.attributes.get(KERNEL_ATTR)
            return label.data if isinstance(label, StringAttr) else ""
    return ""


def _kernel_text(affine: ModuleOp, kernel: str, entries: Sequence[TraceEntry]) -> str:
    """The kernel's function after ``entries`` of a trace are applied."""
    from qidao.compiler.schedule import Schedule

    module = affine.clone()
    Schedule.replay(module, list(entries), verify_each=False)
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == kernel:
            return str(op)
    return ""


def _buffers(
    source: ModuleOp,
    arrays: Sequence[Array],
    expected: Sequence[Array],
    names: Sequence[str],
    settings: Any,
    opts: Mapping[str, Any],
    report: BisectReport,
    wrong: Mismatch,
    tolerance: tuple[float, float],
) -> None:
    """Step 4: which buffer-sharing pass, switched off, makes the outputs right."""
    for pass_name in BUFFER_PASSES:
        disable = sorted({*(opts.get("disable") or ()), pass_name})
        compiled = compile_model(
            source,
            threads=settings.threads,
            mode=settings.mode,
            **{**opts, "disable": disable},
        )
        fixed = (
            _first_mismatch(names, _run(compiled, arrays), expected, *tolerance) is None
        )
        report.steps.append(
            (f"without {pass_name}", "outputs right" if fixed else "still differs")
        )
        if fixed:
            with_it = compile_model(source, threads=settings.threads, **opts)
            report.culprit = Culprit(
                "buffers",
                pass_name,
                "buffers shared between kernels",
                compiled.ir("affine"),
                with_it.ir("affine"),
                wrong,
            )
            return
