"""``convert-to-llvm`` for functions and control flow: func + cf -> llvm (not a pass).

``lower_function`` rebuilds one ``func.func`` as an ``llvm.func`` with external
linkage: memref arguments become ``!llvm.ptr`` (their ``llvm.*`` argument attributes,
such as ``llvm.noalias``, carried over), index arguments ``i64``; at most one result.
Blocks are recreated with converted argument types; each op goes to the handler of
its type, and ops already in the llvm dialect are copied with remapped operands.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects import cf, func, llvm
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr
from xdsl.ir import Attribute, Block, Operation, Region

from qidao.dialects.attributes import ROLLED_ATTR
from qidao.passes.cpu.llvm.lowering import (
    FunctionLowering,
    Handler,
    LoweringError,
    convert_type,
)


def _call(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, func.CallOp)
    if len(op.res) > 1:
        raise LoweringError(
            f"convert-to-llvm: call to @{op.callee.string_value()} returns "
            f"{len(op.res)} values; at most one is supported"
        )
    result = convert_type(op.res[0].type) if op.res else None
    call = fl.emit(
        llvm.CallOp(op.callee.string_value(), *fl.operands(op), return_type=result)
    )
    if op.res:
        assert call.returned is not None
        fl.bind(op.res[0], call.returned)


def _return(op: Operation, fl: FunctionLowering) -> None:
    values = fl.operands(op)
    if len(values) > 1:
        raise LoweringError("convert-to-llvm: func.return of several values")
    fl.emit(llvm.ReturnOp(values[0] if values else None))


def _br(op: Operation, fl: FunctionLowering) -> None:
    """``cf.br`` -> ``llvm.br``; a loop's back edge keeps ``qd.rolled``
    (``lower-scf-to-cf``), which the emitter turns into loop metadata."""
    assert isinstance(op, cf.BranchOp)
    br = fl.emit(llvm.BrOp(fl.blocks[op.successor], *fl.operands(op)))
    if ROLLED_ATTR in op.attributes:
        br.attributes[ROLLED_ATTR] = op.attributes[ROLLED_ATTR]


def _cond_br(op: Operation, fl: FunctionLowering) -> None:
    assert isinstance(op, cf.ConditionalBranchOp)
    fl.emit(
        llvm.CondBrOp(
            fl.get(op.cond),
            fl.blocks[op.then_block],
            [fl.get(v) for v in op.then_arguments],
            fl.blocks[op.else_block],
            [fl.get(v) for v in op.else_arguments],
        )
    )


HANDLERS: dict[type[Operation], Handler] = {
    func.CallOp: _call,
    func.ReturnOp: _return,
    cf.BranchOp: _br,
    cf.ConditionalBranchOp: _cond_br,
}


def _llvm_arg_attrs(op: func.FuncOp) -> ArrayAttr[DictionaryAttr] | None:
    if op.arg_attrs is None:
        return None
    kept = [
        DictionaryAttr({k: v for k, v in d.data.items() if k.startswith("llvm.")})
        for d in op.arg_attrs.data
    ]
    if not any(d.data for d in kept):
        return None
    return ArrayAttr(kept)


def lower_op(
    op: Operation, fl: FunctionLowering, handlers: Mapping[type[Operation], Handler]
) -> None:
    handler = handlers.get(type(op))
    if handler is not None:
        handler(op, fl)
        return
    if op.name.startswith("llvm."):
        fl.emit(op.clone(value_mapper=fl.values, block_mapper=fl.blocks))
        return
    raise LoweringError(
        f"convert-to-llvm: no lowering for '{op.name}' (lower affine/scf first: "
        "lower-affine, lower-scf-to-cf)"
    )


def lower_function(
    op: func.FuncOp,
    handlers: Mapping[type[Operation], Handler],
    externs: dict[str, llvm.LLVMFunctionType],
) -> llvm.FuncOp:
    """The ``llvm.func`` equivalent of ``op``."""
    outputs = op.function_type.outputs.data
    if len(outputs) > 1:
        raise LoweringError(
            f"convert-to-llvm: @{op.sym_name.data} returns {len(outputs)} values; "
            "at most one is supported"
        )
    inputs = [convert_type(t) for t in op.function_type.inputs.data]
    output: Attribute | None = convert_type(outputs[0]) if outputs else None
    region = Region()
    fl = FunctionLowering(region, externs)
    for block in op.body.blocks:
        new_block = Block(arg_types=[convert_type(a.type) for a in block.args])
        region.add_block(new_block)
        fl.blocks[block] = new_block
        for old, new in zip(block.args, new_block.args, strict=True):
            fl.bind(old, new)
    for block in op.body.blocks:
        fl.block = fl.blocks[block]
        for inner in block.ops:
            lower_op(inner, fl, handlers)
    props: dict[str, Attribute | None] = {}
    arg_attrs = _llvm_arg_attrs(op)
    if arg_attrs is not None:
        props["arg_attrs"] = arg_attrs
    return llvm.FuncOp(
        op.sym_name.data,
        llvm.LLVMFunctionType(inputs, output),
        linkage=llvm.LinkageAttr("external"),
        body=region,
        other_props=props,
    )
