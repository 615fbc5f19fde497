"""``.mlir`` models (``qidao/frontend/mlir.py``; issue 29, F9, F17, F18): the text
of what the frontends build is read back and runs the same; anything else (an op of
another dialect, a pass-only tg op, a second function, a ``@main`` that is not a
tensor graph, an attribute no frontend sets) is an ``MlirError`` naming the op and
its line, and a shaped type beyond the tensor limit is a ``ResourceError`` raised
while parsing, before xDSL or NumPy allocates it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qidao
from qidao.dialects.tg import TG, CustomOp, FusedOp
from qidao.errors import ResourceError
from qidao.frontend.builder import Graph, Value
from qidao.frontend.custom import custom_op, unregister
from qidao.frontend.errors import MlirError
from qidao.frontend.limits import ENV
from qidao.frontend.mlir import MODEL_OPS, import_mlir

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(29)

RELU = (
    "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %y = tg.relu %x : tensor<4xf32> -> tensor<4xf32>\n"
    "  func.return %y : tensor<4xf32>\n"
    "}\n"
)


def roundtrip(model: Any, tmp_path: Path, *args: Array, **options: Any) -> str:
    """Compile ``model``, write its ``input`` IR to a ``.mlir`` file, compile that,
    and check both give the same outputs bit for bit; the text."""
    compiled = qidao.compile(model, **options)
    text = compiled.ir("input")
    path = tmp_path / "model.mlir"
    path.write_text(text)
    again = qidao.compile(path, **options)
    for want, got in zip(compiled(*args), again(*args), strict=True):
        np.testing.assert_array_equal(got, want)
    return text


# ---- what the frontends write reads back -----------------------------------------------


def test_a_builder_graph_with_constants_and_a_custom_op_round_trips(
    tmp_path: Path,
) -> None:
    def forward(g: Graph, x: Value) -> Value:
        return x * g.sigmoid(x)

    def vjp(g: Graph, x: Value, y: Value, dy: Value) -> Value:
        s = g.sigmoid(x)
        return dy * (s + x * s * (1.0 - s))

    custom_op("test_mlir::swish", forward, vjp=vjp)
    try:
        g = Graph("main")
        x = g.input("x", (3, 5))
        w = g.constant(RNG.standard_normal((5, 2)).astype(np.float32))
        h = g.custom("test_mlir::swish", g.relu(x @ w) + 1.0)
        g.output(g.softmax(g.transpose(h, (1, 0)), -1), names=["y"])
        x0 = RNG.standard_normal((3, 5)).astype(np.float32)
        text = roundtrip(g, tmp_path, x0)
        assert "tg.custom" in text and "tg.constant" in text
        roundtrip(g, tmp_path, x0, grad=["x"])  # the vjp region reads back too
    finally:
        unregister("test_mlir::swish")


def test_an_onnx_model_round_trips_with_its_check_sources(tmp_path: Path) -> None:
    """``qd.source`` names the ONNX node in a failed run-time check, also after the
    round trip."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["y"], name="g0")],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [5]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = np.arange(5, dtype=np.float32)
    text = roundtrip(model, tmp_path, x, np.array([1, -2]), checks=True)
    assert "qd.source = \"Gather node 'g0'\"" in text
    again = qidao.compile(tmp_path / "model.mlir", checks=True)
    with pytest.raises(qidao.CheckError, match=r"^Gather node 'g0': index 7"):
        again(x, np.array([1, 7]))


def test_the_attributes_frontends_set_are_read() -> None:
    module = import_mlir(
        "func.func @main(%t: tensor<5xf32>, %i: tensor<2xi64>) -> tensor<2xf32> "
        'attributes {qd.input_names = ["t", "i"], qd.output_names = ["y"]} {\n'
        "  %y = tg.take %t, %i axis = 0 {qd.nonnegative_indices, qd.source = "
        "\"node 'embedding'\"} : (tensor<5xf32>, tensor<2xi64>) -> tensor<2xf32>\n"
        "  func.return %y : tensor<2xf32>\n}\n"
    )
    assert "qd.nonnegative_indices" in str(module)


