"""The pipeline as data: each target's stages, in order, each a list of passes.

``qidao.compile`` runs a target's stages with one loop, :func:`run_stages`, the same
for every target; ``qidao compile --emit STAGE`` and ``compiled.ir(STAGE)`` take
their names from here, and an unknown name is rejected before any work is done.

Adding a pass that ``qidao.compile`` runs is one :class:`Step` in one stage below:
the step says when the pass runs (``graph_only``: not in eager mode; ``when``: only
when a compile option is on) and which compile settings it takes as options. The
stage tables of ``docs/pipeline.md`` are :func:`stage_table` of this data, written
there by ``qidao pipeline --write docs/pipeline.md``, and a test keeps them equal.

The stages of every target begin with the four of :data:`COMMON_STAGES`; the
``schedule`` stage has no pass of its own: the schedule (``schedule=``, a default
or a tuned record) runs at its end, through the ``schedule`` hook of
:func:`run_stages`. A *text* stage (``llvm``, ``cuda``, ...) is made by the target
from the last IR stage (``qidao.compiler.targets``), not by passes.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from qidao.compiler.context import make_context, make_pass
from qidao.compiler.debug import emit
from qidao.compiler.print_ir import IRPrinter, PrintIR
from qidao.errors import QidaoError
from qidao.passes import pass_modules

MODES: tuple[str, ...] = ("graph", "eager")
"""``graph``: the whole optimized pipeline; ``eager``: every tg op its own kernel and
buffer (the steps marked ``graph_only`` are skipped), the define-by-run picture."""

SCHEDULE_STAGE = "schedule"
"""The stage at whose end the schedule runs: ``ir("affine")`` shows the loops before
it, ``ir("schedule")`` after."""


@dataclass(frozen=True)
class Step:
    """One pass of a stage, and when it runs."""

    name: str
    """The pass, by its registered name (qidao's, else xDSL's)."""
    graph_only: bool = False
    """An optimization of the whole program: eager mode skips it."""
    when: str | None = None
    """The compile option that must be true for the pass to run (``fuse``, ...)."""
    options: tuple[str, ...] = ()
    """Compile settings handed to the pass as the options of the same name;
    ``"wrt=grad"`` hands the setting ``grad`` to the pass option ``wrt``."""
    needed: str = ""
    """Why the pass cannot be skipped (``disable=``); empty: it can be."""

    @property
    def optional(self) -> bool:
        """Whether ``disable=[name]`` may skip it: an optimization, which the
        program is right without."""
        return self.graph_only or (self.when is None and not self.needed)


@dataclass(frozen=True)
class Stage:
    """A named level of the tower: the IR after its steps, or text a target makes."""

    name: str
    steps: tuple[Step, ...]
    summary: str
    made_by: str = ""
    """What makes a stage without passes (a frontend, the emitter, LLVM)."""
    text: bool = False
    """Text made by the target (``llvm``, ``asm``, ``cuda``), not IR made by passes."""

    @property
    def passes(self) -> tuple[str, ...]:
        return tuple(step.name for step in self.steps)


def _graph(name: str, when: str | None = None) -> Step:
    return Step(name, graph_only=True, when=when)


def _needed(name: str, why: str, options: tuple[str, ...] = ()) -> Step:
    return Step(name, needed=why, options=options)


COMMON_STAGES: tuple[Stage, ...] = (
    Stage("input", (), "the tg graph as imported", made_by="a frontend"),
    Stage(
        "tg",
        (
            Step("autodiff", when="grad", options=("wrt=grad",)),
            _needed(
                "expand-custom",
                "a custom op has no lowering of its own: this pass puts its body in "
                "its place",
            ),
            Step(
                "apply-optimizer", when="optimizer", options=("wrt=grad", "optimizer")
            ),
            Step("insert-checks", when="checks"),
            _graph("fold-constants"),
            _graph("simplify"),
            _graph("collapse-unary"),
            _graph("cse"),
            _graph("bf16-matmul", when="bf16"),
            _graph("pack-vnni", when="vnni"),
            _graph("lift-conv1d"),
            _graph("layout"),
            Step("select-conv-algo", graph_only=True, options=("algo", "threads")),
            Step("materialize-padding"),
            _graph("pack-panels", when="pack_weights"),
            _graph("dce"),
            _graph("sink-reshape", when="vnni"),
            Step(
                "fuse",
                graph_only=True,
                when="fuse",
                options=("integer_epilogues=vnni",),
            ),
            Step("checkpoint", when="checkpoint", options=("checkpoint",)),
            _graph("collapse-matmul-batch"),
        ),
        "the tg graph after graph passes",
    ),
    Stage(
        "affine",
        (
            _needed(
                "convert-tg-to-affine",
                "it makes the kernels: below it nothing knows a tg op",
            ),
            _needed(
                "mark-symbolic-loops",
                "a model with symbolic dimensions: without it every loop would run "
                "to the capacity, whatever the call's size",
            ),
            # the CPU's option (its TrainingStep hands the weights as outputs)
            Step("update-in-place", when="update_in_place", options=("wrt=grad",)),
            _graph("plan-memory"),
            Step("dedupe-kernels"),
        ),
        "host `@main` + one named loop nest per kernel (identical ones merged), "
        "buffers planned",
    ),
    Stage(
        SCHEDULE_STAGE,
        (),
        "the kernels' loops after the schedule (default, tuned or `schedule=`; "
        "the same as `affine` with `schedule=None`)",
        made_by="the schedule primitives",
    ),
)
"""The stages every target shares: the graph, its kernels, their schedule."""

PIPELINES: dict[str, tuple[Stage, ...]] = {
    "cpu": (
        *COMMON_STAGES,
        Stage(
            "scf",
            (
                _needed(
                    "bound-symbolic-loops",
                    "a model with symbolic dimensions: its loops run to the call's "
                    "size from here on",
                ),
                Step("instrument-kernels", when="profile"),
                _needed(
                    "expand-math",
                    "LLVM has no exp/log/tanh/erf of its own for vectors: this pass "
                    "writes them as polynomials",
                    options=("ldexp",),
                ),
                _needed("lower-affine", "LLVM has no affine loops"),
                _needed(
                    "convert-parallel-to-gomp",
                    "LLVM has no parallel loop: this pass makes them calls into "
                    "libgomp (threads=1 runs them on one thread)",
                    options=("threads",),
                ),
            ),
            "`scf.for` loops over index arithmetic; exp/log/tanh/erf as polynomials; "
            "parallel loops outlined",
        ),
        Stage(
            "cf",
            (_needed("lower-scf-to-cf", "LLVM has no structured loops"),),
            "basic blocks and branches",
        ),
        Stage(
            "llvm-dialect",
            (
                _needed("convert-to-llvm", "the emitter prints only the llvm dialect"),
                _needed(
                    "reconcile-unrealized-casts",
                    "the casts convert-to-llvm leaves have no LLVM IR",
                ),
                Step("dce"),
            ),
            "xDSL's llvm dialect, memrefs as bare pointers",
        ),
        Stage(
            "llvm",
            (),
            "LLVM IR text, as handed to the JIT",
            made_by="`qidao/compiler/targets/cpu/emit.py`",
            text=True,
        ),
        Stage(
            "llvm-opt",
            (),
            "LLVM IR after -O3 for the host CPU",
            made_by="llvmlite",
            text=True,
        ),
        Stage("asm", (), "host machine code", made_by="llvmlite", text=True),
    ),
    "cuda": (
        *COMMON_STAGES,
        Stage(
            "cuda",
            (),
            "CUDA C and, as comments, the launch plan",
            made_by="`qidao/compiler/targets/cuda/emit/`",
            text=True,
        ),
    ),
}
"""Every target's stages, in order: IR stages, then the text stages it makes."""

