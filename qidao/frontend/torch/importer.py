"""PyTorch frontend: an ``nn.Module`` (or a function) to a tg module, via torch.export.

```python
captured = capture(model, (x,))          # torch.export -> ATen FX graph + constants
unsupported_ops(captured.graph_module)   # {"aten.cat.default": ["cat", "cat_1"]}
module = to_tg(captured)                 # every op supported: one tg module
```

The steps:

1. ``capture`` runs ``torch.export.export`` on the model and the example inputs. The
   graph holds ATen operators (``aten.linear``, ``aten.conv2d``, ``aten.batch_norm``,
   ...) with static shapes; the parameters, buffers and lifted constants are
   placeholders that ``capture`` pairs with their tensors. A graph that writes
   into tensors in place (``x[:, 1:] = y``, ``add_``) is functionalized first
   (``mutates``), and what it wrote into comes back as outputs
   (``Captured.mutated``) that ``TorchCompiled`` copies into those tensors.
2. ``node_support`` says, for each node, why it cannot be converted (no converter
   in ``ops.CONVERTERS``, a converter's ``check`` refusing this use, a dtype
   its converter's rule does not allow: float32 unless it declares another of
   ``ops.DTYPE_RULES``; a shape that depends on the input values, as after a
   boolean mask index, ``nonzero`` or ``unique``, or a number read with
   ``.item()``: qidao compiles static shapes), or None; bfloat16 and float16
   tensors count as float32, which their ops compute in (``narrow.py``).
   ``unsupported_ops`` gathers every refusal (not the size checks torch.export
   adds after a data-dependent shape: the op that makes the shape is listed).
3. ``FxConverter`` walks a graph in order and builds tg ops through the ``Graph``
   builder: parameters and buffers become ``tg.constant`` (so ``fold-constants``
   folds eval-mode BatchNorm into the convolution before it), user inputs become
   function arguments named after the placeholders.
4. When some nodes are unsupported, ``partition`` groups the supported ones into
   subgraphs (PyTorch's ``CapabilityBasedPartitioner``); ``backend`` compiles each
   subgraph with qidao and runs the rest in PyTorch.

The converter table lives in ``ops.py`` (and ``grad_ops.py``, the ops that
backward graphs bring; ``loss_ops.py``, ``nll_loss`` and ``cross_entropy_loss``;
``scatter_ops.py``, ``scatter``, ``scatter_add``, ``scatter_reduce``, ``index_put``);
``backend.py`` runs the result on torch tensors; ``training.py`` compiles
AOTAutograd's forward and backward graphs for ``torch.compile`` training.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
import torch.fx
from torch.export.graph_signature import OutputKind
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.utils import _pytree as pytree
from xdsl.dialects.builtin import ModuleOp

from qidao.errors import UnsupportedError
from qidao.frontend.builder import Value
from qidao.frontend.errors import FrontendError, GraphError
from qidao.frontend.torch import (  # noqa: F401  (they register their converters)
    along_axis_ops,
    grad_ops,
    loss_ops,
    scatter_ops,
)
from qidao.frontend.torch.custom import converter_for  # torch.library ops
from qidao.frontend.torch.narrow import NARROW, to_numpy, widened
from qidao.frontend.torch.ops import (
    CONVERTERS,
    DTYPE_RULES,
    Converter,
    FxValues,
    op_name,
)

SUPPORTED_OPS: tuple[str, ...] = tuple(sorted({op_name(t) for t in CONVERTERS}))
"""The ATen operators the converter table has a converter for (some only for some
arguments: exact GELU, training-mode BatchNorm and dropout are refused)."""

_DTYPES: dict[torch.dtype, str] = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.bool: "bool",
    **NARROW,
}


_INDEX_DTYPES = (torch.int32, torch.int64)
"""The dtypes of the index tensors of ``embedding``, ``index_select``, ``gather``."""


class TorchImportError(FrontendError):
    """A PyTorch model that qidao cannot capture or convert."""


class UnsupportedTorchOpsError(TorchImportError, UnsupportedError):
    """A PyTorch graph with operators qidao does not convert.

    ``ops`` maps each operator (with the reason, when a converter refused this use)
    to the FX nodes that use it.
    """

    def __init__(self, ops: dict[str, list[str]], note: str = "") -> None:
        self.ops = ops
        lines = [f"  {op}: {', '.join(nodes)}" for op, nodes in sorted(ops.items())]
        # the first line names the operators: torch.compile shows it first
        names = sorted({op.split(" (", 1)[0] for op in ops})
        super().__init__(
            f"the model uses {len(ops)} unsupported operator(s) "
            f"({', '.join(names)}):\n"
            + "\n".join(lines)
            + (f"\n{note}" if note else "")
        )


class _FunctionModule(torch.nn.Module):
    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


@dataclass
class Captured:
    """An exported graph with the tensors of its non-input placeholders."""

    graph_module: torch.fx.GraphModule
    constants: dict[str, torch.Tensor]
    """Placeholder name -> the parameter, buffer or lifted constant it stands for."""
    placeholders: list[str]
    """Every placeholder name, in the graph module's calling order."""
    user_inputs: list[str]
    user_outputs: int
    out_spec: Any = None
    """The pytree spec that rebuilds the model's output structure."""
    mutated: list[str | None] = field(default_factory=list)
    """What the model writes into in place (a user input, a buffer), by its
    placeholder name, one for each output before the user outputs: a functionalized
    graph (see ``mutates``) returns the new values there, and ``TorchCompiled``
    copies each back into its tensor, as the model's in-place update would. None
    for an output nothing is written back from."""