def test_the_allow_list_is_the_tg_dialect_but_what_passes_make() -> None:
    names = {op.name for op in MODEL_OPS}
    assert {"builtin.module", "func.func", "func.return", "tg.custom"} <= names
    assert names.isdisjoint({"func.call", "tg.fused", "tg.yield", "llvm.call"})
    assert FusedOp not in MODEL_OPS and CustomOp in MODEL_OPS
    assert len(names) == 3 + len(list(TG.operations)) - 4


# ---- refused: ops ----------------------------------------------------------------------


SYSTEM = (  # F9: @main takes no tensors, so no tg lowering ever looked at it
    'llvm.mlir.global private constant @cmd("echo hi\\00") {addr_space = 0 : i32} '
    ": !llvm.array<8 x i8>\n"
    "llvm.func @system(!llvm.ptr) -> i32\n"
    "func.func @main() {\n"
    "  %p = llvm.mlir.addressof @cmd : !llvm.ptr\n"
    "  %r = llvm.call @system(%p) : (!llvm.ptr) -> i32\n"
    "  func.return\n}\n"
)


@pytest.mark.parametrize(
    ("text", "where", "op"),
    [
        (SYSTEM, "m.mlir:1:1", "llvm.mlir.global"),
        (  # F9b: in @main(), without tensors
            "func.func @main() {\n"
            '  llvm.inline_asm has_side_effects "nop", "" : () -> ()\n'
            "  func.return\n}\n",
            "m.mlir:2:3",
            "llvm.inline_asm",
        ),
        (  # F9b: in a helper beside a tensor @main
            "llvm.func @helper() {\n"
            '  llvm.inline_asm has_side_effects "nop", "" : () -> ()\n'
            "  llvm.return\n}\n" + RELU,
            "m.mlir:1:1",
            "llvm.func",
        ),
        (  # the generic form goes through the same door
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            '  "llvm.inline_asm"() <{asm_string = "nop", constraints = ""}> '
            ": () -> ()\n"
            "  func.return %x : tensor<4xf32>\n}\n",
            "m.mlir:2:3",
            "llvm.inline_asm",
        ),
        (  # a call to an external symbol
            "func.func private @system(i64) -> i32\n"
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %c = arith.constant 0 : i64\n"
            "  %r = func.call @system(%c) : (i64) -> i32\n"
            "  func.return %x : tensor<4xf32>\n}\n",
            "m.mlir:3:3",
            "arith.constant",
        ),
        (
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %r = func.call @main(%x) : (tensor<4xf32>) -> tensor<4xf32>\n"
            "  func.return %r : tensor<4xf32>\n}\n",
            "m.mlir:2:3",
            "func.call",
        ),
        (
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %m = memref.alloc() : memref<4xf32>\n"
            "  func.return %x : tensor<4xf32>\n}\n",
            "m.mlir:2:3",
            "memref.alloc",
        ),
        (
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %c = builtin.unrealized_conversion_cast %x : tensor<4xf32> to "
            "tensor<4xf32>\n"
            "  func.return %c : tensor<4xf32>\n}\n",
            "m.mlir:2:3",
            "builtin.unrealized_conversion_cast",
        ),
        (  # inside a tg op's region
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            '  %y = tg.custom "demo::f" %x : (tensor<4xf32>) -> tensor<4xf32> {\n'
            "  ^bb0(%a: tensor<4xf32>):\n"
            '    llvm.inline_asm has_side_effects "nop", "" : () -> ()\n'
            "    tg.custom_yield %a : tensor<4xf32>\n"
            "  }\n"
            "  func.return %y : tensor<4xf32>\n}\n",
            "m.mlir:4:5",
            "llvm.inline_asm",
        ),
    ],
)
def test_an_op_outside_the_allow_list_is_refused_where_it_is_written(
    text: str, where: str, op: str
) -> None:
    with pytest.raises(MlirError) as info:
        import_mlir(text, "m.mlir")
    message = str(info.value)
    assert message.startswith(f"{where}: '{op}' is not an op a .mlir model may hold")
    assert "a .mlir model is a tg graph" in message


