"""A schedule's trace: the primitives applied, as entries that print and parse back as
Python (``s.split("k", "i", 4)``) and as a ``qidao-opt`` pipeline
(``split{kernel="k" loop="i" factor=4}``).

Both forms come from two facts about each primitive, and nothing else: its
``Schedule`` method's signature (the Python form's arguments) and its pass's fields
(the pipeline form's options), matched by name. A method's parameter names *are*
its pass's field names; a ``*loops`` parameter is one field holding the names
joined by commas. A method becomes a primitive with :func:`primitive`, which
records the pass it runs; so adding a primitive is its pass and one ``Schedule``
method, and nothing here changes.

Every entry is checked before its pass runs or its text is accepted: a primitive
that does not exist, a wrong number of arguments or an argument of the wrong type
(``s.split(k, "i", True)``) is an error naming the primitive and the argument, never
an error from deep inside a pass or from LLVM.
"""

from __future__ import annotations

import ast
import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline

from qidao.errors import QidaoError
from qidao.passes import all_passes


@dataclass(frozen=True)
class Primitive:
    """A schedule primitive: its ``Schedule`` method and the pass that method runs."""

    method: str
    pass_name: str
    params: tuple[inspect.Parameter, ...]
    """The method's parameters after ``self``: ``kernel`` first, then the pass's
    other fields in the order the method takes them."""

    def pass_class(self) -> type[ModulePass]:
        return all_passes()[self.pass_name]()

    def expects_int(self, param: str) -> bool:
        """Whether the pass field ``param`` is an integer (else it holds names)."""
        return param in _int_fields(self.pass_class())


@functools.cache
def _int_fields(pass_class: type[ModulePass]) -> frozenset[str]:
    hints = typing.get_type_hints(pass_class)
    return frozenset(name for name, hint in hints.items() if hint is int)


PRIMITIVES: dict[str, Primitive] = {}
"""Every schedule primitive by its ``Schedule`` method's name, in definition order."""

Method = TypeVar("Method", bound=Callable[..., Any])


