"""``autodiff``: append the reverse-mode gradient of the sum of output 0 with respect
to the named inputs.

``autodiff{wrt=w,b}`` differentiates ``sum(output 0)`` of ``@main`` with respect to
the inputs named ``w`` and ``b`` (names of ``qd.input_names``, else the arguments'
SSA names) and returns the gradients after the outputs, in ``wrt`` order, named
``grad_<name>`` in ``qd.output_names``. Each op between the inputs and output 0
contributes its vjp rule (``qidao.dialects.tg.grad``: one rule per op, conventions
such as relu'(0) = 0 listed there, each PyTorch's); the gradients of a value used
twice are summed. The backward ops are ordinary tg ops, so the graph passes after
this one (folding, CSE, fusion, DCE, the memory planner) treat them as any other.
An input that output 0 does not depend on gets a zero gradient; an input that is
output 0 itself gets the seed, ones (the gradient of its sum).

Before:
```mlir
func.func @main(%x: tensor<f32>, %w: tensor<f32>, %b: tensor<f32>) -> tensor<f32> attributes {qd.input_names = ["x", "w", "b"], qd.output_names = ["y"]} {
  %0 = tg.mul %x, %w : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %1 = tg.add %0, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %y = tg.relu %1 : tensor<f32> -> tensor<f32>
  func.return %y : tensor<f32>
}
```
After ``autodiff{wrt=w,b}``: ``%g = select(%1 > 0, 1, 0)`` flows back through the
add (to ``b``) and the mul (``g * x`` to ``w``); the function returns ``(%y,
grad_w, grad_b)``.

Refused, naming the op and what is expected: a name that is not an input, an
integer input, an output 0 that is not a float tensor, and ops without a vjp rule
(all of them in one message, with how many of each).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, FunctionType, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects.attributes import INPUT_NAMES_ATTR, OUTPUT_NAMES_ATTR
from qidao.dialects.tg.grad import Emit, GradientError, rule_for
from qidao.dialects.tg.types import is_float, shape_of
from qidao.errors import UnsupportedError


class AutodiffError(UnsupportedError):
    """What ``autodiff`` cannot differentiate: names the input, output or ops."""


@dataclass(frozen=True)
class AutodiffPass(ModulePass):
    """Append d sum(output 0) / d input for each input named in ``wrt``."""

    name = "autodiff"

    wrt: tuple[str, ...] = field(default=())

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if not self.wrt:
            return
        functions = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        main = [f for f in functions if f.sym_name.data == "main"] or functions[:1]
        if not main:
            raise AutodiffError("autodiff: the module has no function to differentiate")
        differentiate(main[0], self.wrt)


def _names(fn: func.FuncOp, attr: str, default: list[str]) -> list[str]:
    names = fn.attributes.get(attr)
    if isinstance(names, ArrayAttr):
        return [n.data for n in names.data if isinstance(n, StringAttr)]
    return default


def differentiate(fn: func.FuncOp, wrt: tuple[str, ...]) -> None:
    """Append the gradients of ``sum(output 0)`` w.r.t. the inputs ``wrt`` to
    ``fn``'s results."""
    where = f"autodiff of @{fn.sym_name.data}"
    block = fn.body.blocks[0]
    args = list(block.args)
    inputs = _names(
        fn, INPUT_NAMES_ATTR, [a.name_hint or f"input{i}" for i, a in enumerate(args)]
    )
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp), "a tg function ends in func.return"
    if not ret.operands:
        raise AutodiffError(f"{where}: the function has no output to differentiate")
    loss = ret.operands[0]
    if not is_float(loss.type):
        raise AutodiffError(
            f"{where}: output 0 is {loss.type}; the gradient is of the sum of a float "
            "output"
        )
    targets: list[SSAValue] = []
    for name in wrt:
        if name not in inputs:
            raise AutodiffError(
                f"{where}: wrt names '{name}', which is not an input; the inputs are "
                f"{', '.join(inputs)}"
            )
        arg = args[inputs.index(name)]
        if not is_float(arg.type):
            raise AutodiffError(
                f"{where}: input '{name}' is {arg.type}; only float inputs have "
                "gradients"
            )
        targets.append(arg)
    body = [o for o in block.ops if o is not ret]
    needed = _needed_ops(body, set(targets), loss)
    missing = Counter(o.name for o in needed if rule_for(o) is None)
    if missing:
        listed = ", ".join(
            f"{n} (x{c})" if c > 1 else n for n, c in sorted(missing.items())
        )
        raise AutodiffError(
            f"{where}: no vjp rule for {listed}; qidao.dialects.tg.grad lists the ops "
            "that have one"
        )
    emit = _RecordingEmit(ret)
    grads: dict[SSAValue, SSAValue] = {loss: emit.full(shape_of(loss.type), 1.0, loss)}
    # a target's gradient is complete after the vjp of its first user: made there,
    # so that the values it reads die early (a weight's gradient reads the layer's
    # input; made at the end, every activation would live to the end)
    first_user = {
        t: next((o for o in needed if t in o.operands), None) for t in targets
    }
    final: dict[SSAValue, SSAValue] = {}
    for o in reversed(needed):
        if len(o.results) > 1 and any(grads.get(r) is not None for r in o.results):
            raise AutodiffError(
                f"{where}: {_label(o)} has {len(o.results)} results; gradients flow "
                "through single-result ops only (a vjp rule takes one result's)"
            )
        g = grads.get(o.results[0])
        if g is None:
            continue
        rule = rule_for(o)
        assert rule is not None
        try:
            operand_grads = rule(emit, o, g)
        except GradientError as e:
            raise AutodiffError(f"{where}: {e}") from e
        for operand, dx in zip(o.operands, operand_grads, strict=True):
            if dx is None or not is_float(operand.type):
                continue
            before = grads.get(operand)
            grads[operand] = dx if before is None else emit.add(before, dx)
        for target in dict.fromkeys(v for v in o.operands if v in first_user):
            found = grads.get(target)
            if first_user[target] is o and found is not None and target not in final:
                final[target] = emit.contiguous(emit.as_type_of(found, target))
    for target in targets:
        # output 0 is this input itself (``g.output(x)``): no op lies between them,
        # so no vjp above made its gradient; it is the seed, the ones of sum(x)
        seed = grads.get(target)
        if target not in final and seed is not None:
            final[target] = emit.contiguous(emit.as_type_of(seed, target))
    results: list[SSAValue] = []
    for target in targets:
        found = final.get(target)
        results.append(emit.zeros_like(target) if found is None else found)
    ret.operands = [*ret.operands, *results]
    emit.erase_unused()
    fn.function_type = FunctionType.from_lists(
        fn.function_type.inputs.data, [v.type for v in ret.operands]
    )
    outputs = _names(
        fn,
        OUTPUT_NAMES_ATTR,
        [f"output{i}" for i in range(len(ret.operands) - len(results))],
    )
    fn.attributes[OUTPUT_NAMES_ATTR] = ArrayAttr(
        [StringAttr(n) for n in [*outputs, *(f"grad_{n}" for n in wrt)]]
    )


