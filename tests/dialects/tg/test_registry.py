"""The tg op registry stays complete, sorted and documented (STYLE point 3).

Every op in ``TG.operations`` is named ``tg.*``, its class ends in ``Op``, and its
docstring carries an MLIR example that parses, verifies and round-trips. The op table
is sorted by class name and lists every op class the tg modules define.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import textwrap
from io import StringIO

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.ir import Operation
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent

import qidao.dialects.tg as tg_package
from qidao.dialects.tg import TG, FusedOp

TG_OPS: list[type[Operation]] = list(TG.operations)
EXAMPLE = re.compile(r"```mlir\n(.*?)```", re.DOTALL)
VALUE = re.compile(r"%[A-Za-z_0-9][\w$.]*")
RESULTS = re.compile(r"\s*(%[^=]+?)\s*=\s")  # "%a, %b = " at the start of an op


# --- helpers: turn a docstring example into a module --------------------------------


def example_of(op: type[Operation]) -> str:
    """The MLIR example in an op's docstring, dedented."""
    match = EXAMPLE.search(op.__doc__ or "")
    assert match is not None, f"{op.__name__}'s docstring has no ```mlir example"
    return textwrap.dedent(match.group(1)).strip()


def split_top_level(text: str, separator: str) -> list[str]:
    """Split ``text`` at ``separator`` where it is not nested in <>, () or []."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(text):
        if depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i].strip())
            i += len(separator)
            start = i
            continue
        if text.startswith("->", i):  # the '>' of an arrow closes nothing
            i += 2
            continue
        if text[i] in "<([":
            depth += 1
        elif text[i] in ">)]":
            depth -= 1
        i += 1
    parts.append(text[start:].strip())
    return parts


def operand_types(line: str) -> dict[str, str]:
    """Map each operand of a one-line op to its type, read from the signature.

    ``%r = tg.add %x, %b : (A, B) -> C`` gives ``{%x: A, %b: B}``; the operand list
    sits between ``=`` and the first `` : ``, the operand types before ``->``.
    """
    head, sep, signature = line.partition(" : ")
    if not sep:
        return {}
    results = RESULTS.match(head)
    operands = VALUE.findall(head[results.end() :] if results else head)
    inputs = split_top_level(signature.removesuffix("{").strip(), "->")[0]
    if inputs.startswith("(") and inputs.endswith(")"):
        inputs = inputs[1:-1]
    types = [t for t in split_top_level(inputs, ",") if t]
    if len(types) != len(operands):
        raise ValueError(
            f"cannot match operands {operands} with types {types} in: {line}"
        )
    return dict(zip(operands, types, strict=True))


def free_values(example: str) -> dict[str, str]:
    """Values the example uses but does not define, with their types."""
    defined: set[str] = set()
    for line in example.splitlines():
        results = RESULTS.match(line)
        if results:
            defined.update(VALUE.findall(results.group(1)))
        block = re.match(r"\s*\^\w+\((.*)\):", line)
        if block:
            defined.update(VALUE.findall(block.group(1)))
    free: dict[str, str] = {}
    for line in example.splitlines():
        used = [v for v in VALUE.findall(line) if v not in defined and v not in free]
        if not used:
            continue
        types = operand_types(line.strip())
        for value in used:
            if value not in types:
                raise ValueError(f"no type for free value {value} in: {line}")
            free[value] = types[value]
    return free


def wrap_example(op: type[Operation], example: str) -> str:
    """A module whose function takes the example's free values as arguments.

    An op that must sit inside a ``tg.fused`` (``tg.yield``) is wrapped in one whose
    block arguments are the free values and whose results are what it yields.
    """
    free = free_values(example)
    body = textwrap.indent(example, "    ")
    parent = op.get_trait(HasParent)
    if parent is not None:
        assert FusedOp in parent.op_types, f"no wrapper for {op.name}'s parents"
        outer = {f"{name}_outer": t for name, t in free.items()}
        block_args = ", ".join(f"{name}: {t}" for name, t in free.items())
        types = ", ".join(free.values())
        body = (
            f"    %fused = tg.fused {', '.join(outer)} : ({types}) -> {types} {{\n"
            f"    ^bb0({block_args}):\n"
            f"{textwrap.indent(body, '  ')}\n"
            "    }"
        )
        free = outer
    args = ", ".join(f"{name}: {t}" for name, t in free.items())
    return f"func.func @example({args}) {{\n{body}\n    func.return\n}}\n"


def context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    ctx.load_dialect(TG)
    return ctx


def parse(text: str) -> ModuleOp:
    return Parser(context(), text).parse_module()


def show(module: ModuleOp, generic: bool = False) -> str:
    stream = StringIO()
    Printer(stream=stream, print_generic_format=generic).print_op(module)
    return stream.getvalue()


# --- ops ---------------------------------------------------------------------------


def test_op_table_is_sorted_by_class_name() -> None:
    names = [op.__name__ for op in TG_OPS]
    assert names == sorted(names), "keep TG = Dialect('tg', [...]) sorted by class name"


def test_op_table_lists_every_op_class() -> None:
    """Every concrete op class in qidao/dialects/tg/*.py is registered, once."""
    defined: set[type[Operation]] = set()
    for info in pkgutil.iter_modules(tg_package.__path__):
        module = importlib.import_module(f"{tg_package.__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, IRDLOperation)
                and obj.__module__ == module.__name__
                and "name"
                in vars(obj)  # abstract bases (TgOp, ReduceOp, ...) have none
            ):
                defined.add(obj)
    assert len(TG_OPS) == len(set(TG_OPS)), "an op is listed twice"
    missing = sorted(op.__name__ for op in defined - set(TG_OPS))
    extra = sorted(op.__name__ for op in set(TG_OPS) - defined)
    assert not missing, f"op classes missing from TG.operations: {missing}"
    assert not extra, (
        f"TG.operations lists classes not defined in the tg modules: {extra}"
    )


@pytest.mark.parametrize("op", TG_OPS, ids=lambda op: op.__name__)
def test_op_is_named_and_documented(op: type[Operation]) -> None:
    assert op.name.startswith("tg."), f"{op.__name__}.name = {op.name!r}"
    assert op.__name__.endswith("Op"), f"{op.__name__} must end in 'Op'"
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", op.__name__.removesuffix("Op")).lower()
    assert op.name == f"tg.{snake}", f"{op.__name__} should be named 'tg.{snake}'"
    assert "__doc__" in vars(op) and op.__doc__, f"{op.__name__} has no docstring"
    assert f" {op.name} " in f" {example_of(op)} ", (
        f"{op.__name__}'s example does not use {op.name}"
    )


@pytest.mark.parametrize("op", TG_OPS, ids=lambda op: op.__name__)
def test_op_example_round_trips(op: type[Operation]) -> None:
    source = wrap_example(op, example_of(op))
    module = parse(source)
    module.verify()
    assert any(isinstance(o, op) for o in module.walk()), f"no {op.name} parsed"
    printed = show(module)
    assert show(parse(printed)) == printed, "print -> parse -> print changed the IR"
    generic = show(module, generic=True)
    assert show(parse(generic)) == printed, "the generic form does not round-trip"


def test_wrap_example_finds_free_values() -> None:
    example = (
        "%y = tg.fused %x, %b : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32> {\n"
        "^bb0(%xa: tensor<8xf32>, %ba: tensor<1xf32>):\n"
        "  tg.yield %xa : tensor<8xf32>\n"
        "}"
    )
    assert free_values(example) == {"%x": "tensor<8xf32>", "%b": "tensor<1xf32>"}
    line = "%p = tg.batch_norm %x, %s epsilon = 1.0 : tensor<4xf32>, tensor<2x1xf32> -> tensor<4xf32>"
    assert operand_types(line) == {"%x": "tensor<4xf32>", "%s": "tensor<2x1xf32>"}