def capture(
    model: Any, example_inputs: Sequence[Any], decompose: bool = False
) -> Captured:
    """Export ``model`` (an ``nn.Module`` or a function of tensors) on
    ``example_inputs`` (a tuple of tensors, the positional arguments).

    ``decompose=True`` lowers the graph to PyTorch's core ATen set first
    (``addmm``, ``convolution``, ``_native_batch_norm_legit_no_training``, ...);
    the converter table takes both forms."""
    if example_inputs is None:
        raise TorchImportError(
            "a PyTorch model needs example_inputs=(tensor, ...) to fix its input "
            "shapes: qidao.compile(model, example_inputs=(x,))"
        )
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    args = tuple(example_inputs)
    for k, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            raise TorchImportError(
                f"example_inputs[{k}] is a {type(a).__name__}; qidao takes tensors only"
            )
    module = model if isinstance(model, torch.nn.Module) else _FunctionModule(model)
    try:
        with torch.no_grad():
            program = torch.export.export(module, args)
            if decompose:
                program = program.run_decompositions()
            elif mutates(program.graph_module):
                program = program.run_decompositions({})  # functionalize only
    except Exception as e:
        raise TorchImportError(
            f"torch.export could not capture the model: {type(e).__name__}: {e}"
        ) from e
    sig = program.graph_signature
    state = {**program.state_dict, **program.constants}
    names = {
        **sig.inputs_to_parameters,
        **sig.inputs_to_buffers,
        **sig.inputs_to_lifted_tensor_constants,
    }
    constants = {p: state[target] for p, target in names.items()}
    gm = program.graph_module
    drop_metadata_checks(gm)
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    return Captured(
        gm,
        constants,
        placeholders,
        list(sig.user_inputs),
        len(sig.user_outputs),
        program.call_spec.out_spec,
        _mutated(sig, names),
    )


_MUTATIONS = (
    OutputKind.BUFFER_MUTATION,
    OutputKind.PARAMETER_MUTATION,
    OutputKind.USER_INPUT_MUTATION,
)


def _mutated(sig: Any, names: Mapping[str, str]) -> list[str | None]:
    """For each output before the user outputs (a functionalized program returns
    the new values of what it writes into there), the placeholder it is written
    back into, or None (nothing to write: an effect token)."""
    placeholder = {target: p for p, target in names.items()}
    specs = sig.output_specs[: len(sig.output_specs) - len(sig.user_outputs)]
    return [
        placeholder.get(spec.target, spec.target) if spec.kind in _MUTATIONS else None
        for spec in specs
    ]


