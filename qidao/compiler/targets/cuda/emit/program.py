"""The host ``@main`` -> a launch plan (:func:`emit_program`).

``@main``'s arguments are the program's inputs and outputs (named by
``qd.input_names``/``qd.output_names``); its allocations are scratch buffers,
its ``memref.get_global`` constant buffers, its views the buffers they view, and
each call of a kernel is that kernel's launches (``launches.py``) on the
callee's buffers. The source is the preamble and every kernel's functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Operation, SSAValue
from xdsl.traits import is_side_effect_free

from qidao.compiler.targets.cuda.emit.c_types import np_dtype, span_of
from qidao.compiler.targets.cuda.emit.errors import CudaEmitError
from qidao.compiler.targets.cuda.emit.launches import KernelLaunch, emit_kernel
from qidao.compiler.targets.cuda.emit.preamble import PREAMBLE
from qidao.passes.schedule.loops.nest import KERNEL_ATTR, MEMREF_VIEWS
from qidao.runtime.cuda import BufferSpec, CudaProgram, Launch
from qidao.runtime.executor import TensorSpec

ENTRY = "main"


@dataclass
class _HostPlan:
    """The buffers and launches of ``@main``, gathered as its ops are walked."""

    functions: dict[str, func.FuncOp]
    globals_: dict[str, memref.GlobalOp]
    buffers: list[BufferSpec] = field(default_factory=list)
    buffer_of: dict[SSAValue, int] = field(default_factory=dict)
    """The buffer (its index in ``buffers``) behind each memref value."""
    launches: list[Launch] = field(default_factory=list)
    kernel_launches: dict[str, list[KernelLaunch]] = field(default_factory=dict)
    """Each kernel's functions, emitted at its first call."""

    def add_buffer(self, value: SSAValue, spec: BufferSpec) -> None:
        self.buffer_of[value] = len(self.buffers)
        self.buffers.append(spec)


def emit_program(module: ModuleOp) -> CudaProgram:
    """CUDA C for every kernel of ``module`` and the launch plan of its ``@main``."""
    functions = {
        op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)
    }
    globals_ = {
        op.sym_name.data: op for op in module.ops if isinstance(op, memref.GlobalOp)
    }
    if ENTRY not in functions:
        raise CudaEmitError(f"the module has no entry function @{ENTRY}")
    main = functions[ENTRY]
    plan = _HostPlan(functions, globals_)
    inputs, outputs = _arguments(plan, main)
    for op in main.body.block.ops:
        _host_op(plan, op)
    source = PREAMBLE + "".join(
        "\n" + kl.source + "\n" for kls in plan.kernel_launches.values() for kl in kls
    )
    return CudaProgram(
        source, tuple(plan.buffers), tuple(plan.launches), tuple(inputs), tuple(outputs)
    )


def _arguments(
    plan: _HostPlan, main: func.FuncOp
) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The inputs and outputs of ``@main``, each added to ``plan`` as a buffer."""
    args = list(main.body.block.args)
    num_inputs_attr = main.attributes.get("qd.num_inputs")
    num_inputs = (
        num_inputs_attr.value.data
        if isinstance(num_inputs_attr, IntegerAttr)
        else len(args) - len(main.function_type.outputs.data)
    )
    in_names = _string_list(main, "qd.input_names") or [
        a.name_hint or f"input{i}" for i, a in enumerate(args[:num_inputs])
    ]
    out_names = _string_list(main, "qd.output_names") or [
        f"output{j}" for j in range(len(args) - num_inputs)
    ]
    inputs: list[TensorSpec] = []
    outputs: list[TensorSpec] = []
    for i, arg in enumerate(args):
        t = arg.type
        if not isinstance(t, MemRefType):
            raise CudaEmitError(f"@{ENTRY}: argument #{i} is {t}, not a memref")
        is_input = i < num_inputs
        index = i if is_input else i - num_inputs
        name = in_names[index] if is_input else out_names[index]
        spec = TensorSpec(name, tuple(t.get_shape()), np_dtype(t.get_element_type()))
        (inputs if is_input else outputs).append(spec)
        nbytes = span_of(t, ENTRY) * np.dtype(spec.dtype).itemsize
        kind = "input" if is_input else "output"
        plan.add_buffer(arg, BufferSpec(name, kind, nbytes, index))
    return inputs, outputs


def _host_op(plan: _HostPlan, op: Operation) -> None:
    """One op of ``@main``: a buffer, a view, the launches of a call, or nothing."""
    if isinstance(op, memref.AllocOp | memref.AllocaOp):
        t = op.memref.type
        assert isinstance(t, MemRefType)
        nbytes = span_of(t, ENTRY) * np.dtype(np_dtype(t.get_element_type())).itemsize
        name = op.memref.name_hint or f"buffer{len(plan.buffers)}"
        plan.add_buffer(op.memref, BufferSpec(name, "scratch", nbytes))
    elif isinstance(op, memref.GetGlobalOp):
        symbol = op.name_.root_reference.data
        glob = plan.globals_.get(symbol)
        if glob is None:
            raise CudaEmitError(f"@{ENTRY}: no memref.global @{symbol}")
        data = _global_data(glob)
        plan.add_buffer(
            op.memref, BufferSpec(f"@{symbol}", "constant", data.nbytes, data=data)
        )
    elif isinstance(op, MEMREF_VIEWS):
        plan.buffer_of[op.results[0]] = plan.buffer_of[op.operands[0]]
    elif isinstance(op, func.CallOp):
        _call(plan, op)
    elif isinstance(op, memref.DeallocOp | func.ReturnOp) or (
        is_side_effect_free(op) and not op.regions
    ):
        return
    else:
        raise CudaEmitError(
            f"@{ENTRY}: '{op.name}' is not supported by the CUDA host plan"
        )


def _call(plan: _HostPlan, op: func.CallOp) -> None:
    """The launches of a kernel call, on the buffers of its operands."""
    callee = op.callee.root_reference.data
    functions = plan.functions
    if callee not in functions or KERNEL_ATTR not in functions[callee].attributes:
        raise CudaEmitError(f"@{ENTRY}: @{callee} is not a kernel")
    if callee not in plan.kernel_launches:
        plan.kernel_launches[callee] = emit_kernel(functions[callee])
    operands = tuple(plan.buffer_of[v] for v in op.arguments)
    for kl in plan.kernel_launches[callee]:
        plan.launches.append(
            Launch(
                callee,
                kl.function,
                kl.grid,
                kl.block,
                operands,
                kl.params,
                kl.serial,
            )
        )


def _string_list(fn: func.FuncOp, attr: str) -> list[str] | None:
    names = fn.attributes.get(attr)
    if isinstance(names, ArrayAttr):
        return [n.data for n in names.data if isinstance(n, StringAttr)]
    return None


def _global_data(glob: memref.GlobalOp) -> np.ndarray[Any, Any]:
    t = glob.type
    value = glob.initial_value
    if not isinstance(t, MemRefType) or not isinstance(value, DenseIntOrFPElementsAttr):
        raise CudaEmitError(
            f"memref.global @{glob.sym_name.data}: no dense initial value"
        )
    dtype = np_dtype(t.get_element_type())
    values = np.array(list(value.get_values()), dtype=dtype)
    count = int(np.prod(t.get_shape()))
    if values.size == 1 and count != 1:
        values = np.full(count, values[0], dtype)
    return values.reshape(t.get_shape())