def test_ops_only_graph_passes_make_are_refused() -> None:
    text = (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = tg.fused (%x) : (tensor<4xf32>) -> tensor<4xf32> {\n"
        "  ^bb0(%a: tensor<4xf32>):\n"
        "    %r = tg.relu %a : tensor<4xf32> -> tensor<4xf32>\n"
        "    tg.yield %r : tensor<4xf32>\n"
        "  }\n"
        "  func.return %y : tensor<4xf32>\n}\n"
    )
    with pytest.raises(MlirError, match=r"^m.mlir:2:3: 'tg.fused' is made by qidao"):
        import_mlir(text, "m.mlir")


def test_types_of_other_dialects_are_parse_errors() -> None:
    with pytest.raises(MlirError, match=r"(?s)parse error: m.mlir:1:30.*'llvm.ptr'"):
        import_mlir("func.func @main(%p: !llvm.ptr) {\n  func.return\n}\n", "m.mlir")


# ---- refused: the shape of the module and of @main ----------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # F18
            "func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  func.return %x : tensor<4xf32>\n}\n",
            r"^m.mlir: the model has no function @main \(found: @other\)",
        ),
        (  # F18: an affine-level file
            "func.func @main(%x: memref<4xf32>) {\n  func.return\n}\n",
            r"^m.mlir:1:1: argument #0 %x of @main must be a tensor, got memref<4xf32>",
        ),
        (
            "func.func @main(%x: tensor<4xf32>) -> i32 {\n"
            "  func.return %x : tensor<4xf32>\n}\n",
            r"^m.mlir:1:1: result #0 of @main must be a tensor, got i32",
        ),
        (
            "func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {\n"
            "  func.return %x : tensor<?xf32>\n}\n",
            r"argument #0 %x of @main must have a static shape",
        ),
        (
            "func.func @main(%x: tensor<4xf80>) -> tensor<4xf80> {\n"
            "  func.return %x : tensor<4xf80>\n}\n",
            r"argument #0 %x of @main has element type f80, which qidao does not",
        ),
        (
            "func.func @main(%x: tensor<4xf32>) {\n  func.return\n}\n",
            r"^m.mlir:1:1: @main returns nothing",
        ),
        (
            RELU + "func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  func.return %x : tensor<4xf32>\n}\n",
            r"^m.mlir:5:1: a function @other beside @main",
        ),
        (
            "builtin.module {\n  builtin.module {\n  }\n}\n",
            r"^m.mlir:2:3: 'builtin.module' in the module",
        ),
        (
            "builtin.module attributes {qd.anything} {\n" + RELU + "}\n",
            r"^m.mlir:1:1: the module carries attributes or a name",
        ),
        (
            "func.func private @main(%x: tensor<4xf32>) -> tensor<4xf32>\n",
            r"^m.mlir:1:1: @main has no body",
        ),
        (
            RELU.replace("func.func @main", "func.func private @main"),
            r"^m.mlir:1:1: @main is private",
        ),
        (
            RELU.replace("%x: tensor<4xf32>)", "%x: tensor<4xf32> {llvm.noalias})"),
            r"^m.mlir:1:1: @main has argument or result attributes",
        ),
        (  # what update-in-place sets: the host would alias an output and an input
            RELU.replace(
                "-> tensor<4xf32> {",
                "-> tensor<4xf32> attributes {qd.in_place = [[0, 0]]} {",
                1,
            ),
            r"^m.mlir:1:1: @main carries the attribute 'qd.in_place'",
        ),
        (
            RELU.replace(
                "-> tensor<4xf32> {",
                "-> tensor<4xf32> attributes {qd.input_names = [1]} {",
                1,
            ),
            r"@main's qd.input_names must be an array of strings, got \[1 : i64\]",
        ),
        (
            RELU.replace("%x : tensor", '%x {qd.update = "x"} : tensor', 1),
            r"^m.mlir:2:3: tg.relu carries the attribute 'qd.update'",
        ),
        (
            RELU.replace("%x : tensor", "%x {qd.source = 3} : tensor", 1),
            r"^m.mlir:2:3: tg.relu carries the attribute 'qd.source'",
        ),
    ],
)
def test_a_module_that_is_not_one_tensor_graph_is_refused(
    text: str, message: str
) -> None:
    with pytest.raises(MlirError, match=message):
        import_mlir(text, "m.mlir")


