"""Structural checks of convert-tg-to-affine over every tg op kind, and its errors.

For each op: the output verifies, holds no tg op and no tensor type, every kernel is
a private result-less function with ``llvm.noalias`` arguments and a ``qd.kernel``
tag, every ``affine.for`` is named (uniquely within its kernel, in the documented
order), the kernel bodies use only ops the back end lowers, and every alloc is
freed once. The IR of particular cases (fusion groups, the host side, the NHWC
kernels) is checked in ``tests/filecheck/passes/kernels/convert_tg_to_affine*.mlir``;
the errors stay here, one module each, as the pass stops at the first.
"""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects import affine, arith, builtin, func, llvm, math, memref
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.parser import Parser

from qidao.dialects.tg import TG
from qidao.passes.kernels.convert_tg_to_affine import (
    ConvertTgToAffinePass,
    TgLoweringError,
)

T = "tensor<2x3xf32>"
INT = "tensor<2x3xi32>"
NCHW = "tensor<1x2x5x5xf32>"
B = "tensor<2x3xi1>"

# op -> (graph arguments, body, result, loop names of each kernel in order)
CASES: dict[str, tuple[str, str, str, list[list[str]]]] = {
    "tg.add": (
        f"%a: {T}, %b: tensor<3xf32>",
        f"%r = tg.add %a, %b : ({T}, tensor<3xf32>) -> {T}",
        f"%r : {T}",
        [["i0", "i1"]],
    ),
    **{
        name: (
            f"%a: {T}, %b: {T}",
            f"%r = {name} %a, %b : ({T}, {T}) -> {T}",
            f"%r : {T}",
            [["i0", "i1"]],
        )
        for name in ("tg.sub", "tg.mul", "tg.div", "tg.max", "tg.min")
    },
    **{
        name: (f"%a: {T}", f"%r = {name} %a : {T} -> {T}", f"%r : {T}", [["i0", "i1"]])
        for name in (
            "tg.neg",
            "tg.exp",
            "tg.log",
            "tg.sqrt",
            "tg.tanh",
            "tg.erf",
            "tg.sin",
            "tg.cos",
            "tg.sigmoid",
            "tg.relu",
            "tg.round",
            "tg.tan",
            "tg.asin",
            "tg.acos",
            "tg.atan",
            "tg.sinh",
            "tg.cosh",
            "tg.asinh",
            "tg.acosh",
            "tg.atanh",
        )
    },
    **{
        name: (
            f"%a: {INT}, %b: {INT}",
            f"%r = {name} %a, %b : ({INT}, {INT}) -> {INT}",
            f"%r : {INT}",
            [["i0", "i1"]],
        )
        for name in (
            "tg.bitwise_and",
            "tg.bitwise_or",
            "tg.bitwise_xor",
            "tg.shift_left",
            "tg.shift_right",
        )
    },
    "tg.bitwise_not": (
        f"%a: {INT}",
        f"%r = tg.bitwise_not %a : {INT} -> {INT}",
        f"%r : {INT}",
        [["i0", "i1"]],
    ),
    "tg.fmod": (
        f"%a: {T}, %b: {T}",
        f"%r = tg.fmod %a, %b : ({T}, {T}) -> {T}",
        f"%r : {T}",
        [["i0", "i1"]],
    ),
    **{
        name: (
            f"%a: {T}",
            f"%r = {name} %a axis = 1 : {T} -> {T}",
            f"%r : {T}",
            [["i0", "i1"]],
        )
        for name in ("tg.cumsum", "tg.cumprod")
    },
    "tg.top_k_indices": (
        f"%a: {T}",
        f"%r = tg.top_k_indices %a axis = 1 k = 2 largest : {T} -> tensor<2x2xi64>",
        "%r : tensor<2x2xi64>",
        # per row: the k slots set to 0, then every entry walks the slots
        [["i0", "p_init", "i1", "p"]],
    ),
    "tg.nms_keep": (
        "%b: tensor<1x5x4xf32>, %s: tensor<1x2x5xf32>, %o: tensor<1x2x5xi64>",
        "%r = tg.nms_keep %b, %s, %o max = 2 iou = 5.000000e-01 score = "
        "1.000000e-01 : (tensor<1x5x4xf32>, tensor<1x2x5xf32>, tensor<1x2x5xi64>) "
        "-> tensor<1x2x5xi1>",
        "%r : tensor<1x2x5xi1>",
        # per class: the boxes in score order, each against every earlier slot
        [["b", "c", "r", "q"]],
    ),
    "tg.nonzero_indices": (
        f"%a: {T}",
        f"%r = tg.nonzero_indices %a : {T} -> tensor<2x6xi64>",
        "%r : tensor<2x6xi64>",
        # the columns zero-filled, then one walk of the entries with the count
        [["d", "c", "i0", "i1"]],
    ),
    "tg.reduce_prod": (
        "%x: tensor<2x3x4xf32>",
        "%r = tg.reduce_prod %x axes = [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>",
        "%r : tensor<3xf32>",
        [["i0", "r0", "r1"]],
    ),
    "tg.abs": (f"%a: {T}", f"%r = tg.abs %a : {T} -> {T}", f"%r : {T}", [["i0", "i1"]]),
    "tg.pow": (
        f"%a: {T}, %b: {T}",
        f"%r = tg.pow %a, %b : ({T}, {T}) -> {T}",
        f"%r : {T}",
        [["i0", "i1"]],
    ),
    **{
        name: (
            f"%a: {T}, %b: tensor<3xf32>",
            f"%r = {name} %a, %b : ({T}, tensor<3xf32>) -> {B}",
            f"%r : {B}",
            [["i0", "i1"]],
        )
        for name in (
            "tg.less",
            "tg.less_equal",
            "tg.greater",
            "tg.greater_equal",
            "tg.equal",
            "tg.not_equal",
        )
    },
    **{
        name: (
            f"%a: {B}, %b: {B}",
            f"%r = {name} %a, %b : ({B}, {B}) -> {B}",
            f"%r : {B}",
            [["i0", "i1"]],
        )
        for name in ("tg.logical_and", "tg.logical_or", "tg.logical_xor")
    },
    "tg.logical_not": (
        f"%a: {B}",
        f"%r = tg.logical_not %a : {B} -> {B}",
        f"%r : {B}",
        [["i0", "i1"]],
    ),
    "tg.select": (
        f"%c: {B}, %a: {T}, %b: tensor<f32>",
        f"%r = tg.select %c, %a, %b : ({B}, {T}, tensor<f32>) -> {T}",
        f"%r : {T}",
        [["i0", "i1"]],
    ),
    "tg.cast": (
        f"%a: {T}",
        "%r = tg.cast %a : tensor<2x3xf32> -> tensor<2x3xi64>",
        "%r : tensor<2x3xi64>",
        [["i0", "i1"]],
    ),
    "tg.matmul": (
        "%a: tensor<5x2x3xf32>, %b: tensor<3x4xf32>",
        "%r = tg.matmul %a, %b : (tensor<5x2x3xf32>, tensor<3x4xf32>) -> tensor<5x2x4xf32>",
        "%r : tensor<5x2x4xf32>",
        [["b0_init", "i_init", "j_init", "b0", "i", "k", "j"]],
    ),
    "tg.matmul_integer": (
        "%a: tensor<5x2x8xui8>, %b: tensor<2x4x4xi8>",
        '%r = tg.matmul_integer %a, %b rhs_layout = "vnni" : (tensor<5x2x8xui8>, tensor<2x4x4xi8>) -> tensor<5x2x4xi32>',
        "%r : tensor<5x2x4xi32>",
        [["b0_init", "i_init", "j_init", "b0", "i", "k", "j", "r"]],
    ),
    "tg.matmul_bf16": (
        "%a: tensor<5x2x4xbf16>, %b: tensor<1x2x16x2xbf16>",
        '%r = tg.matmul_bf16 %a, %b rhs_layout = "vnni_panels" : (tensor<5x2x4xbf16>, tensor<1x2x16x2xbf16>) -> tensor<5x2x16xf32>',
        "%r : tensor<5x2x16xf32>",
        [["b0_init", "i_init", "j_init", "b0", "i", "k", "j", "r"]],
    ),
    "tg.matmul_blockq": (
        "%a: tensor<5x2x64xf32>, %b: tensor<3x2x18xi8>",
        '%r = tg.matmul_blockq %a, %b encoding = "Q4_0" : (tensor<5x2x64xf32>, tensor<3x2x18xi8>) -> tensor<5x2x3xf32>',
        "%r : tensor<5x2x3xf32>",
        [
            [
                *("n", "b0", "i_o", "i_init", "e_init", "blk", "e_lo", "e_hi"),
                *("i_i", "e_mul", "i_sum", "e_sum"),
            ]
        ],
    ),
    "tg.conv2d": (
        f"%x: {NCHW}, %w: tensor<4x1x3x3xf32>, %b: tensor<4xf32>",
        f"%r = tg.conv2d %x, %w, %b strides = [2, 2] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 2 : ({NCHW}, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>",
        "%r : tensor<1x4x3x3xf32>",
        [["n", "f", "oh", "ow", "c", "kh", "kw"]],
    ),
    "tg.max_pool2d": (
        f"%x: {NCHW}",
        f"%r = tg.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [1, 1, 1, 1] dilation = [1, 1] : {NCHW} -> tensor<1x2x3x3xf32>",
        "%r : tensor<1x2x3x3xf32>",
        [["n", "c", "oh", "ow", "kh", "kw"]],
    ),
    "tg.avg_pool2d": (
        f"%x: {NCHW}",
        f"%r = tg.avg_pool2d %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] : {NCHW} -> tensor<1x2x5x5xf32>",
        "%r : tensor<1x2x5x5xf32>",
        [["n", "c", "oh", "ow", "kh", "kw"]],
    ),
    "tg.batch_norm": (
        f"%x: {NCHW}, %s: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>",
        f"%r = tg.batch_norm %x, %s, %b, %m, %v epsilon = 1.000000e-05 : {NCHW}, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> {NCHW}",
        f"%r : {NCHW}",
        [["i0", "i1", "i2", "i3"]],
    ),
    "tg.softmax": (
        "%x: tensor<2x3x4xf32>",
        "%r = tg.softmax %x axis = 1 : tensor<2x3x4xf32> -> tensor<2x3x4xf32>",
        "%r : tensor<2x3x4xf32>",
        [["i0", "i1", "r_max", "r_sum", "r_norm"]],
    ),
    "tg.reduce_sum": (
        "%x: tensor<2x3x4xf32>",
        "%r = tg.reduce_sum %x axes = [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>",
        "%r : tensor<3xf32>",
        [["i0", "r0", "r1"]],
    ),
    "tg.reduce_mean": (
        "%x: tensor<2x3x4xf32>",
        "%r = tg.reduce_mean %x axes = [1] keepdims : tensor<2x3x4xf32> -> tensor<2x1x4xf32>",
        "%r : tensor<2x1x4xf32>",
        # the kept last axis innermost: init, accumulate into the output, divide
        [["i0_init", "i1_init", "i0", "r0", "i1", "i0_norm", "i1_norm"]],
    ),
    "tg.reduce_max": (
        "%x: tensor<2x3x4xf32>",
        "%r = tg.reduce_max %x axes = [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>",
        "%r : tensor<f32>",
        [["r0", "r1", "r2"]],
    ),
    "tg.constant": (
        "%x: tensor<2xf32>",
        "%c = tg.constant dense<[1.0, 2.0]> : tensor<2xf32>\n"
        "  %r = tg.add %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
        "%r : tensor<2xf32>",
        [["i0"]],
    ),
    "tg.transpose": (
        f"%a: {T}",
        f"%t = tg.transpose %a perm = [1, 0] : {T} -> tensor<3x2xf32, strided<[1, 3]>>\n"
        "  %r = tg.neg %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>",
        "%r : tensor<3x2xf32>",
        [["i0", "i1"]],
    ),
    "tg.view": (
        f"%a: {T}",
        f"%v = tg.view %a : {T} -> tensor<6xf32>\n"
        "  %r = tg.neg %v : tensor<6xf32> -> tensor<6xf32>",
        "%r : tensor<6xf32>",
        [["i0"]],
    ),
    "tg.broadcast": (
        "%a: tensor<3xf32>",
        "%v = tg.broadcast %a : tensor<3xf32> -> tensor<2x3xf32, strided<[0, 1]>>\n"
        f"  %r = tg.neg %v : tensor<2x3xf32, strided<[0, 1]>> -> {T}",
        f"%r : {T}",
        [["i0", "i1"]],
    ),
    "tg.reshape": (
        f"%a: {T}",
        f"%t = tg.transpose %a perm = [1, 0] : {T} -> tensor<3x2xf32, strided<[1, 3]>>\n"
        "  %r = tg.reshape %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<6xf32>",
        "%r : tensor<6xf32>",
        [["i0"]],
    ),
    "tg.contiguous": (
        f"%a: {T}",
        f"%t = tg.transpose %a perm = [1, 0] : {T} -> tensor<3x2xf32, strided<[1, 3]>>\n"
        "  %r = tg.contiguous %t : tensor<3x2xf32, strided<[1, 3]>> -> tensor<3x2xf32>",
        "%r : tensor<3x2xf32>",
        [["i0", "i1"]],
    ),
    "tg.pad": (
        f"%a: {T}",
        f"%r = tg.pad %a low = [1, 0] high = [0, 0] value = 0.000000e+00 : {T} -> "
        "tensor<3x3xf32>",
        "%r : tensor<3x3xf32>",
        [["i0", "i1", "i1_fill"]],
    ),
    "tg.winograd_input": (
        "%a: tensor<1x6x10x2xf32>",
        "%r = tg.winograd_input %a tiles = [1, 2] : tensor<1x6x10x2xf32> -> "
        "tensor<2x36x2xf32>",
        "%r : tensor<2x36x2xf32>",
        [["n", "th", "tw", "c"]],
    ),
    "tg.winograd_output": (
        "%a: tensor<36x2x3xf32>, %b: tensor<3xf32>",
        "%r = tg.winograd_output %a, %b tiles = [1, 1, 2] : (tensor<36x2x3xf32>, "
        "tensor<3xf32>) -> tensor<1x4x8x3xf32>",
        "%r : tensor<1x4x8x3xf32>",
        [["n", "th", "tw", "f"]],
    ),
    "tg.concat": (
        f"%a: {T}, %b: tensor<2x1xf32>",
        f"%r = tg.concat %a, %b axis = 1 : ({T}, tensor<2x1xf32>) -> tensor<2x4xf32>",
        "%r : tensor<2x4xf32>",
        [["i0_0", "i1_0", "i0_1", "i1_1"]],
    ),
    "tg.slice": (
        f"%a: {T}",
        f"%s = tg.slice %a start = [1, 0] stop = [2, 3] step = [1, 2] : {T} -> "
        "tensor<1x2xf32, strided<[3, 2], offset: 3>>\n"
        "  %r = tg.neg %s : tensor<1x2xf32, strided<[3, 2], offset: 3>> -> "
        "tensor<1x2xf32>",
        "%r : tensor<1x2xf32>",
        [["i0", "i1"]],
    ),
    "tg.gather": (
        f"%a: {T}",
        f"%r = tg.gather %a axis = 1 indices = [2, 0, -1] : {T} -> {T}",
        f"%r : {T}",
        [["i0_0", "i1_0", "i0_1", "i1_1"]],
    ),
    "tg.take": (
        f"%a: {T}, %i: tensor<2x2xi64>",
        f"%r = tg.take %a, %i axis = 1 : ({T}, tensor<2x2xi64>) -> tensor<2x2x2xf32>",
        "%r : tensor<2x2x2xf32>",
        [["i0", "i1", "i2"]],
    ),
    "tg.gather_elements": (
        f"%a: {T}, %i: tensor<2x2xi32>",
        f"%r = tg.gather_elements %a, %i axis = 1 : ({T}, tensor<2x2xi32>) -> "
        "tensor<2x2xf32>",
        "%r : tensor<2x2xf32>",
        [["i0", "i1"]],
    ),
    "tg.scatter_elements": (
        f"%a: {T}, %i: tensor<2x2xi64>, %u: tensor<2x2xf32>",
        f'%r = tg.scatter_elements %a, %i, %u axis = 1 reduction = "add" : ({T}, '
        f"tensor<2x2xi64>, tensor<2x2xf32>) -> {T}",
        f"%r : {T}",
        [["i0", "i1", "u0", "u1"]],
    ),
    "tg.scatter_nd": (
        f"%a: {T}, %i: tensor<2x1xi32>, %u: {T}",
        f'%r = tg.scatter_nd %a, %i, %u reduction = "none" : ({T}, '
        f"tensor<2x1xi32>, {T}) -> {T}",
        f"%r : {T}",
        [["i0", "i1", "u0", "s0"]],
    ),
    "tg.gather_nd": (
        f"%a: {T}, %i: tensor<4x2xi64>",
        f"%r = tg.gather_nd %a, %i batch_dims = 0 : ({T}, tensor<4x2xi64>) -> "
        "tensor<4xf32>",
        "%r : tensor<4xf32>",
        [["i0"]],
    ),
    "tg.grid_sample": (
        "%a: tensor<1x2x3x4xf32>, %g: tensor<1x2x2x2xf32>",
        '%r = tg.grid_sample %a, %g mode = "cubic" padding_mode = "reflection" '
        "align_corners = 0 : (tensor<1x2x3x4xf32>, tensor<1x2x2x2xf32>) -> "
        "tensor<1x2x2x2xf32>",
        "%r : tensor<1x2x2x2xf32>",
        [["n", "o0", "o1", "c"]],
    ),
    "tg.fused": (
        f"%a: {T}, %b: tensor<3xf32>",
        f"""%r = tg.fused %a, %b : ({T}, tensor<3xf32>) -> {T} {{
  ^bb0(%x: {T}, %y: tensor<3xf32>):
    %s = tg.add %x, %y : ({T}, tensor<3xf32>) -> {T}
    %e = tg.exp %s : {T} -> {T}
    tg.yield %e : {T}
  }}""",
        f"%r : {T}",
        [["i0", "i1"]],
    ),
}