TARGETS: tuple[str, ...] = tuple(PIPELINES)


# --- reading the data -----------------------------------------------------------


def check_target(target: object) -> str:
    """``target`` if it is one of ``TARGETS``, else a ValueError listing them."""
    if target not in PIPELINES:
        raise ValueError(
            f"unknown target {target!r}; the targets are: {', '.join(TARGETS)}"
        )
    assert isinstance(target, str)
    return target


def check_mode(mode: object) -> str:
    """``mode`` if it is one of ``MODES``, else a ValueError listing them."""
    if mode not in MODES:
        raise ValueError(
            f"unknown mode {mode!r}; the modes are: {', '.join(MODES)} "
            "(graph: the optimized pipeline; eager: one kernel per tg op)"
        )
    assert isinstance(mode, str)
    return mode


def stages(
    target: str = "cpu", first: str | None = None, last: str | None = None
) -> tuple[Stage, ...]:
    """The stages of ``target`` from ``first`` to ``last`` (both included;
    default: all)."""
    pipeline = PIPELINES[check_target(target)]
    names = [stage.name for stage in pipeline]
    start = names.index(check_stage(first, target)) if first is not None else 0
    stop = names.index(check_stage(last, target)) + 1 if last is not None else None
    return pipeline[start:stop]


def without(pipeline: Sequence[Stage], *passes: str) -> tuple[Stage, ...]:
    """``pipeline`` with the steps of ``passes`` left out (to see what they do)."""
    return tuple(
        replace(stage, steps=tuple(s for s in stage.steps if s.name not in passes))
        for stage in pipeline
    )