def test_a_graph_without_inputs_is_a_model() -> None:
    """A model of constants only (an ONNX graph without inputs imports so too)."""
    module = import_mlir(
        "func.func @main() -> tensor<2xf32> {\n"
        "  %c = tg.constant dense<1.5> : tensor<2xf32>\n"
        "  func.return %c : tensor<2xf32>\n}\n"
    )
    (got,) = qidao.compile(module)()
    np.testing.assert_array_equal(got, np.full(2, 1.5, np.float32))


# ---- sizes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("constant", "where"),
    [
        ("dense<1.0> : tensor<2048xf32>", "m.mlir:2:33: tensor<2048xf32>"),
        (  # a hex splat
            'dense<"0x0000803F"> : tensor<2x1024xf32>',
            "m.mlir:2:42: tensor<2x1024xf32>",
        ),
        (  # refused before the verifier would
            "dense<1.0> : vector<2048xf32>",
            "m.mlir:2:33: vector<2048xf32>",
        ),
    ],
)
def test_a_splat_beyond_the_limit_is_refused_before_it_is_expanded(
    constant: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """F17: xDSL expands a splat into every element as it parses; the type is
    checked first (8 KiB under a limit of 4 KiB here; 16 GiB of floats in the
    reproducer), naming its place."""
    monkeypatch.setenv(ENV, "4096")
    text = (
        "func.func @main() -> tensor<4xf32> {\n"
        f"  %c = tg.constant {constant}\n"
        "  %y = tg.slice %c [0] [4] [1] : tensor<2048xf32> -> tensor<4xf32>\n"
        "  func.return %y : tensor<4xf32>\n}\n"
    )
    with pytest.raises(ResourceError) as info:
        import_mlir(text, "m.mlir")
    assert str(info.value).startswith(f"{where}: ")
    assert "(2048 elements, 8.0 KiB) is larger than qidao's limit of 4.0 KiB" in str(
        info.value
    )


def test_a_tensor_type_beyond_the_limit_is_refused_before_numpy(
    tmp_path: Path,
) -> None:
    """F17: 2^80 elements reached np.empty in the argument checks ('array is too
    big'); now the parser refuses the type, with the default limit."""
    t = "tensor<1099511627776x1099511627776xf32>"
    path = tmp_path / "a.mlir"
    path.write_text(
        f"func.func @main(%x: {t}) -> {t} {{\n"
        f"  %y = tg.relu %x : {t} -> {t}\n"
        f"  func.return %y : {t}\n}}\n"
    )
    with pytest.raises(ResourceError, match=rf"a.mlir:1:21: {t}: a tensor of shape"):
        qidao.compile(path)


def test_a_type_a_tg_op_refuses_while_it_is_parsed_is_a_parse_error() -> None:
    """A tg op's custom parser checks its types as it builds the op; that was a
    bare VerifyException out of the parser."""
    text = (
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %y = tg.relu %x : tensor<4xf32> -> i32\n"
        "  func.return %x : tensor<4xf32>\n}\n"
    )
    with pytest.raises(MlirError, match=r"(?s)^parse error: m.mlir:2:3.*i32 should"):
        import_mlir(text, "m.mlir")


@pytest.mark.parametrize("text", ["\x15ui", "\x00", '"unclosed', "}"])
def test_a_file_whose_first_token_does_not_lex_is_a_parse_error(text: str) -> None:
    """The parser lexes the first token when it is made (fuzz seed 70402: a
    mutated file starting with a control character was a bare ParseError)."""
    with pytest.raises(MlirError, match=r"^parse error: m.mlir:1:1"):
        import_mlir(text, "m.mlir")