# ops that have no case of their own: tg.yield only appears inside tg.fused
COVERED_ELSEWHERE = {
    "tg.yield",
    # expand-custom replaces a custom op by its body before lowering; the lowering
    # refuses one that is left (test_a_custom_op_is_expanded_first)
    "tg.custom",
    "tg.custom_yield",
}

ALLOWED_IN_KERNELS = (
    affine.ForOp,
    affine.YieldOp,
    affine.LoadOp,
    affine.StoreOp,
    affine.ApplyOp,
    affine.IfOp,
    affine.MinOp,
    arith.AddfOp,
    arith.SubfOp,
    arith.MulfOp,
    arith.DivfOp,
    arith.MaximumfOp,
    arith.MinimumfOp,
    arith.NegfOp,
    arith.CmpfOp,
    arith.AndIOp,
    arith.OrIOp,
    arith.XOrIOp,
    arith.SelectOp,
    arith.FPToSIOp,
    arith.ConstantOp,
    # the runtime index of tg.take / tg.gather_elements, and its data read
    arith.IndexCastOp,
    arith.CmpiOp,
    arith.AddiOp,
    arith.MaxSIOp,
    arith.MinSIOp,
    memref.LoadOp,
    # a scatter's update: its combined entry, stored at a loaded position
    memref.StoreOp,
    math.AbsFOp,
    math.PowFOp,
    math.ExpOp,
    math.LogOp,
    math.SqrtOp,
    math.TanhOp,
    math.ErfOp,
    math.SinOp,
    math.CosOp,
    math.RoundEvenOp,  # tg.round
    # the inverse and hyperbolic trig functions (libm calls below), fmod
    math.TanOp,
    math.AsinOp,
    math.AcosOp,
    math.AtanOp,
    math.SinhOp,
    math.CoshOp,
    math.AsinhOp,
    math.AcoshOp,
    math.AtanhOp,
    llvm.FRemOp,
    # bitwise ops and shifts by any amount (clamped, then selected)
    arith.ShLIOp,
    arith.ShRSIOp,
    arith.ShRUIOp,
    arith.MinUIOp,
    arith.MulfOp,
    arith.MuliOp,
    # tg.matmul_integer: each byte widened to i32 by its signedness
    arith.ExtUIOp,
    arith.ExtSIOp,
    # tg.matmul_bf16: each bfloat16 widened (its 16 bits the top half of an f32)
    arith.BitcastOp,
    # tg.matmul_blockq: its lanes, a scratch buffer of its own; a block's
    # float16 scale widened, its integers made floats
    memref.AllocOp,
    memref.DeallocOp,
    arith.ExtFOp,
    arith.SIToFPOp,
    # tg.grid_sample: positions (floor, kept finite) and reflected entries
    math.FloorOp,
    arith.MaxnumfOp,
    arith.MinnumfOp,
    arith.SubiOp,
    arith.RemSIOp,
    memref.GetGlobalOp,
    func.ReturnOp,
)


