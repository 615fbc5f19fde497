"""A ``.mlir`` model: a tg graph written as text, read as data and never as code.

``qidao.compile("graph.mlir")`` (and ``qidao compile`` / ``qidao run``) takes the
textual form of what the frontends build, so a ``.mlir`` model may hold only that
(an allow-list; anything else is an ``MlirError`` naming the op or the attribute
and its ``file:line:col``):

- one ``builtin.module`` (written out or implicit) without attributes, holding one
  ``func.func @main`` with a body;
- ``@main`` takes and returns tensors of a tg dtype with static shapes, returns at
  least one, and has no argument or result attributes; its own attributes are
  ``qd.input_names`` and ``qd.output_names`` (arrays of strings) only;
- inside ``@main``, at any depth: the tg ops the frontends build
  (:data:`MODEL_OPS`: every tg op but ``tg.fused``, ``tg.yield`` and the
  ``tg.winograd_*`` pair, which only graph passes make), and ``func.return`` as
  ``@main``'s terminator; their attributes are ``qd.source`` (a string) and
  ``qd.nonnegative_indices`` (a unit), the two a frontend sets.

The parser knows no other op: an ``llvm.inline_asm``, an ``llvm.call @system``, a
``func.call``, a ``memref.alloc`` is refused where it is written, before anything of
it is built (an op the parser does not know cannot reach LLVM, whatever ``@main``
looks like). Every shaped type the text spells is checked against qidao's tensor
limit (``qidao.frontend.limits``) as the parser reads it, so ``dense<1.0> :
tensor<4294967296xf32>`` is a ``ResourceError`` naming its place before xDSL
expands the splat, and ``tensor<1099511627776x1099511627776xf32>`` never reaches
NumPy.

This is the model loader's reader (``qidao.compiler.models``). ``qidao-opt``, the
developer's tool, reads every dialect of the tower with its own parser.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    ComplexType,
    ContainerType,
    IntegerType,
    ModuleOp,
    ShapedType,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Operation, TypeAttribute
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

from qidao.dialects.attributes import (
    INPUT_NAMES_ATTR,
    NONNEGATIVE_ATTR,
    OUTPUT_NAMES_ATTR,
    SOURCE_ATTR,
)
from qidao.dialects.tg import TG, FusedOp, WinogradInputOp, WinogradOutputOp, YieldOp
from qidao.dialects.tg.types import is_row_major, verify_tensor_type
from qidao.frontend.errors import MlirError
from qidao.frontend.limits import check_tensor

ENTRY = "main"
"""The one function of a ``.mlir`` model."""

PASS_ONLY_OPS: tuple[type[Operation], ...] = (
    FusedOp,
    YieldOp,
    WinogradInputOp,
    WinogradOutputOp,
)
"""tg ops that only graph passes make (``fuse``, ``select-conv-algo``); no
frontend builds them, so a model does not hold them."""

MODEL_OPS: tuple[type[Operation], ...] = (
    ModuleOp,
    func.FuncOp,
    func.ReturnOp,
    *(op for op in TG.operations if op not in PASS_ONLY_OPS),
)
"""Every op a ``.mlir`` model may hold: what the frontends build."""

MAIN_ATTRIBUTES = (INPUT_NAMES_ATTR, OUTPUT_NAMES_ATTR)
"""The attributes of ``@main`` a model may set (arrays of strings)."""

OP_ATTRIBUTES: dict[str, type[Attribute]] = {
    SOURCE_ATTR: StringAttr,
    NONNEGATIVE_ATTR: UnitAttr,
}
"""The attributes a model's tg op may carry besides its own, and their kinds."""

HINT = (
    "a .mlir model is a tg graph, one func.func @main of tg ops ending in "
    "func.return (qidao-opt reads the other levels)"
)