def stage_names(target: str = "cpu") -> tuple[str, ...]:
    """The names of ``target``'s stages, in order."""
    return tuple(stage.name for stage in PIPELINES[check_target(target)])


ALL_STAGE_NAMES: tuple[str, ...] = tuple(
    dict.fromkeys(name for target in TARGETS for name in stage_names(target))
)
"""Every stage of every target, once each (``qidao compile --emit`` choices)."""


def check_stage(name: str, target: str = "cpu") -> str:
    """``name`` if it is a stage of ``target``, else a ValueError listing them."""
    names = stage_names(target)
    if name not in names:
        raise ValueError(
            f"unknown stage '{name}' for target '{target}'; the stages are: "
            f"{', '.join(names)}"
        )
    return name


def active_steps(stage: Stage, mode: str, settings: Mapping[str, Any]) -> list[Step]:
    """The steps of ``stage`` that run in ``mode`` with these compile settings (a
    step whose ``when`` option is absent from them does not run, nor one the
    setting ``disable`` names)."""
    return [step for step in stage.steps if skip_reason(step, mode, settings) is None]


def skip_reason(step: Step, mode: str, settings: Mapping[str, Any]) -> str | None:
    """Why ``step`` does not run in ``mode`` with these settings; None: it runs."""
    check_mode(mode)
    if step.graph_only and mode == "eager":
        return 'mode="eager" skips it'
    if step.when is not None and not settings.get(step.when, False):
        return f"it runs only with `{_WHEN_SHOWN.get(step.when, step.when + '=True')}`"
    if step.name in (settings.get("disable") or ()):
        return "disable= names it"
    return None


def pass_names(target: str = "cpu") -> tuple[str, ...]:
    """Every pass the stages of ``target`` may run, once each."""
    return tuple(
        dict.fromkeys(
            step.name
            for stage in PIPELINES[check_target(target)]
            for step in stage.steps
        )
    )


def check_disable(names: object, target: str = "cpu") -> tuple[str, ...]:
    """``disable``: the optional passes of ``target`` to skip, or the error saying
    which name is unknown, or why a pass cannot be skipped."""
    if names is None:
        return ()
    if isinstance(names, str):
        names = [names]
    if not isinstance(names, list | tuple) or not all(
        isinstance(n, str) for n in names
    ):
        raise TypeError(f"disable must be a list of pass names, got {names!r}")
    steps = {
        step.name: step
        for stage in PIPELINES[check_target(target)]
        for step in stage.steps
    }
    for name in names:
        step = steps.get(name)
        if step is None:
            close = difflib.get_close_matches(name, list(steps), n=3)
            raise ValueError(
                not_in_pipeline(name, target)
                or f"disable names unknown pass {name!r}; "
                + (
                    f"did you mean {' or '.join(map(repr, close))}?"
                    if close
                    else f"the passes of target {target!r} are: {', '.join(steps)}"
                )
            )
        for same in (s for stage in PIPELINES[target] for s in stage.steps):
            if same.name == name and not same.optional:
                raise ValueError(f"disable={[name]!r}: {_why_needed(same)}")
    return tuple(dict.fromkeys(names))


def not_in_pipeline(name: str, target: str = "cpu") -> str | None:
    """What to do about ``name`` when it is a registered pass that ``target``'s
    pipeline does not run (a pass just written, say); None otherwise."""
    if name not in pass_modules() or name in pass_names(target):
        return None
    if pass_modules()[name].startswith("qidao.passes.schedule."):
        return (
            f"{name!r} is a schedule primitive: it runs inside the schedule "
            "(schedule=, records= or the default), which the pass flags name "
            "'schedule'"
        )
    return (
        f"pass {name!r} is registered ({pass_modules()[name]}) but the {target} "
        "pipeline does not run it: add a Step for it to a stage in "
        "qidao/compiler/pipeline.py (docs/tutorial/03-into-the-pipeline.md), or run "
        f"it alone with qidao-opt -p {name}"
    )