def parse(text: str) -> ModuleOp:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, TG):
        ctx.load_dialect(dialect)
    return Parser(ctx, text).parse_module()


def lower_case(name: str) -> ModuleOp:
    args, body, ret, _ = CASES[name]
    module = parse(
        f"func.func @main({args}) -> {ret.split(' : ')[1]} {{\n  {body}\n  func.return {ret}\n}}"
    )
    module.verify()
    ConvertTgToAffinePass().apply(Context(), module)
    module.verify()
    return module


def funcs(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]


def kernels(module: ModuleOp) -> list[func.FuncOp]:
    return [f for f in funcs(module) if "qd.kernel" in f.attributes]


def loop_names(kernel: func.FuncOp) -> list[str]:
    names = []
    for op in kernel.walk():
        if isinstance(op, affine.ForOp):
            attr = op.attributes.get("qd.loop")
            assert isinstance(attr, builtin.StringAttr), (
                f"unnamed loop in {kernel.sym_name.data}"
            )
            names.append(attr.data)
    return names


def test_every_tg_op_has_a_case() -> None:
    names = {op.name for op in TG.operations}
    assert names - COVERED_ELSEWHERE == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowering_structure(name: str) -> None:
    module = lower_case(name)
    expected_loops = CASES[name][3]

    for op in module.walk():
        assert op.dialect_name() != "tg", f"{op.name} left after the pass"
        types = [*(r.type for r in op.results), *(o.type for o in op.operands)]
        for region in op.regions:
            for block in region.blocks:
                types.extend(a.type for a in block.args)
        assert not any(isinstance(t, TensorType) for t in types), (
            f"tensor type left on {op.name}"
        )

    found = kernels(module)
    assert len(found) == len(expected_loops), [k.sym_name.data for k in found]
    for index, (kernel, loops) in enumerate(zip(found, expected_loops, strict=True)):
        assert kernel.sym_name.data.startswith(f"main_k{index}_")
        assert (
            kernel.sym_visibility is not None
            and kernel.sym_visibility.data == "private"
        )
        assert not kernel.function_type.outputs.data
        assert kernel.arg_attrs is not None
        assert all("llvm.noalias" in d.data for d in kernel.arg_attrs.data)
        names = loop_names(kernel)
        assert names == loops
        assert len(set(names)) == len(names)
        for op in kernel.body.walk():
            assert isinstance(op, ALLOWED_IN_KERNELS), (
                f"{op.name} in {kernel.sym_name.data}"
            )

    (host,) = [f for f in funcs(module) if f.sym_name.data == "main"]
    assert not host.function_type.outputs.data
    num_inputs = host.attributes["qd.num_inputs"]
    assert isinstance(num_inputs, builtin.IntegerAttr)
    assert num_inputs.value.data == len(host.function_type.inputs.data) - 1
    assert host.body.block.args[-1].name_hint == "out0"
    allocs = [op for op in host.body.walk() if isinstance(op, memref.AllocOp)]
    deallocs = [op for op in host.body.walk() if isinstance(op, memref.DeallocOp)]
    assert sorted(id(a.memref) for a in allocs) == sorted(
        id(d.memref) for d in deallocs
    )


