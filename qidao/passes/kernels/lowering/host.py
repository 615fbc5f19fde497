"""The host side of ``convert-tg-to-affine``: one graph function -> host + kernels.

:class:`GraphLowering` walks the graph in order. Views become
``memref.reinterpret_cast`` of the underlying buffer, constants become globals
(splats fold into elementwise kernels instead), and every compute op becomes a
private kernel function filled by the family builder registered in ``BUILDERS``,
called from the host on ``memref.alloc``'ed (or output) buffers. Deallocations go
right after each buffer's last use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from qidao.dialects import tg
from qidao.dialects.attributes import NUM_INPUTS_ATTR
from qidao.dialects.tg.types import (
    dtype_name,
    is_row_major,
    offset_of,
    shape_of,
    strides_of,
)
from qidao.passes.kernels.lowering.common import (
    Emitter,
    Kernel,
    Scalar,
    Source,
    TgLoweringError,
    memref_type,
    new_kernel,
    shape,
)
from qidao.passes.kernels.lowering.constants import ConstantPool, splat_of
from qidao.passes.kernels.lowering.conv import lower_conv2d
from qidao.passes.kernels.lowering.cumulative import lower_cumulative
from qidao.passes.kernels.lowering.dynamic_indexing import (
    lower_gather_elements,
    lower_take,
)
from qidao.passes.kernels.lowering.elementwise import lower_elementwise
from qidao.passes.kernels.lowering.fused import fused_label, lower_fused
from qidao.passes.kernels.lowering.grid_sample import lower_grid_sample
from qidao.passes.kernels.lowering.indexing import lower_concat, lower_gather
from qidao.passes.kernels.lowering.layout import copy_kernel, lower_copy
from qidao.passes.kernels.lowering.matmul import lower_matmul
from qidao.passes.kernels.lowering.matmul_blockq import lower_matmul_blockq
from qidao.passes.kernels.lowering.matmul_integer import lower_matmul_integer
from qidao.passes.kernels.lowering.nms import lower_nms_keep
from qidao.passes.kernels.lowering.nn import lower_batch_norm, lower_pool, lower_softmax
from qidao.passes.kernels.lowering.nonzero import lower_nonzero_indices
from qidao.passes.kernels.lowering.pad import lower_pad
from qidao.passes.kernels.lowering.reduce import lower_reduce
from qidao.passes.kernels.lowering.scatter import (
    lower_gather_nd,
    lower_scatter_elements,
    lower_scatter_nd,
)
from qidao.passes.kernels.lowering.sort import lower_top_k_indices
from qidao.passes.kernels.lowering.winograd import (
    lower_winograd_input,
    lower_winograd_output,
)

KernelBuilder = Callable[[Operation, Kernel, list[Source], ConstantPool], None]

BUILDERS: dict[type[Operation], KernelBuilder] = {
    tg.AvgPool2dOp: lower_pool,
    tg.BatchNormOp: lower_batch_norm,
    tg.ConcatOp: lower_concat,
    tg.ContiguousOp: lower_copy,
    tg.Conv2dOp: lower_conv2d,
    tg.CumprodOp: lower_cumulative,
    tg.CumsumOp: lower_cumulative,
    tg.FusedOp: lower_fused,
    tg.GatherElementsOp: lower_gather_elements,
    tg.GatherNdOp: lower_gather_nd,
    tg.GatherOp: lower_gather,
    tg.GridSampleOp: lower_grid_sample,
    tg.MatmulOp: lower_matmul,
    tg.MatmulBf16Op: lower_matmul_integer,
    tg.MatmulBlockqOp: lower_matmul_blockq,
    tg.MatmulIntegerOp: lower_matmul_integer,
    tg.MaxPool2dOp: lower_pool,
    tg.PadOp: lower_pad,
    tg.ReduceMaxOp: lower_reduce,
    tg.NmsKeepOp: lower_nms_keep,
    tg.NonzeroIndicesOp: lower_nonzero_indices,
    tg.ReduceMeanOp: lower_reduce,
    tg.ReduceProdOp: lower_reduce,
    tg.ReduceSumOp: lower_reduce,
    tg.ReshapeOp: lower_copy,
    tg.ScatterElementsOp: lower_scatter_elements,
    tg.ScatterNdOp: lower_scatter_nd,
    tg.SoftmaxOp: lower_softmax,
    tg.TakeOp: lower_take,
    tg.TopKIndicesOp: lower_top_k_indices,
    tg.WinogradInputOp: lower_winograd_input,
    tg.WinogradOutputOp: lower_winograd_output,
    **{cls: lower_elementwise for cls in tg.ELEMENTWISE_OPS},
}

# ops whose splat-constant operands become arith.constant inside the kernel
_FOLDS_SPLATS = (tg.ElementwiseOp, tg.FusedOp)

_VIEW_OPS = (tg.TransposeOp, tg.ViewOp, tg.BroadcastOp, tg.SliceOp)


def is_view(op: Operation) -> bool:
    """Ops that lower to a reinterpret_cast (or nothing): no kernel, no copy."""
    if isinstance(op, _VIEW_OPS):
        return True
    if isinstance(op, tg.ReshapeOp):
        return not op.is_copy()
    if isinstance(op, tg.ContiguousOp):
        return is_row_major(op.input.type)
    return False


def contains_tg(f: func.FuncOp) -> bool:
    """A tg graph: it holds tg ops or takes or returns tensors (an identity graph)."""
    signature = (*f.function_type.inputs.data, *f.function_type.outputs.data)
    return any(isinstance(t, TensorType) for t in signature) or any(
        op.dialect_name() == "tg" for op in f.walk()
    )


def _dtype(t: Attribute) -> np.dtype[Any]:
    assert isinstance(t, TensorType)
    return np.dtype(dtype_name(t.get_element_type()))


@dataclass
class _Value:
    """What a graph value is on the host: a buffer, a splat, or a constant not yet
    materialized as a global."""

    memref: SSAValue | None = None
    splat: Scalar | None = None
    constant: DenseIntOrFPElementsAttr | None = None


class GraphLowering:
    def __init__(self, module: ModuleOp, graph: func.FuncOp) -> None:
        self.module = module
        self.graph = graph
        self.name = graph.sym_name.data
        self.pool = ConstantPool(module.body.block, graph, self.name)
        self.values: dict[SSAValue, _Value] = {}
        self.kernel_count = 0

    # ------------------------------------------------------------------------------

    def run(self) -> None:
        graph = self.graph
        if len(graph.body.blocks) != 1:
            raise TgLoweringError(
                f"convert-tg-to-affine: @{self.name} must have a single block"
            )
        old = graph.body.block
        ret = old.last_op
        if not isinstance(ret, func.ReturnOp):
            raise TgLoweringError(
                f"convert-tg-to-affine: @{self.name} must end with func.return"
            )
        in_types = [memref_type(a.type) for a in old.args]
        out_types = [memref_type(_row_major(v.type)) for v in ret.arguments]
        block = Block(arg_types=[*in_types, *out_types])
        for new, arg in zip(block.args, old.args, strict=False):
            new.name_hint = arg.name_hint
            self.values[arg] = _Value(memref=new)
        outputs = list(block.args[len(in_types) :])
        for k, out in enumerate(outputs):
            out.name_hint = f"out{k}"
        self.em = Emitter(block)

        # a compute result returned (first occurrence) is written straight into %outK
        self.direct: dict[SSAValue, SSAValue] = {}
        for k, v in enumerate(ret.arguments):
            op = v.owner
            if not isinstance(op, Operation) or type(op) not in BUILDERS:
                continue
            if not is_view(op) and v not in self.direct:
                self.direct[v] = outputs[k]

        for op in old.ops:
            if op is ret:
                break
            self.lower_op(op)
        for k, v in enumerate(ret.arguments):
            if self.direct.get(v) is not outputs[k]:
                self.copy_into(v, outputs[k])
        self.em.add(func.ReturnOp())
        _insert_deallocs(block)

        host = func.FuncOp(
            self.name,
            ([*in_types, *out_types], []),
            Region(block),
            graph.sym_visibility,
        )
        for key, attr in graph.attributes.items():
            host.attributes[key] = attr
        host.attributes[NUM_INPUTS_ATTR] = IntegerAttr(len(in_types), i64)
        self.module.body.block.insert_op_before(host, graph)
        graph.detach()
        graph.erase(drop_references=True)

    # ------------------------------------------------------------------------------

    def lower_op(self, op: Operation) -> None:
        if isinstance(op, tg.ConstantOp):
            self.values[op.result] = _Value(splat=splat_of(op.value), constant=op.value)
        elif is_view(op):
            self.lower_view(op)
        elif type(op) in BUILDERS:
            self.lower_compute(op)
        elif isinstance(op, tg.CustomOp):
            raise TgLoweringError(
                f"convert-tg-to-affine: {op.label} in @{self.name} is a custom op; "
                "the expand-custom pass replaces it by its body before lowering"
            )
        elif op.name.startswith("tg."):
            raise TgLoweringError(
                f"convert-tg-to-affine: cannot lower '{op.name}' in @{self.name}: "
                "no kernel builder is registered for it (BUILDERS in "
                "qidao/passes/kernels/lowering/host.py)"
            )
        else:
            raise TgLoweringError(
                f"convert-tg-to-affine: cannot lower '{op.name}' in @{self.name} "
                "(graphs hold tg ops and one func.return)"
            )

    def buffer(self, value: SSAValue) -> SSAValue:
        """The memref holding ``value``, creating its global on first use."""
        v = self.values[value]
        if v.memref is None:
            assert v.constant is not None
            name = self.pool.global_for(v.constant)
            get = memref.GetGlobalOp(name, memref_type(v.constant.type))
            v.memref = self.em.value(get)
        return v.memref

    def lower_view(self, op: Operation) -> None:
        src, result = op.operands[0], op.results[0]
        v = self.values[src]
        if v.splat is not None:  # a splat viewed is a splat; kept as a constant of
            # the view's shape too, for an op that takes no splats (tg.concat)
            full = tg.ConstantOp.from_numpy(
                np.full(shape_of(result.type), v.splat.value, _dtype(result.type))
            )
            self.values[result] = _Value(splat=v.splat, constant=full.value)
            return
        if src.type == result.type:
            self.values[result] = _Value(memref=self.buffer(src))
            return
        t = result.type
        assert isinstance(t, TensorType)
        cast = memref.ReinterpretCastOp(
            self.buffer(src),
            [],
            [],
            [],
            [offset_of(t)],
            list(t.get_shape()),
            list(strides_of(t)),
            memref_type(t),
        )
        cast.result.name_hint = result.name_hint
        self.values[result] = _Value(memref=self.em.value(cast))

    def lower_compute(self, op: Operation) -> None:
        folds = isinstance(op, _FOLDS_SPLATS)
        args: list[SSAValue] = []
        hints: list[str | None] = []
        sources: list[Source] = []
        operands = op.operands
        for operand in operands:
            v = self.values[operand]
            if folds and v.splat is not None:
                sources.append(v.splat)
                continue
            buf = self.buffer(operand)
            if buf not in args:
                args.append(buf)
                hints.append(operand.name_hint)
            sources.append(buf)
        outs: list[SSAValue] = []
        for result in op.results:
            out = self.direct.get(result)
            if out is None:
                alloc = memref.AllocOp(
                    [], [], memref_type(result.type), IntegerAttr(64, i64)
                )
                alloc.memref.name_hint = result.name_hint
                out = self.em.value(alloc)
            self.values[result] = _Value(memref=out)
            outs.append(out)
        label = fused_label(op) if isinstance(op, tg.FusedOp) else op.name
        short = op.name.removeprefix("tg.")
        kernel = self.kernel(short, label, args, hints, [r.type for r in op.results])
        # the builder sees the kernel's own arguments
        inner = dict(zip(args, kernel.inputs, strict=True))
        sources = [s if isinstance(s, Scalar) else inner[s] for s in sources]
        BUILDERS[type(op)](op, kernel, sources, self.pool)
        self.call(kernel, [*args, *outs])

    def copy_into(self, value: SSAValue, out: SSAValue) -> None:
        """A ``copy`` kernel from ``value`` (any layout, or a splat) into ``out``."""
        v = self.values[value]
        args = [] if v.splat is not None else [self.buffer(value)]
        hints = [value.name_hint] * len(args)
        kernel = self.kernel("copy", "copy", args, hints, [value.type])
        src: Source = v.splat if v.splat is not None else kernel.inputs[0]
        copy_kernel(kernel, src, shape(value), shape(value))
        self.call(kernel, [*args, out])

    # ------------------------------------------------------------------------------

    def kernel(
        self,
        short: str,
        label: str,
        args: list[SSAValue],
        hints: list[str | None],
        result_types: list[Attribute],
    ) -> Kernel:
        name = f"{self.name}_k{self.kernel_count}_{short}"
        self.kernel_count += 1
        ins = [
            (hint or f"in{i}", a.type)
            for i, (a, hint) in enumerate(zip(args, hints, strict=True))
        ]
        outs = [
            ("out" if len(result_types) == 1 else f"out{i}", memref_type(_row_major(t)))
            for i, t in enumerate(result_types)
        ]
        return new_kernel(name, label, ins, outs)

    def call(self, kernel: Kernel, operands: list[SSAValue]) -> None:
        f = kernel.finish()
        self.module.body.block.insert_op_before(f, self.graph)
        self.em.add(func.CallOp(f.sym_name.data, operands, []))


def _row_major(t: Attribute) -> Attribute:
    assert isinstance(t, TensorType)
    return TensorType(t.get_element_type(), t.get_shape())


def _insert_deallocs(block: Block) -> None:
    """``memref.dealloc`` of every alloc right after its (or its views') last use."""
    root: dict[SSAValue, SSAValue] = {}
    last_use: dict[SSAValue, Operation] = {}
    allocs: list[SSAValue] = []
    for op in block.ops:
        for operand in op.operands:
            if operand in root:
                last_use[root[operand]] = op
        if isinstance(op, memref.AllocOp):
            root[op.memref] = op.memref
            allocs.append(op.memref)
            last_use[op.memref] = op
        elif isinstance(op, memref.ReinterpretCastOp) and op.source in root:
            root[op.result] = root[op.source]
    for alloc in reversed(allocs):
        block.insert_op_after(memref.DeallocOp.get(alloc), last_use[alloc])