def optional_passes(target: str = "cpu") -> tuple[str, ...]:
    """The passes ``disable=`` may skip on ``target``."""
    return tuple(
        name
        for name in pass_names(target)
        if all(
            s.optional
            for stage in PIPELINES[target]
            for s in stage.steps
            if s.name == name
        )
    )


def _why_needed(step: Step) -> str:
    if step.when is not None:
        shown = _WHEN_SHOWN.get(step.when, step.when + "=True")
        return (
            f"'{step.name}' runs only because `{shown}` asks for it: leave that "
            "option out instead"
        )
    return f"'{step.name}' cannot be skipped: {step.needed}"


def stage_table(target: str = "cpu") -> str:
    """The stages of ``target`` as the Markdown table of ``docs/pipeline.md``, and
    the passes that eager mode skips."""
    pipeline = PIPELINES[check_target(target)]
    rows = ["| stage | the IR | made by |", "|---|---|---|"]
    for stage in pipeline:
        made_by = ", ".join(_step_cell(step) for step in stage.steps) or stage.made_by
        if stage.name == SCHEDULE_STAGE:  # every pass in qidao/passes/schedule/
            primitives = [n for n, m in pass_modules().items() if ".schedule." in m]
            made_by += ": " + ", ".join(f"`{name}`" for name in primitives)
        rows.append(f"| `{stage.name}` | {stage.summary} | {made_by} |")
    skipped = dict.fromkeys(
        step.name for stage in pipeline for step in stage.steps if step.graph_only
    )
    rows.append("")
    rows.append(
        '`mode="eager"` skips ' + ", ".join(f"`{name}`" for name in skipped) + "."
    )
    return "\n".join(rows) + "\n"


_WHEN_SHOWN = {
    "grad": "grad=[...]",
    "optimizer": "optimizer=...",
    "checkpoint": "checkpoint=...",
    "update_in_place": "optimizer=...` on the CPU, `update_in_place=True",
    "vnni": "vnni=None` (the default) on a CPU with AVX-512 VNNI, or `vnni=True",
    "bf16": "bf16=None` (the default) on a CPU with AVX512_BF16, or `bf16=True",
    "pack_weights": "pack_weights=None` (the default) under the default schedule, "
    "or `pack_weights=True",
}
"""How the stage table shows a ``when`` option that is not a flag."""


def _step_cell(step: Step) -> str:
    if not step.when:
        return f"`{step.name}`"
    return f"`{step.name}` (with `{_WHEN_SHOWN.get(step.when, step.when + '=True')}`)"


# --- running it -----------------------------------------------------------------

ScheduleHook = Callable[[ModuleOp, bool], None]
"""Applies the schedule to the module in place; the flag: verify every primitive."""
PassHook = Callable[[str, ModuleOp], None]
"""Sees the module after a pass (by its name) has run; must not change it."""