def _raises(text: str, match: str) -> None:
    module = parse(text)
    with pytest.raises(TgLoweringError, match=match):
        ConvertTgToAffinePass().apply(Context(), module)


def test_fused_body_with_a_pool_is_rejected() -> None:
    _raises(
        """func.func @main(%a: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %r = tg.fused %a : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  ^bb0(%x: tensor<1x1x4x4xf32>):
    %m = tg.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilation = [1, 1] : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
    tg.yield %m : tensor<1x1x2x2xf32>
  }
  func.return %r : tensor<1x1x2x2xf32>
}""",
        "tg.fused body holds 'tg.max_pool2d'",
    )


def _fused_matmul(prologue: str, on: str) -> str:
    lhs = "%e" if on == "lhs" else "%x"
    rhs = "%e" if on == "rhs" else "%y"
    return f"""func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x3xf32> {{
  %r = tg.fused %a, %b : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32> {{
  ^bb0(%x: tensor<2x3xf32>, %y: tensor<3x3xf32>):
    %e = {prologue}
    %m = tg.matmul {lhs}, {rhs} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
    tg.yield %m : tensor<2x3xf32>
  }}
  func.return %r : tensor<2x3xf32>
}}"""


def test_fused_rhs_prologue_is_rejected() -> None:
    _raises(
        _fused_matmul("tg.exp %y : tensor<3x3xf32> -> tensor<3x3xf32>", "rhs"),
        "prologue on the rhs",
    )


