"""``apply-optimizer``: turn the gradients that ``autodiff`` appended into an
optimizer's update, so forward, backward and update are one program.

``apply-optimizer{wrt=w optimizer=sgd momentum=0.9}`` runs after ``autodiff{wrt=w}``:
the result ``grad_w`` is replaced by the updated weight ``new_w``, and the
optimizer's state enters as inputs and leaves, updated, as results. The
hyper-parameters that change during training enter as f32 scalar inputs (the
learning rate, Adam's bias corrections), so a new learning rate needs no new
compile; the others (momentum, betas, eps, weight decay) are constants of the
program. The updates are PyTorch's (``qidao.optim`` gives the formulas):

- ``sgd``: inputs ``lr``, ``damp`` and, with momentum, ``momentum_<w>``;
  ``g = grad + wd w``, ``buf = momentum buf + damp g``, ``new_w = w - lr buf``
  (nesterov: ``w - lr (g + momentum buf)``); results ``new_<w>`` then
  ``new_momentum_<w>``.
- ``adam``: inputs ``step_size`` (= lr / (1 - b1^t)), ``bias_correction2_sqrt``
  (= sqrt(1 - b2^t)), ``exp_avg_<w>``, ``exp_avg_sq_<w>``; ``m = b1 m + (1 - b1) g``,
  ``v = b2 v + (1 - b2) g g``, ``new_w = w - step_size m / (sqrt(v) /
  bias_correction2_sqrt + eps)``.

New inputs go after the model's, in the order: scalars, then each weight's state;
new results replace the gradients in place, the states' follow. The caller
(``qidao.compiler.trainable.TrainingStep``) keeps the weights and states and swaps in
the new ones after each call.

Before (``autodiff{wrt=w}`` has run):
```mlir
func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {qd.input_names = ["x", "w"], qd.output_names = ["loss", "grad_w"]} {
  ...
  func.return %loss, %grad : tensor<f32>, tensor<4xf32>
}
```
After ``apply-optimizer{wrt=w optimizer=sgd}``: inputs ``x, w, lr, damp``; results
``loss, new_w`` with ``new_w = w - lr * (damp * grad)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import ArrayAttr, FunctionType, StringAttr, TensorType, f32
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass

from qidao.dialects.attributes import INPUT_NAMES_ATTR, OUTPUT_NAMES_ATTR, UPDATE_ATTR
from qidao.dialects.tg.cost import is_free
from qidao.dialects.tg.grad import Emit
from qidao.dialects.tg.types import is_float
from qidao.errors import UnsupportedError

OPTIMIZERS = ("sgd", "adam")


class OptimizerError(UnsupportedError):
    """What ``apply-optimizer`` cannot do: names the optimizer or the weight."""


@dataclass(frozen=True)
class ApplyOptimizerPass(ModulePass):
    """Replace the gradients of ``wrt`` by the optimizer's updated weights."""

    name = "apply-optimizer"

    wrt: tuple[str, ...] = field(default=())
    optimizer: str = "sgd"
    momentum: float = 0.0
    nesterov: bool = False
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise OptimizerError(
                f"apply-optimizer: unknown optimizer '{self.optimizer}'; the "
                f"optimizers are {', '.join(OPTIMIZERS)}"
            )
        if not self.wrt:
            return
        functions = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        main = [f for f in functions if f.sym_name.data == "main"] or functions[:1]
        if main:
            self._rewrite(main[0])

    def _rewrite(self, fn: func.FuncOp) -> None:
        block = fn.body.blocks[0]
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp), "a tg function ends in func.return"
        inputs = _names(fn, INPUT_NAMES_ATTR)
        outputs = _names(fn, OUTPUT_NAMES_ATTR)
        scalar_names = (
            ("lr", "damp")
            if self.optimizer == "sgd"
            else ("step_size", "bias_correction2_sqrt")
        )
        scalars = {n: _new_arg(block, TensorType(f32, []), n) for n in scalar_names}
        new_inputs = list(scalar_names)
        state_results: list[SSAValue] = []
        state_names: list[str] = []
        results = list(ret.operands)
        for name in self.wrt:
            grad_name = f"grad_{name}"
            if name not in inputs or grad_name not in outputs:
                raise OptimizerError(
                    f"apply-optimizer: no input '{name}' with a result '{grad_name}' "
                    "(run autodiff with the same wrt first)"
                )
            w = block.args[inputs.index(name)]
            k = outputs.index(grad_name)
            if not is_float(w.type):
                raise OptimizerError(f"apply-optimizer: weight '{name}' is {w.type}")
            g = results[k]
            # the update as soon as the gradient is made and the weight read for
            # the last time (its buffer dies there, and update-in-place may write
            # the new weight over the old), not at the end
            e = _MarkingEmit(_after([g, *_readers(w)], ret), name)
            s = {n: e.as_type_of(v, w) for n, v in scalars.items()}
            if self.weight_decay:
                g = e.add(g, e.mul(w, self.weight_decay))
            states = self._state_names(name)
            args: dict[str, SSAValue] = {}
            for state in states:
                args[state] = _new_arg(block, w.type, state)
                new_inputs.append(state)
            new_w, new_states = self._update(e, w, g, s, args)
            results[k] = e.contiguous(new_w)
            outputs[k] = f"new_{name}"
            for state in states:
                state_results.append(e.contiguous(new_states[state]))
                state_names.append(f"new_{state}")
        ret.operands = [*results, *state_results]
        fn.function_type = FunctionType.from_lists(
            [a.type for a in block.args], [v.type for v in ret.operands]
        )
        fn.attributes[INPUT_NAMES_ATTR] = ArrayAttr(
            [StringAttr(n) for n in [*inputs, *new_inputs]]
        )
        fn.attributes[OUTPUT_NAMES_ATTR] = ArrayAttr(
            [StringAttr(n) for n in [*outputs, *state_names]]
        )

    def _state_names(self, weight: str) -> list[str]:
        if self.optimizer == "adam":
            return [f"exp_avg_{weight}", f"exp_avg_sq_{weight}"]
        return [f"momentum_{weight}"] if self.momentum else []

    def _update(
        self,
        e: Emit,
        w: SSAValue,
        g: SSAValue,
        s: dict[str, SSAValue],
        state: dict[str, SSAValue],
    ) -> tuple[SSAValue, dict[str, SSAValue]]:
        if self.optimizer == "sgd":
            if not state:
                return e.sub(w, e.mul(s["lr"], g)), {}
            ((name, buf),) = state.items()
            new_buf = e.add(e.mul(buf, self.momentum), e.mul(s["damp"], g))
            step = e.add(g, e.mul(new_buf, self.momentum)) if self.nesterov else new_buf
            return e.sub(w, e.mul(s["lr"], step)), {name: new_buf}
        (m_name, m), (v_name, v) = state.items()
        new_m = e.add(e.mul(m, self.beta1), e.mul(g, 1.0 - self.beta1))
        new_v = e.add(e.mul(v, self.beta2), e.mul(e.mul(g, g), 1.0 - self.beta2))
        denom = e.add(e.div(e.sqrt(new_v), s["bias_correction2_sqrt"]), self.eps)
        new_w = e.sub(w, e.mul(s["step_size"], e.div(new_m, denom)))
        return new_w, {m_name: new_m, v_name: new_v}


