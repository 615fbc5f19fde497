"""The host ``@main`` -> a launch plan (:func:`emit_program`).

``@main``'s arguments are the program's inputs and outputs (named by
``qd.input_names``/``qd.output_names``); its allocations are scratch buffers,
its ``memref.get_global`` constant buffers, its views the buffers they view, and
each call of a kernel is that kernel's launches (``launches.py``) on the
callee's buffers. The source is the preamble and every kernel's functions.

Scratch buffers are device buffers that live as long as the loaded program
(``qidao.runtime.cuda.CudaFunction`` allocates every buffer of the plan once and
reuses them call after call), so what they cost is the sum of their sizes, not
the peak of what is live at once. On the CPU an ``alloc`` is an
``aligned_alloc`` at its place in ``@main`` and a ``dealloc`` a ``free``: the
``plan-memory`` pass keeps the peak low, and where it shares nothing (the peak
would not fall) the allocator still reuses freed memory. The host plan does the
same on the device: an ``alloc`` takes a scratch buffer that a ``dealloc`` before
it freed (the smallest that holds it, else the largest, grown; else a new one),
the way ``plan-memory`` assigns its slots. The launches run in order on one
stream, so a buffer's next holder is written only after the last launch that
reads the one before. A buffer that holds several is named ``scratch<k>``, and a
comment at the end of the source lists what it holds, in order::

    %a = alloc 16 KiB; call k0(x, %a); %b = alloc 4 KiB; call k1(%a, %b);
    dealloc %a; %c = alloc 8 KiB; call k2(%b, %c); dealloc %b; call k3(%c, y)
        ==>  scratch0 (16 KiB: a, then c), b (4 KiB): 20 KiB where three
             buffers took 28

A reused buffer still holds its previous holder's values, where a fresh one holds
0xFF bytes (NaN in every float): a kernel that reads an element no launch wrote
shows as NaN only on a buffer's first use.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
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
from qidao.compiler.targets.cuda.emit.pipeline import pipeline_preamble
from qidao.compiler.targets.cuda.emit.preamble import PREAMBLE
from qidao.compiler.targets.cuda.emit.wmma import wmma_preamble
from qidao.dialects.attributes import (
    INPUT_NAMES_ATTR,
    KERNEL_ATTR,
    NUM_INPUTS_ATTR,
    OUTPUT_NAMES_ATTR,
)
from qidao.passes.schedule.loops.nest import MEMREF_VIEWS
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
    free: list[int] = field(default_factory=list)
    """Scratch buffers whose holder a ``dealloc`` freed: the next allocs take them."""
    holders: dict[int, list[str]] = field(default_factory=dict)
    """Each scratch buffer's holders (the allocs' names), in order."""

    def add_buffer(self, value: SSAValue, spec: BufferSpec) -> None:
        self.buffer_of[value] = len(self.buffers)
        self.buffers.append(spec)

    def add_scratch(self, value: SSAValue, name: str, nbytes: int) -> None:
        """A scratch buffer for ``value``: a freed one (the smallest that holds
        ``nbytes``, else the largest, grown), else a new one."""
        fits = [b for b in self.free if self.buffers[b].nbytes >= nbytes]
        if fits or self.free:
            index = (
                min(fits, key=self._size) if fits else max(self.free, key=self._size)
            )
            self.free.remove(index)
            spec = self.buffers[index]
            self.buffers[index] = replace(spec, nbytes=max(spec.nbytes, nbytes))
            self.buffer_of[value] = index
        else:
            index = len(self.buffers)
            self.add_buffer(value, BufferSpec(name, "scratch", nbytes))
        self.holders.setdefault(index, []).append(f"{name} ({nbytes} bytes)")

    def release(self, value: SSAValue) -> None:
        """A ``dealloc``: the scratch buffer behind ``value`` is free for the next
        allocs."""
        index = self.buffer_of.get(value)
        if index is not None and index in self.holders and index not in self.free:
            self.free.append(index)

    def _size(self, index: int) -> int:
        return self.buffers[index].nbytes

    def shared_scratch(self) -> str:
        """Name each scratch buffer that several allocs took ``scratch<k>``; a
        comment listing what they hold (empty when none is shared)."""
        lines = []
        for k, index in enumerate(b for b, h in self.holders.items() if len(h) > 1):
            name = f"scratch{k}"
            self.buffers[index] = replace(self.buffers[index], name=name)
            lines.append(f"//   {name}: {', then '.join(self.holders[index])}")
        if not lines:
            return ""
        return (
            "\n// scratch buffers that hold several of @main's buffers in turn (the\n"
            "// memory plan on the device: each one a buffer freed before the next)\n"
            + "\n".join(lines)
            + "\n"
        )


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
    for name, fn in functions.items():
        label = fn.attributes.get(KERNEL_ATTR)
        if isinstance(label, StringAttr) and "tg.matmul_blockq" in label.data:
            raise CudaEmitError(
                f"kernel '{name}': tg.matmul_blockq (a weight in GGUF blocks) has "
                "no CUDA kernel yet; compile the model for the CPU"
            )
    plan = _HostPlan(functions, globals_)
    inputs, outputs = _arguments(plan, main)
    for op in main.body.block.ops:
        _host_op(plan, op)
    kernels = "".join(
        "\n" + kl.source + "\n" for kls in plan.kernel_launches.values() for kl in kls
    )
    source = wmma_preamble(kernels) + pipeline_preamble(kernels) + PREAMBLE + kernels
    source += plan.shared_scratch()
    return CudaProgram(
        source, tuple(plan.buffers), tuple(plan.launches), tuple(inputs), tuple(outputs)
    )


def _arguments(
    plan: _HostPlan, main: func.FuncOp
) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The inputs and outputs of ``@main``, each added to ``plan`` as a buffer."""
    args = list(main.body.block.args)
    num_inputs_attr = main.attributes.get(NUM_INPUTS_ATTR)
    num_inputs = (
        num_inputs_attr.value.data
        if isinstance(num_inputs_attr, IntegerAttr)
        else len(args) - len(main.function_type.outputs.data)
    )
    in_names = _string_list(main, INPUT_NAMES_ATTR) or [
        a.name_hint or f"input{i}" for i, a in enumerate(args[:num_inputs])
    ]
    out_names = _string_list(main, OUTPUT_NAMES_ATTR) or [
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
        allocs = sum(len(held) for held in plan.holders.values())
        plan.add_scratch(op.memref, op.memref.name_hint or f"alloc{allocs}", nbytes)
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
    elif isinstance(op, memref.DeallocOp):
        plan.release(op.memref)
    elif isinstance(op, func.ReturnOp) or (is_side_effect_free(op) and not op.regions):
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