def test_fused_conv_input_prologue_is_rejected() -> None:
    _raises(
        f"""func.func @main(%a: {NCHW}, %b: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {{
  %r = tg.fused %a, %b : ({NCHW}, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {{
  ^bb0(%x: {NCHW}, %y: tensor<4x2x3x3xf32>):
    %e = tg.exp %x : {NCHW} -> {NCHW}
    %m = tg.conv2d %e, %y strides = [2, 2] padding = [1, 1, 1, 1] dilation = [1, 1] groups = 1 : ({NCHW}, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
    tg.yield %m : tensor<1x4x3x3xf32>
  }}
  func.return %r : tensor<1x4x3x3xf32>
}}""",
        "conv2d prologue would be recomputed",
    )


def test_fused_row_group_over_leading_axis_is_rejected() -> None:
    _raises(
        """func.func @main(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = tg.fused %a : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>):
    %m = tg.reduce_max %x axes = [0] keepdims : tensor<4x8xf32> -> tensor<1x8xf32>
    %d = tg.sub %x, %m : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
    tg.yield %d : tensor<4x8xf32>
  }
  func.return %r : tensor<4x8xf32>
}""",
        "must reduce the trailing axes",
    )


def test_fused_row_group_with_right_aligned_broadcast_is_rejected() -> None:
    _raises(
        """func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = tg.fused %a : (tensor<4x4xf32>) -> tensor<4x4xf32> {
  ^bb0(%x: tensor<4x4xf32>):
    %s = tg.reduce_sum %x axes = [1] : tensor<4x4xf32> -> tensor<4xf32>
    %d = tg.sub %x, %s : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    tg.yield %d : tensor<4x4xf32>
  }
  func.return %r : tensor<4x4xf32>
}""",
        "only through keepdims",
    )


def test_fused_outputs_of_different_shapes_are_rejected() -> None:
    _raises(
        """func.func @main(%a: tensor<2x2xf32>, %b: tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>) {
  %r:2 = tg.fused %a, %b : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>, tensor<2xf32> {
  ^bb0(%x: tensor<2x2xf32>, %y: tensor<2xf32>):
    %e = tg.exp %x : tensor<2x2xf32> -> tensor<2x2xf32>
    %n = tg.neg %y : tensor<2xf32> -> tensor<2xf32>
    tg.yield %e, %n : tensor<2x2xf32>, tensor<2xf32>
  }
  func.return %r#0, %r#1 : tensor<2x2xf32>, tensor<2xf32>
}""",
        "different shapes",
    )


def test_a_custom_op_is_expanded_first() -> None:
    text = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = tg.custom "demo::neg" %x : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %n = tg.neg %a : tensor<4xf32> -> tensor<4xf32>
    tg.custom_yield %n : tensor<4xf32>
  } grad {
  }
  func.return %y : tensor<4xf32>
}
"""
    with pytest.raises(TgLoweringError, match="the expand-custom pass replaces it"):
        ConvertTgToAffinePass().apply(Context(), parse(text))