def _readers(value: SSAValue) -> list[SSAValue]:
    """The results of every op that reads ``value``, directly or through views."""
    found: list[SSAValue] = []
    work = [value]
    while work:
        for use in work.pop().uses:
            found.extend(use.operation.results)
            if is_free(use.operation):
                work.extend(use.operation.results)
    return found


def _after(values: list[SSAValue], ret: Operation) -> Operation:
    """The op before which an update goes: the one after the last definition of
    ``values`` (``ret`` when none is before it)."""
    block = ret.parent_block()
    assert block is not None
    ops = [v.op for v in values if isinstance(v, OpResult) and v.op is not ret]
    ops = [o for o in ops if o.parent_block() is block]
    if not ops:
        return block.first_op or ret
    last = max(ops, key=block.get_operation_index)
    return last.next_op or ret


class _MarkingEmit(Emit):
    """An ``Emit`` whose ops carry ``qd.update = "<weight>"``: ``fuse`` keeps them
    out of matmul and convolution epilogues (``update-in-place``)."""

    def __init__(self, anchor: Operation, weight: str) -> None:
        super().__init__(anchor)
        self.weight = StringAttr(weight)

    def op(self, op: Operation) -> SSAValue:
        if op.operands:  # a constant joins no epilogue on its own
            op.attributes[UPDATE_ATTR] = self.weight
        return super().op(op)


def _new_arg(block: Block, t: Attribute, name: str) -> SSAValue:
    arg = block.insert_arg(t, len(block.args))
    arg.name_hint = name
    return arg


def _names(fn: func.FuncOp, attr: str) -> list[str]:
    names = fn.attributes.get(attr)
    if not isinstance(names, ArrayAttr):
        raise OptimizerError(f"apply-optimizer: @{fn.sym_name.data} has no {attr}")
    return [n.data for n in names.data if isinstance(n, StringAttr)]