def mutates(gm: torch.fx.GraphModule) -> bool:
    """Whether ``gm`` holds an operator that writes into a tensor (``add_``,
    ``copy_``, ``index_put_``, an ``out=`` variant, ...).

    torch.export's graph keeps PyTorch's in-place operators and views: a
    ``copy_`` into ``x[:, 1:]`` writes into ``x``, and every later reader of ``x``
    depends on it through memory, not through the graph's edges. qidao computes
    values (a view it converts is a copy) and ``partition`` moves nodes by the
    graph's edges only, so such a graph, split between qidao and PyTorch, would
    lose the writes or read ``x`` before them. ``capture`` functionalizes it first
    (``run_decompositions({})``: ``copy_`` into a slice becomes ``slice_scatter``,
    ``add_`` becomes ``add``)."""
    return any(
        isinstance(node.target, torch._ops.OpOverload)
        and node.target._schema.is_mutable
        for node in gm.graph.nodes
        if node.op == "call_function"
    )


METADATA_CHECKS = (torch.ops.aten._assert_tensor_metadata.default,)
"""Nodes that only assert a value's dtype, device and layout (``x.to(dtype)`` makes
one): the export traced them on the example inputs, and every call of the compiled
model checks its inputs against those, so they hold by construction; they are
dropped rather than run (or left to PyTorch as a part of their own)."""


def drop_metadata_checks(gm: torch.fx.GraphModule) -> int:
    """Remove ``METADATA_CHECKS`` nodes (which nothing uses) from ``gm``; returns
    how many."""
    dropped = [
        n
        for n in gm.graph.nodes
        if n.op == "call_function" and n.target in METADATA_CHECKS and not n.users
    ]
    for node in dropped:
        gm.graph.erase_node(node)
    if dropped:
        gm.recompile()
    return len(dropped)


# ---- support ----------------------------------------------------------------


def _vals(value: Any) -> list[Any]:
    return [v for v in pytree.tree_leaves(value) if isinstance(v, torch.Tensor)]


_SIZE_CHECKS = (  # see size_bookkeeping
    torch.ops.aten.sym_size.int,
    torch.ops.aten.sym_numel.default,
    torch.ops.aten.sym_stride.int,
    torch.ops.aten._assert_scalar.default,
    torch.ops.aten.sym_constrain_range.default,
    torch.ops.aten.sym_constrain_range_for_size.default,
)
_SYMBOLS = (torch.SymInt, torch.SymBool, torch.SymFloat)
"""The values of sizes and numbers torch.export leaves symbolic (``u0``)."""


def _symbolic_shape(value: Any) -> tuple[Any, ...] | None:
    """The shape of the first tensor in ``value`` with a symbolic size (one that
    torch.export could not fix: ``(u0,)``, set by the data), or None."""
    for t in _vals(value):
        if not all(isinstance(d, int) for d in t.shape):
            return tuple(t.shape)
    return None


def _data_dependent(node: torch.fx.Node) -> str | None:
    """Why ``node`` cannot be compiled when an input or its result has a shape that
    depends on the values of a tensor (after a boolean mask index, ``nonzero``,
    ``masked_select``, ``unique``), or None: qidao compiles static shapes only."""
    for arg in node.all_input_nodes:
        value = arg.meta.get("val")
        if isinstance(value, _SYMBOLS):  # Tensor.item(), a size
            return f"reads a number known only when it runs ({value})"
        shape = _symbolic_shape(value)
        if shape is not None:
            return f"reads a tensor of data-dependent shape {shape}"
    shape = _symbolic_shape(node.meta.get("val"))
    if shape is not None:
        return (
            f"its result's shape {shape} depends on the input values; qidao "
            "compiles static shapes only"
        )
    return None


def size_bookkeeping(node: torch.fx.Node) -> bool:
    """Whether ``node`` is one of the checks torch.export adds after an op whose
    result has a data-dependent size (read the size, compare it, assert): they
    run in PyTorch with that op and are not listed as unsupported apart from it."""
    if node.target in _SIZE_CHECKS:
        return True
    return isinstance(node.meta.get("val"), _SYMBOLS) and all(
        size_bookkeeping(a) for a in node.all_input_nodes
    )