def import_mlir(text: str, name: str = "<string>") -> ModuleOp:
    """The tg module a ``.mlir`` model's ``text`` (read from ``name``) holds,
    parsed, checked against the allow-list of the module docstring and verified.

    A syntax error, an op or attribute outside the allow-list, nesting too deep
    for the parser or IR that does not verify is an ``MlirError`` naming ``name``
    (and the line where known); a shaped type larger than qidao's tensor limit is
    a ``ResourceError`` naming its place."""
    try:
        parser = _ModelParser(text, name)  # lexes the first token: may raise
        module = parser.parse_module()
    except _Refused as err:
        raise MlirError(f"{err.span.get_location()}: {err.msg}") from None
    except ParseError as err:
        raise MlirError(f"parse error: {err}") from None  # err names file:line:col
    except RecursionError:
        raise MlirError(
            f"{name}: nested too deep for the parser (regions inside regions "
            f"beyond Python's recursion limit, {sys.getrecursionlimit()})"
        ) from None
    _Checker(parser, name).module(module)
    try:
        module.verify()
    except VerifyException as err:
        raise MlirError(f"{name}: the IR does not verify: {err}") from None
    return module


def _model_context() -> Context:
    """A context that knows exactly :data:`MODEL_OPS` (builtin types and
    attributes are the parser's own)."""
    ctx = Context()
    for op in MODEL_OPS:
        ctx.load_op(op)
    return ctx


class _Refused(ParseError):
    """An op outside the allow-list, met while parsing."""


class _ModelParser(Parser):
    """xDSL's parser over :func:`_model_context`, which also records where each op
    starts, refuses an op it does not know in qidao's words, and checks every
    shaped type against the tensor limit as soon as it is read."""

    def __init__(self, text: str, name: str) -> None:
        super().__init__(_model_context(), text, name)
        self.name = name
        self.starts: dict[Operation, Span[str]] = {}
        self._opening: list[Span[str]] = []

    def where(self, span: Span[str]) -> str:
        return str(span.get_location())

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        self._opening.append(start)
        try:
            op = super().parse_operation()
        except VerifyException as err:  # a custom parser checked a type as it built
            raise ParseError(start, str(err)) from None
        finally:
            self._opening.pop()
        self.starts[op] = start
        return op

    def _get_op_by_name(self, name: str) -> type[Operation]:
        try:
            return super()._get_op_by_name(name)
        except ParseError:
            span = self._opening[-1] if self._opening else self._current_token.span
            raise _Refused(span, f"{_refusal(name)}; {HINT}") from None

    def parse_optional_type(self) -> TypeAttribute | None:
        start = self._current_token.span
        t = super().parse_optional_type()
        if isinstance(t, ShapedType):
            shape = list(t.get_shape())
            if all(d >= 0 for d in shape):  # a dynamic shape is refused later
                check_tensor(f"{self.where(start)}: {t}", shape, _itemsize(t))
        return t


def _refusal(op_name: str) -> str:
    known = {op.name for op in PASS_ONLY_OPS}
    if op_name in known or f"tg.{op_name}" in known:
        return (
            f"'{op_name}' is made by qidao's graph passes, never by a frontend, so "
            "a model does not hold it"
        )
    return f"'{op_name}' is not an op a .mlir model may hold"


def _itemsize(t: ShapedType) -> int:
    """Bytes per element of a shaped type (8 for an index or an unknown type)."""
    return _element_bytes(
        t.get_element_type() if isinstance(t, ContainerType) else None
    )