def run_stages(
    module: ModuleOp,
    pipeline: Sequence[Stage],
    *,
    mode: str = "graph",
    settings: Mapping[str, Any] | None = None,
    debug: int = 0,
    verify: str = "stage",
    schedule: ScheduleHook | None = None,
    seconds: dict[str, float] | None = None,
    keep: Collection[str] | None = None,
    print_ir: PrintIR | None = None,
    on_pass: PassHook | None = None,
) -> dict[str, ModuleOp]:
    """Run the IR stages of ``pipeline`` on ``module`` in place, in order, until the
    first text stage; return a copy of the module after each stage in ``keep``
    (default: every stage).

    ``settings`` holds the compile options that steps ask for (``fuse``,
    ``profile``, ``threads``, ...); a step whose ``when`` option is absent does not
    run, and an absent pass option keeps the pass's default. ``verify`` is ``"stage"`` (verify at the end of
    each stage that ran a pass) or ``"each"`` (after every pass and, through the
    hook, every schedule primitive); a failure is an internal error naming the stage
    or the pass, and a pass that fails on an internal check is one too
    (:func:`run_pass`). ``debug`` (``qidao.compiler.debug``): 2 prints the IR after
    every stage, 3 after every pass; ``print_ir`` prints the IR around the passes
    it names (``qidao.compiler.print_ir``). ``on_pass(name, module)`` sees the
    module after every pass that ran (and after the schedule, as ``"schedule"``):
    ``qidao bisect`` checks each. ``seconds`` gets the time of each stage.
    """
    check_mode(mode)
    each = verify == "each"
    values = settings or {}
    ctx = make_context()
    snapshots: dict[str, ModuleOp] = {}
    printer = IRPrinter(print_ir or PrintIR(), emit)
    printer.start(module)
    if debug >= 2 and pipeline and pipeline[0].name == "input":
        emit("input", str(module))
    for stage in pipeline:
        if stage.text:
            break
        start = time.perf_counter()
        printer.stage(stage.name)
        steps = active_steps(stage, mode, values)
        for step in stage.steps:
            if step not in steps:
                printer.skipped(step.name, skip_reason(step, mode, values) or "")
        for step in steps:
            options = _pass_options(step, values)
            printer.before(step.name, module)
            run_pass(make_pass(step.name, **options), step.name, ctx, module)
            if each:
                verify_module(module, f"pass '{step.name}'")
            if debug >= 3:
                emit(f"after pass {step.name}", str(module))
            printer.after(step.name, module)
            if on_pass is not None:
                on_pass(step.name, module)
        if steps and not each:
            verify_module(
                module,
                f"stage '{stage.name}' (passes: "
                f"{', '.join(step.name for step in steps)}; verify='each' names the "
                "pass)",
            )
        if stage.name == SCHEDULE_STAGE and schedule is not None:
            printer.before(SCHEDULE_STAGE, module)
            schedule(module, each)
            printer.after(SCHEDULE_STAGE, module)
            if on_pass is not None:
                on_pass(SCHEDULE_STAGE, module)
        if seconds is not None:
            seconds[stage.name] = time.perf_counter() - start
        if keep is None or stage.name in keep:
            snapshots[stage.name] = module.clone()
        if debug >= 2 and stage.name != "input":
            emit(f"stage {stage.name}", str(module))
    return snapshots


def _pass_options(step: Step, values: Mapping[str, Any]) -> dict[str, Any]:
    """The options ``step``'s pass gets from the compile settings ``values``."""
    options: dict[str, Any] = {}
    for spec in step.options:
        option, _, setting = spec.partition("=")
        setting = setting or option
        if setting in values:
            value = values[setting]
            if hasattr(value, "pass_options"):  # an object: its fields as options
                options.update(value.pass_options())
            else:
                options[option] = tuple(value) if isinstance(value, list) else value
    return options


class InternalCompilerError(QidaoError, RuntimeError):
    """A bug in qidao, not in the user's model: a pass built an op that does not
    verify, broke one of its own assertions, or left IR that does not verify.

    ``where`` names what ran (``"pass 'layout'"``, or a stage when IR is verified
    per stage), ``op`` the operation that failed (``"tg.conv2d"``) when the
    traceback shows it; the original exception is ``__cause__``."""

    def __init__(self, message: str, where: str, op: str | None = None) -> None:
        super().__init__(message)
        self.where = where
        self.op = op


INTERNAL_ERRORS: tuple[type[Exception], ...] = (VerifyException, AssertionError)
"""What a pass raises only when it has a bug: an op it built that does not verify,
a broken invariant. Errors a pass raises on purpose for the user (a lowering it does
not support, an illegal schedule) pass through :func:`run_pass` unchanged."""


def run_pass(p: ModulePass, name: str, ctx: Context, module: ModuleOp) -> None:
    """Apply ``p`` (the pass ``name``) to ``module``; an internal error becomes an
    :class:`InternalCompilerError` naming the pass and the op."""
    try:
        p.apply(ctx, module)
    except INTERNAL_ERRORS as err:
        op = failing_op(err)
        on = f" on {op}" if op else ""
        raise InternalCompilerError(
            f"internal error: pass '{name}' failed{on}: {err}", f"pass '{name}'", op
        ) from err


def verify_module(module: ModuleOp, after: str) -> None:
    """Verify ``module``; a failure is an internal error saying what ran last."""
    try:
        module.verify()
    except Exception as err:
        raise InternalCompilerError(
            f"internal error: IR does not verify after {after}: {err}",
            after,
            failing_op(err),
        ) from err


def failing_op(err: BaseException) -> str | None:
    """The name of the innermost operation on ``err``'s traceback: the op whose
    constructor or verifier raised it (``None`` when no op method is on it)."""
    name = None
    tb = err.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, Operation):
            name = owner.name
        tb = tb.tb_next
    return name