_NO_CONVERTER: dict[Any, str] = {
    # training-mode BatchNorm updates its running statistics in place: the
    # functionalized graph (see ``mutates``) holds this form of it
    torch.ops.aten._native_batch_norm_legit_functional.default: (
        "batch norm in training mode (call model.eval())"
    ),
}
"""Ops with no converter that a model reaches for a reason to name."""


def node_support(node: torch.fx.Node) -> str | None:
    """Why ``node`` (a ``call_function``) cannot be converted, or None."""
    if node.target is operator.getitem:  # an item of an unsupported op: the op
        source = node.args[0]  # is listed, it says why
        if not isinstance(source, torch.fx.Node) or source.op != "call_function":
            return "getitem of a graph input"
        if node_support(source) is not None:
            return "getitem of an unsupported op"
    else:
        reason = _data_dependent(node)
        if reason is not None:
            return reason
    entry = CONVERTERS.get(node.target) or converter_for(node.target)
    if entry is None:
        return _NO_CONVERTER.get(node.target, "no converter")
    if entry.check is not None:
        reason = entry.check(*node.args, **node.kwargs)
        if reason is not None:
            return reason
    inputs = [a for a in node.all_input_nodes if "val" in a.meta]
    if node.target is operator.getitem:  # only the item read counts, checked below
        inputs = []
    index_nodes: set[torch.fx.Node] = set()  # Converter.index_args: int32/int64
    for k in entry.index_args:
        torch.fx.node.map_arg(node.args[k : k + 1], index_nodes.add)
    dtypes: list[torch.dtype] = []  # of the other inputs, in order
    for arg in inputs:
        for t in _vals(arg.meta["val"]):
            if arg not in index_nodes:
                dtypes.append(widened(t.dtype))
            elif t.dtype not in _INDEX_DTYPES:
                return f"an index is {t.dtype} (int32 or int64 expected)"
    value = node.meta.get("val")
    if isinstance(value, tuple | list):  # a multi-result op: only what is read counts
        for user in node.users:
            if user.target is not operator.getitem:
                return "a multi-result op used other than by indexing"
            item = user.meta.get("val")
            wanted = torch.float32
            if user.args[1] in entry.index_results:  # Converter.index_results
                wanted = torch.int64
            if not isinstance(item, torch.Tensor) or widened(item.dtype) != wanted:
                return "a result other than a float32 tensor is read"
        results: list[torch.dtype] = []
    else:
        results = [widened(t.dtype) for t in _vals(value)]
        if _reads_indices(node, entry):
            if results != [torch.int64]:
                return f"the indices are {results} (int64 expected)"
            results = []
    return _dtype_refusal(entry.dtypes, dtypes, results)


def _reads_indices(node: torch.fx.Node, entry: Converter) -> bool:
    """Whether ``node``'s one result is int64 indices that a converter declares
    (``Converter.index_results``): a getitem of such a result of a multi-result
    op, or the result of an op whose ``index_results`` is ``(0,)``."""
    if node.target is operator.getitem:
        source = node.args[0]
        assert isinstance(source, torch.fx.Node)
        made_by = CONVERTERS.get(source.target)
        return made_by is not None and node.args[1] in made_by.index_results
    return entry.index_results == (0,)


_NUMBERS = (torch.float32, torch.int32, torch.int64)
"""The dtypes of the ``"same"`` and ``"compare"`` rules (``ops.DTYPE_RULES``)."""