def _label(op: Operation) -> str:
    """``tg.custom 'demo::swish'`` for a custom op, else the op's name."""
    label = getattr(op, "label", None)
    return label if isinstance(label, str) else op.name


def _needed_ops(
    body: list[Operation], targets: set[SSAValue], loss: SSAValue
) -> list[Operation]:
    """The ops, in order, with a result that depends on ``targets`` and that
    ``loss`` depends on: those whose vjp the gradient runs through."""
    active = set(targets)
    for o in body:
        if any(v in active for v in o.operands):
            active.update(r for r in o.results if is_float(r.type))
    useful = {loss} & active
    needed: list[Operation] = []
    for o in reversed(body):
        if any(r in useful for r in o.results):
            needed.append(o)
            useful.update(v for v in o.operands if v in active)
    needed.reverse()
    return needed


class _RecordingEmit(Emit):
    """An ``Emit`` that remembers its ops, so that those a rule built for a gradient
    nobody asked for are erased again."""

    def __init__(self, anchor: Operation) -> None:
        super().__init__(anchor)
        self.built: list[Operation] = []

    def op(self, op: Operation) -> SSAValue:
        self.built.append(op)
        return super().op(op)

    def erase_unused(self) -> None:
        """Erase the built ops whose results nothing uses (latest first, so that
        the ops only they used go too)."""
        for o in reversed(self.built):
            if all(not r.uses for r in o.results):
                o.detach()
                o.erase()