def primitive(pass_name: str) -> Callable[[Method], Method]:
    """Make a ``Schedule`` method the primitive that runs the pass ``pass_name``.

    A call first checks its arguments, applies the pass to the module and records a
    :class:`TraceEntry` (``Schedule.run``); then the method's own body runs, to
    compute what the call returns (the names of the loops it made)."""

    def register(method: Method) -> Method:
        signature = inspect.signature(method)
        params = tuple(signature.parameters.values())[1:]  # after self
        PRIMITIVES[method.__name__] = Primitive(method.__name__, pass_name, params)

        many = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)

        @functools.wraps(method)
        def run_then_return(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                bound = signature.bind(self, *args, **kwargs)
            except TypeError as err:
                raise TypeError(f"{method.__name__}(): {err}") from None
            bound.apply_defaults()
            values: list[Any] = []
            for name, value in list(bound.arguments.items())[1:]:
                values.extend(value if name == many else (value,))
            self.run(TraceEntry(method.__name__, values[0], tuple(values[1:])))
            return method(self, *args, **kwargs)

        return typing.cast(Method, run_then_return)

    return register


class TraceError(QidaoError, ValueError):
    """A schedule trace (Python or pipeline text) that does not parse, or names no
    primitive: the message says which line or pass and what was expected."""


@dataclass(frozen=True)
class TraceEntry:
    """One primitive application: the method, its kernel and its arguments."""

    method: str
    kernel: str
    args: tuple[str | int, ...]

    def primitive(self) -> Primitive:
        if self.method not in PRIMITIVES:
            raise TraceError(
                f"'{self.method}' is not a schedule primitive; the primitives are: "
                f"{', '.join(PRIMITIVES)}"
            )
        return PRIMITIVES[self.method]

    def python(self, var: str = "s") -> str:
        """``s.split("main_k0_fused", "i0", 4)``."""
        args = ", ".join(_literal(a) for a in (self.kernel, *self.args))
        return f"{var}.{self.method}({args})"

    def problem(self) -> str | None:
        """What is wrong with the arguments (count or type), or None."""
        prim = self.primitive()
        if not isinstance(self.kernel, str):
            return f"the kernel must be a name (a string), got {self.kernel!r}"
        args = list(self.args)
        for param in prim.params[1:]:
            if param.kind is inspect.Parameter.VAR_POSITIONAL:
                given, args = args, []
            elif args:
                given = [args.pop(0)]
            elif param.default is inspect.Parameter.empty:
                return f"'{param.name}' is missing"
            else:
                continue
            want = int if prim.expects_int(param.name) else str
            for value in given:
                if type(value) is not want:
                    kind = "an integer" if want is int else "a name (a string)"
                    return f"'{param.name}' must be {kind}, got {value!r}"
        if args:
            return f"{len(args)} argument(s) too many: {', '.join(map(repr, args))}"
        return None

    def options(self) -> dict[str, str | int]:
        """The pass's options, by field name."""
        values: dict[str, str | int] = {"kernel": self.kernel}
        args = list(self.args)
        for param in self.primitive().params[1:]:
            if param.kind is inspect.Parameter.VAR_POSITIONAL:
                values[param.name] = ",".join(map(str, args))
                args = []
            elif args:
                values[param.name] = args.pop(0)
        return values

    def make_pass(self) -> ModulePass:
        """The pass of this entry, built from its options."""
        return self.primitive().pass_class()(**self.options())

    def pass_spec(self) -> str:
        """``split{kernel="main_k0_fused" loop="i0" factor=4}``."""
        fields = " ".join(f"{k}={_literal(v)}" for k, v in self.options().items())
        return f"{self.primitive().pass_name}{{{fields}}}"

    def __str__(self) -> str:
        return self.python()


def _literal(value: str | int) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


# --- parsing ----------------------------------------------------------------------


def parse_trace(trace: str | Sequence[TraceEntry]) -> list[TraceEntry]:
    """Trace entries from entries, Python text (``s.split("k", "i", 4)`` lines) or a
    pipeline (``split{kernel="k" loop="i" factor=4},...``); every entry checked.
    Text that is neither is a ValueError saying what was expected."""
    if not isinstance(trace, str):
        given: list[object] = list(trace) if isinstance(trace, Sequence) else [trace]
        entries = [e for e in given if isinstance(e, TraceEntry)]
        if len(entries) != len(given):
            raise TypeError(
                "a schedule is a function of a Schedule, the text of a trace or a "
                f"list of TraceEntry; got {type(trace).__name__}"
            )
        return entries
    lines = [
        line.strip()
        for line in trace.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    if not lines:
        return []
    if "(" in lines[0].split("{")[0]:
        return _parse_python("\n".join(lines))
    return _parse_pipeline(" ".join(lines))


def _parse_python(text: str) -> list[TraceEntry]:
    """Each statement must be ``<name>.<method>("kernel", literal, ...)``; nothing
    is executed."""
    try:
        statements = ast.parse(text).body
    except SyntaxError as err:
        raise TraceError(f"the trace is not Python: {err}") from None
    entries: list[TraceEntry] = []
    for statement in statements:
        call = statement.value if isinstance(statement, ast.Expr | ast.Assign) else None
        if (
            not isinstance(call, ast.Call)
            or not isinstance(call.func, ast.Attribute)
            or call.func.attr not in PRIMITIVES
            or call.keywords
            or not call.args
        ):
            raise TraceError(
                f'line {statement.lineno}: expected s.<primitive>("kernel", ...), '
                f"one of {', '.join(PRIMITIVES)}; got: {ast.unparse(statement)}"
            )
        try:
            kernel, *args = [ast.literal_eval(arg) for arg in call.args]
        except ValueError:
            raise TraceError(
                f"line {statement.lineno}: the arguments must be literals; got: "
                f"{ast.unparse(statement)}"
            ) from None
        entry = TraceEntry(call.func.attr, kernel, tuple(args))
        problem = entry.problem()
        if problem is not None:
            raise TraceError(f"line {statement.lineno}: {entry.method}: {problem}")
        entries.append(entry)
    return entries


def _parse_pipeline(text: str) -> list[TraceEntry]:
    by_pass = {prim.pass_name: prim for prim in PRIMITIVES.values()}
    try:
        specs = list(parse_pipeline(text))
    except BaseException as err:  # xDSL's ArgSpecParseError is a BaseException
        if not type(err).__name__.endswith("ParseError"):
            raise
        raise TraceError(
            "the trace is neither Python (s.split(...) lines) nor a pipeline "
            f"(split{{...}},...): {err}"
        ) from None
    entries: list[TraceEntry] = []
    for spec in specs:
        if spec.name not in by_pass:
            raise TraceError(
                f"'{spec.name}' is not a schedule primitive's pass; expected one of "
                f"{', '.join(by_pass)}"
            )
        prim = by_pass[spec.name]
        options = spec.normalize_parameter_names().parameters
        unknown = set(options) - {p.name for p in prim.params}
        if unknown:
            raise TraceError(
                f"{spec.name}: unknown option(s) {', '.join(sorted(unknown))}; it "
                f"takes {', '.join(p.name for p in prim.params)}"
            )
        values: list[Any] = []
        for param in prim.params:
            given = list(options.get(param.name, ()))
            if param.kind is inspect.Parameter.VAR_POSITIONAL:
                names = (n.strip() for v in given for n in str(v).split(","))
                values += [n for n in names if n]
            elif len(given) == 1:
                values.append(given[0])
            elif not given and param.default is not inspect.Parameter.empty:
                values.append(param.default)
            else:
                raise TraceError(f"{spec.name}: expected one value for '{param.name}'")
        entry = TraceEntry(prim.method, values[0], tuple(values[1:]))
        problem = entry.problem()
        if problem is not None:
            raise TraceError(f"{spec.name}: {problem}")
        entries.append(entry)
    return entries