def _dtype_refusal(
    rule: str, inputs: Sequence[torch.dtype], results: Sequence[torch.dtype]
) -> str | None:
    """Why tensors of these dtypes break the converter's ``rule`` (one of
    ``ops.DTYPE_RULES``), or None."""
    why = DTYPE_RULES[rule]
    if rule == "float32":
        why = "only float32 is computed"
        wanted_in, wanted_out = [torch.float32] * len(inputs), [torch.float32]
    elif rule == "same":
        one = (inputs or results or [torch.float32])[0]
        one = one if one in _NUMBERS else torch.float32
        wanted_in, wanted_out = [one] * len(inputs), [one]
    elif rule == "compare":
        one = (inputs or [torch.float32])[0]
        one = one if one in _NUMBERS else torch.float32
        wanted_in, wanted_out = [one] * len(inputs), [torch.bool]
    elif rule == "select":
        wanted_in = [torch.bool] + [torch.float32] * (len(inputs) - 1)
        wanted_out = [torch.float32]
    else:
        assert rule == "bool", rule
        wanted_in, wanted_out = [torch.bool] * len(inputs), [torch.bool]
    for dtype, wanted in zip(inputs, wanted_in, strict=True):
        if dtype != wanted:
            return f"an input is {dtype} ({why})"
    for dtype in results:
        if dtype not in wanted_out:
            return f"the result is {dtype} ({why})"
    return None


def unsupported_ops(gm: torch.fx.GraphModule) -> dict[str, list[str]]:
    """Every unsupported operator -> the names of the nodes that use it."""
    found: dict[str, list[str]] = {}
    for node in gm.graph.nodes:
        if node.op in ("call_module", "call_method"):
            found.setdefault(f"{node.op} {node.target}", []).append(node.name)
        if node.op != "call_function" or size_bookkeeping(node):
            continue
        reason = node_support(node)
        if reason is None or reason.startswith("getitem of an unsupported"):
            continue
        label = op_name(node.target)
        if reason != "no converter":
            label += f" ({reason})"
        found.setdefault(label, []).append(node.name)
    return found


# ---- conversion -------------------------------------------------------------


class FxConverter(FxValues):
    """Builds one tg function from an FX graph; converters get this object."""

    def convert(
        self,
        graph: torch.fx.Graph,
        constants: Mapping[str, torch.Tensor],
        outputs: int | None = None,
    ) -> ModuleOp:
        """The tg module of ``graph``; placeholders named in ``constants`` become
        constants, the others inputs. ``outputs``: keep only the last so many
        results (export lists buffer mutations first)."""
        env: dict[torch.fx.Node, Any] = {}
        self._wide_constants: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for node in graph.nodes:
            try:
                env[node] = self._node(node, env, constants)
            except GraphError as e:
                raise TorchImportError(
                    f"node '{node.name}' ({op_name(node.target)}): {e}"
                ) from None
            if node.op == "output":
                break
        output = next(n for n in graph.nodes if n.op == "output")
        results = pytree.tree_leaves(output.args[0])
        if outputs is not None:
            results = results[len(results) - outputs :]
        values = [self.tensor(env[n]) for n in results]
        self.g.output(*values, names=[n.name for n in results])
        return self.g.module()

    def _node(
        self,
        node: torch.fx.Node,
        env: dict[torch.fx.Node, Any],
        constants: Mapping[str, torch.Tensor],
    ) -> Any:
        if node.op == "placeholder":
            if node.name in constants:
                return _array(constants[node.name])
            value = node.meta.get("val")
            if not isinstance(value, torch.Tensor):
                raise GraphError(f"input '{node.name}' is not a tensor")
            if value.dtype not in _DTYPES:
                raise GraphError(f"input '{node.name}' has unsupported {value.dtype}")
            if _symbolic_shape(value) is not None:
                raise GraphError(
                    f"input '{node.name}' has the data-dependent shape "
                    f"{tuple(value.shape)}; qidao compiles static shapes only"
                )
            shape = tuple(int(d) for d in value.shape)
            return self.g.input(node.name, shape, _DTYPES[value.dtype])
        if node.op == "get_attr":
            owner = node.graph.owning_module
            assert owner is not None
            return _array(getattr(owner, str(node.target)))
        if node.op == "output":
            return None
        if node.op != "call_function":
            raise GraphError(f"{node.op} nodes are not supported")
        entry = CONVERTERS.get(node.target) or converter_for(node.target)
        if entry is None:
            raise GraphError("no converter")
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        with self.g.source(f"node '{node.name}' ({op_name(node.target)})"):
            args, kwargs = pytree.tree_map(self._widened, (args, kwargs))
            result = self._narrowed(entry.fn(self, *args, **kwargs), node)
        if isinstance(result, Value):
            result.named(node.name)
        return result

    def _widened(self, x: Any) -> Any:
        """A bfloat16/float16 tensor (a value or a constant) as float32, exact
        (``narrow.py``); anything else as it is."""
        if isinstance(x, Value) and x.dtype in NARROW.values():
            return self.g.cast(x, "float32")
        if isinstance(x, np.ndarray) and str(x.dtype) in NARROW.values():
            # one float32 copy per constant, kept: ``tensor`` caches constants by
            # the array's identity, which a temporary copy would reuse
            key = id(x)
            if key not in self._wide_constants:
                self._wide_constants[key] = (x, x.astype(np.float32))
            return self._wide_constants[key][1]
        return x

    def _narrowed(self, result: Any, node: torch.fx.Node) -> Any:
        """The converter's ``result`` with each float32 value that PyTorch types
        as bfloat16/float16 (``node.meta["val"]``) cast to that type, rounded
        once."""
        if result is None:
            return None
        typed = pytree.tree_leaves(node.meta.get("val"))
        if not any(isinstance(t, torch.Tensor) and t.dtype in NARROW for t in typed):
            return result
        made = pytree.tree_leaves(result)
        if len(made) != len(typed):
            raise GraphError(
                f"the converter made {len(made)} result(s) for PyTorch's {len(typed)}"
            )
        narrowed = [
            self.g.cast(v, NARROW[t.dtype])
            if isinstance(v, Value)
            and isinstance(t, torch.Tensor)
            and t.dtype in NARROW
            and v.dtype == "float32"
            else v
            for v, t in zip(made, typed, strict=True)
        ]
        return pytree.tree_unflatten(narrowed, pytree.tree_structure(result))