def _element_bytes(element: object) -> int:
    if isinstance(element, IntegerType):
        return max(1, (int(element.width.data) + 7) // 8)
    if isinstance(element, AnyFloat):
        return max(1, int(element.bitwidth) // 8)
    if isinstance(element, ComplexType):
        return 2 * _element_bytes(element.element_type)
    return 8


class _Checker:
    """The allow-list of the module docstring, over a parsed module."""

    def __init__(self, parser: _ModelParser, name: str) -> None:
        self.parser = parser
        self.name = name

    def where(self, op: Operation) -> str:
        start = self.parser.starts.get(op)
        return self.name if start is None else self.parser.where(start)

    def refuse(self, op: Operation, message: str) -> MlirError:
        return MlirError(f"{self.where(op)}: {message}; {HINT}")

    def module(self, module: ModuleOp) -> None:
        if module.attributes or module.sym_name is not None:
            raise self.refuse(module, "the module carries attributes or a name")
        functions: list[func.FuncOp] = []
        for op in module.ops:
            if not isinstance(op, func.FuncOp):
                raise self.refuse(op, f"'{op.name}' in the module")
            functions.append(op)
        names = [f.sym_name.data for f in functions]
        if ENTRY not in names:
            found = ", ".join(f"@{n}" for n in names) or "none"
            raise MlirError(
                f"{self.name}: the model has no function @{ENTRY} (found: {found}); "
                f"{HINT}"
            )
        for f in functions:
            if f.sym_name.data != ENTRY:
                raise self.refuse(f, f"a function @{f.sym_name.data} beside @{ENTRY}")
        self.main(functions[0])

    def main(self, main: func.FuncOp) -> None:
        if not main.body.blocks:
            raise self.refuse(main, f"@{ENTRY} has no body")
        if len(main.body.blocks) != 1:
            raise self.refuse(main, f"@{ENTRY} has {len(main.body.blocks)} blocks")
        visibility = main.sym_visibility
        if visibility is not None and visibility.data != "public":
            raise self.refuse(main, f"@{ENTRY} is {visibility.data}")
        if main.arg_attrs is not None or main.res_attrs is not None:
            raise self.refuse(main, f"@{ENTRY} has argument or result attributes")
        for key, value in main.attributes.items():
            if key not in MAIN_ATTRIBUTES:
                raise self.refuse(main, f"@{ENTRY} carries the attribute '{key}'")
            if not isinstance(value, ArrayAttr) or not all(
                isinstance(v, StringAttr) for v in value.data
            ):
                raise self.refuse(
                    main, f"@{ENTRY}'s {key} must be an array of strings, got {value}"
                )
        for k, t in enumerate(main.function_type.inputs.data):
            hint = main.body.block.args[k].name_hint if k < len(main.args) else None
            named = f" %{hint}" if hint else ""
            self.tensor(main, t, f"argument #{k}{named} of @{ENTRY}")
        results = main.function_type.outputs.data
        for k, t in enumerate(results):
            self.tensor(main, t, f"result #{k} of @{ENTRY}")
        if not results:
            raise self.refuse(main, f"@{ENTRY} returns nothing")
        for key, count, what in (
            (INPUT_NAMES_ATTR, len(main.function_type.inputs.data), "arguments"),
            (OUTPUT_NAMES_ATTR, len(results), "results"),
        ):
            names = main.attributes.get(key)
            if isinstance(names, ArrayAttr) and len(names.data) != count:
                raise self.refuse(
                    main,
                    f"@{ENTRY}: {key} has {len(names.data)} name(s) for {count} {what}",
                )
        self.ops(main, main.walk())

    def tensor(self, op: Operation, t: Attribute, what: str) -> None:
        """A tensor of a tg dtype with a static shape, within the limit."""
        try:
            verify_tensor_type(t, what)
        except VerifyException as err:
            raise self.refuse(op, str(err)) from None
        assert isinstance(t, TensorType)
        if isinstance(op, func.FuncOp) and not is_row_major(t):
            raise self.refuse(
                op,
                f"{what} has the strided type {t}; graph inputs and outputs are "
                "row-major arrays (take a strided view inside the graph, e.g. with "
                "tg.transpose)",
            )
        check_tensor(
            f"{self.where(op)}: {what}", t.get_shape(), _element_bytes(t.element_type)
        )

    def ops(self, main: func.FuncOp, ops: Iterable[Operation]) -> None:
        for op in ops:
            if op is main:
                continue
            if isinstance(op, func.ReturnOp):
                if op.parent_op() is not main:
                    raise self.refuse(op, "a func.return outside @main's body")
                continue
            if op.dialect_name() != "tg" or isinstance(op, PASS_ONLY_OPS):
                raise self.refuse(op, f"{_refusal(op.name)} (in @{ENTRY})")
            for key, value in op.attributes.items():
                kind = OP_ATTRIBUTES.get(key)
                if kind is None or not isinstance(value, kind):
                    raise self.refuse(op, f"{op.name} carries the attribute '{key}'")
            for result in op.results:
                t = result.type
                if isinstance(t, TensorType) and all(d >= 0 for d in t.get_shape()):
                    check_tensor(
                        f"{self.where(op)}: {op.name}",
                        t.get_shape(),
                        _element_bytes(t.element_type),
                    )


__all__ = ["MODEL_OPS", "import_mlir"]