def _array(t: torch.Tensor) -> npt.NDArray[Any]:
    array = to_numpy(t.detach().cpu().contiguous())
    return np.array(array, copy=True)


def to_tg(captured: Captured, name: str = "main", mutations: bool = False) -> ModuleOp:
    """The whole captured graph as one tg module; any unsupported operator is an
    ``UnsupportedTorchOpsError`` listing all of them. Its results are the user
    outputs, after the new values of ``captured.mutated`` with ``mutations``."""
    missing = unsupported_ops(captured.graph_module)
    if missing:
        raise UnsupportedTorchOpsError(missing)
    outputs = captured.user_outputs + (len(captured.mutated) if mutations else 0)
    return FxConverter(name).convert(
        captured.graph_module.graph, captured.constants, outputs
    )


# ---- partitioning -----------------------------------------------------------


class _Support(OperatorSupportBase):  # type: ignore[misc]
    def is_node_supported(
        self, submodules: Mapping[str, torch.nn.Module], node: torch.fx.Node
    ) -> bool:
        return node.op == "call_function" and node_support(node) is None


def partition(gm: torch.fx.GraphModule, prefix: str = "qidao_") -> list[str]:
    """Fuse the supported nodes of ``gm`` (in place) into ``call_module`` submodules
    named ``<prefix><k>``; returns their names. The rest stays PyTorch.

    A part whose results nothing uses (supported nodes left dead in the graph, say
    beside a fallback) computes nothing the graph returns: it is removed, not
    compiled (a graph with no outputs is no program)."""
    partitioner = CapabilityBasedPartitioner(
        gm, _Support(), allows_single_node_partition=True
    )
    parts = partitioner.propose_partitions()
    partitioner.fuse_partitions(parts, prefix=prefix)
    names = []
    for node in list(gm.graph.nodes):
        if node.op != "call_module" or not str(node.target).startswith(prefix):
            continue
        if node.users:
            names.append(str(node.target))
        else:
            gm.graph.erase_node(node)
            gm.delete_submodule(str(node.target))
    return names
