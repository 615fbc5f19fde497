"""Bad ONNX input: each gets a clear ``OnnxImportError`` naming the node, tensor or
input at fault, never a traceback from deep inside onnx or qidao, never a crash.

The list of issue 5: a malformed or truncated file, an unknown opset, a graph with a
cycle, a shape that does not match, an external-data path that escapes its folder.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.frontend.errors import FrontendError, OnnxImportError, UnsupportedOpsError
from qidao.frontend.onnx import import_onnx
from qidao.runtime.errors import ArgumentError
from qidao.tools.cli import main

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)


def rand(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


def make_model(
    nodes: list[Any],
    inputs: Mapping[str, Sequence[int | str]],
    outputs: Mapping[str, Sequence[int | str] | None],
    initializers: dict[str, Array] | None = None,
    opsets: Sequence[tuple[str, int]] = (("", 17),),
    value_info: Mapping[str, Sequence[int]] | None = None,
) -> Any:
    graph = helper.make_graph(
        nodes,
        "bad",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in inputs.items()
        ],
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in outputs.items()
        ],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
        value_info=[
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in (value_info or {}).items()
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets]
    )
    model.ir_version = 8
    return model


def small_cnn() -> Any:
    return make_model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"]),
            helper.make_node("Flatten", ["r"], ["f"]),
            helper.make_node("Gemm", ["f", "w2"], ["y"], transB=1),
        ],
        {"x": [1, 1, 4, 4]},
        {"y": [1, 3]},
        {"w": rand(2, 1, 3, 3), "b": rand(2), "w2": rand(3, 32)},
    )


# ---- malformed or truncated files -------------------------------------------------


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "not an ONNX model"),
        (b"\xff\xfe garbage \x00\x01" * 20, "cannot read"),
        (b"\x08\x07", "not an ONNX model"),  # a valid protobuf: ir_version only
        (
            numpy_helper.from_array(np.ones(3, np.float32), "t").SerializeToString(),
            "cannot read|not an ONNX model",  # a TensorProto, not a ModelProto
        ),
    ],
)
def test_malformed_file(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(OnnxImportError, match=match) as info:
        import_onnx(path)
    assert "bad.onnx" in str(info.value)


def test_every_truncation_is_a_clear_error(tmp_path: Path) -> None:
    data = small_cnn().SerializeToString()
    path = tmp_path / "cut.onnx"
    for cut in range(0, len(data) - 1, 7):
        path.write_bytes(data[:cut])
        with pytest.raises(OnnxImportError, match=r"cut\.onnx"):
            import_onnx(path)


def test_flipped_bytes_never_crash(tmp_path: Path) -> None:
    # a corrupted file may still parse: then the model checks or the import reject
    # it, always with a FrontendError
    data = bytearray(small_cnn().SerializeToString())
    rng = np.random.default_rng(5)
    path = tmp_path / "flipped.onnx"
    for _ in range(60):
        corrupt = bytearray(data)
        for k in rng.integers(0, len(data), size=3):
            corrupt[k] = int(rng.integers(0, 256))
        path.write_bytes(bytes(corrupt))
        with contextlib.suppress(FrontendError):
            import_onnx(path)


def test_initializer_data_that_does_not_fill_its_shape() -> None:
    model = small_cnn()
    model.graph.initializer[0].dims[1] = 49  # what a flipped byte can do
    with pytest.raises(
        OnnxImportError,
        match=r"initializer 'w' has shape \[2, 49, 3, 3\].*need 3528 bytes.*holds 72",
    ):
        import_onnx(model)


def test_attribute_without_a_type() -> None:
    model = small_cnn()
    model.graph.node[0].attribute[0].type = onnx.AttributeProto.UNDEFINED
    with pytest.raises(
        OnnxImportError, match="attribute 'pads' of Conv node '#0' has no type"
    ):
        import_onnx(model)


def test_directory_and_wrong_type() -> None:
    with pytest.raises(OnnxImportError, match="no ONNX file"):
        import_onnx(Path(__file__).parent)
    with pytest.raises(OnnxImportError, match=r"takes an onnx\.ModelProto or a path"):
        import_onnx(42)


def test_malformed_file_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(small_cnn().SerializeToString()[:100])
    assert main(["compile", str(path)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "bad.onnx" in err and "Traceback" not in err


# ---- unknown opsets ------------------------------------------------------------------


def relu_model(opsets: Sequence[tuple[str, int]], domain: str = "") -> Any:
    return make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="r", domain=domain)],
        {"x": [3]},
        {"y": [3]},
        opsets=opsets,
    )


def test_opset_newer_than_onnx_knows() -> None:
    newest = onnx.defs.onnx_opset_version()
    with pytest.raises(OnnxImportError) as info:
        import_onnx(relu_model([("", newest + 1)]))
    message = str(info.value)
    assert f"opset {newest + 1} of the default ONNX domain" in message
    assert f"up to {newest}" in message
    import_onnx(relu_model([("", newest)]))  # the newest known one is fine


def test_ml_opset_newer_than_onnx_knows() -> None:
    with pytest.raises(OnnxImportError, match=r"opset 99 of domain 'ai\.onnx\.ml'"):
        import_onnx(relu_model([("", 17), ("ai.onnx.ml", 99)]))


def test_opset_zero() -> None:
    with pytest.raises(OnnxImportError, match="opset 0 of the default ONNX domain"):
        import_onnx(relu_model([("", 0)]))


def test_no_default_domain() -> None:
    model = relu_model([("com.example", 1)], domain="com.example")
    with pytest.raises(OnnxImportError, match=r"com\.example::Relu: r"):
        import_onnx(model)


def test_unknown_domain_names_op_and_node() -> None:
    model = relu_model([("", 17), ("com.example", 1)], domain="com.example")
    with pytest.raises(UnsupportedOpsError, match=r"com\.example::Relu: r"):
        import_onnx(model)


def test_unknown_domain_imported_but_unused_is_fine() -> None:
    import_onnx(relu_model([("", 17), ("com.example", 3)]))


# ---- opsets older than 11: converted as they load ------------------------------------


def old_slice_pad_model() -> Any:
    """Opset 9: Slice and Pad with their attributes (inputs from opsets 10 / 11)."""
    return make_model(
        [
            helper.make_node(
                "Slice", ["x"], ["s"], starts=[1, 0], ends=[3, 4], name="slice"
            ),
            helper.make_node("Pad", ["s"], ["y"], pads=[0, 1, 2, 0], value=1.5),
        ],
        {"x": [4, 5]},
        {"y": [4, 5]},
        opsets=[("", 9)],
    )


def test_old_opset_is_converted_to_11(tmp_path: Path) -> None:
    model = old_slice_pad_model()
    original = model.SerializeToString()
    x = rand(4, 5)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = qidao.compile(model)(x)
    np.testing.assert_array_equal(got, want)
    assert model.SerializeToString() == original  # the caller's model is unchanged
    path = tmp_path / "old.onnx"
    onnx.save(model, path)
    (from_file,) = qidao.compile(str(path))(x)
    np.testing.assert_array_equal(from_file, want)


def test_old_opset_with_an_op_onnx_does_not_define() -> None:
    model = make_model(
        [helper.make_node("Frobnicate", ["x"], ["y"], name="f")],
        {"x": [3]},
        {"y": [3]},
        opsets=[("", 9)],
    )
    with pytest.raises(UnsupportedOpsError, match="Frobnicate: f"):
        import_onnx(model)


def test_old_opset_the_converter_cannot_convert(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fail(model: Any, target: int) -> Any:
        raise RuntimeError("adapter_lookup: No Adapter From Version $5 for Tile")

    monkeypatch.setattr(onnx.version_converter, "convert_version", fail)
    newest = onnx.defs.onnx_opset_version()
    with pytest.raises(
        OnnxImportError,
        match=r"the model imports opset 9 of the default ONNX domain; qidao reads "
        rf"opsets 11 to {newest}, and onnx\.version_converter\.convert_version"
        r"\(model, 11\) cannot convert it \(RuntimeError: adapter_lookup: No "
        r"Adapter From Version \$5 for Tile\): export the model at opset 11 or newer",
    ):
        import_onnx(old_slice_pad_model())
    import_onnx(relu_model([("", 11)]))  # opset 11 is not converted


def test_ir_version_newer_than_onnx_knows() -> None:
    model = relu_model([("", 17)])
    model.ir_version = onnx.IR_VERSION + 1
    with pytest.raises(OnnxImportError, match=f"IR version {onnx.IR_VERSION + 1}"):
        import_onnx(model)


# ---- cycles and node order ---------------------------------------------------------


def test_cycle_names_the_nodes() -> None:
    model = make_model(
        [
            helper.make_node("Add", ["x", "c"], ["a"], name="A"),
            helper.make_node("Relu", ["a"], ["b"], name="B"),
            helper.make_node("Neg", ["b"], ["c"], name="C"),
            helper.make_node("Relu", ["c"], ["y"], name="D"),
        ],
        {"x": [3]},
        {"y": [3]},
    )
    with pytest.raises(OnnxImportError) as info:
        import_onnx(model)
    message = str(info.value)
    assert "Add node 'A' uses tensor 'c'" in message
    assert "cycle" in message
    assert "Add node 'A' -> Relu node 'B' -> Neg node 'C' -> Add node 'A'" in message, (
        message
    )


def test_self_loop() -> None:
    model = make_model(
        [helper.make_node("Add", ["x", "a"], ["a"], name="A")], {"x": [3]}, {"a": [3]}
    )
    with pytest.raises(
        OnnxImportError, match=r"Add node 'A'.*cycle: Add node 'A' -> Add node 'A'"
    ):
        import_onnx(model)


def test_nodes_out_of_order() -> None:
    model = make_model(
        [
            helper.make_node("Relu", ["a"], ["y"], name="second"),
            helper.make_node("Neg", ["x"], ["a"], name="first"),
        ],
        {"x": [3]},
        {"y": [3]},
    )
    with pytest.raises(
        OnnxImportError,
        match="Relu node 'second' uses tensor 'a' before Neg node 'first' defines it: "
        "the nodes are not in topological order",
    ):
        import_onnx(model)


def test_undefined_tensor_names_the_node() -> None:
    model = make_model(
        [helper.make_node("Add", ["x", "typo"], ["y"])], {"x": [3]}, {"y": [3]}
    )
    with pytest.raises(
        OnnxImportError, match="Add node '#0' uses tensor 'typo', which no node"
    ):
        import_onnx(model)


def test_undefined_graph_output() -> None:
    model = make_model(
        [helper.make_node("Relu", ["x"], ["r"])], {"x": [3]}, {"y": [3], "r": [3]}
    )
    with pytest.raises(OnnxImportError, match="graph output 'y' is defined by no node"):
        import_onnx(model)


def test_tensor_defined_twice() -> None:
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["y"], name="one"),
            helper.make_node("Neg", ["x"], ["y"], name="two"),
        ],
        {"x": [3]},
        {"y": [3]},
    )
    with pytest.raises(
        OnnxImportError,
        match="Neg node 'two' writes tensor 'y', which Relu node 'one' already",
    ):
        import_onnx(model)


def test_node_overwriting_a_graph_input() -> None:
    model = make_model(
        [helper.make_node("Relu", ["x"], ["x"], name="r")], {"x": [3]}, {"x": [3]}
    )
    with pytest.raises(
        OnnxImportError, match="'r' writes tensor 'x', which graph input"
    ):
        import_onnx(model)


# ---- shapes that do not match ------------------------------------------------------


def test_declared_output_shape_contradicts_inference() -> None:
    model = make_model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        {"x": [2, 8]},
        {"y": [2, 4]},
        {"w": rand(8, 3)},
    )
    with pytest.raises(
        OnnxImportError,
        match=r"graph output 'y' is declared with shape \[2, 4\], but MatMul node "
        r"'mm' computes \[2, 3\]",
    ):
        import_onnx(model)


def test_declared_output_rank_contradicts_inference() -> None:
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [3]}, {"y": [3, 1]}
    )
    with pytest.raises(
        OnnxImportError,
        match=r"'y' is declared with shape \[3, 1\].*'r' computes \[3\]",
    ):
        import_onnx(model)


def test_declared_value_info_contradicts_inference() -> None:
    model = make_model(
        [
            helper.make_node("Relu", ["x"], ["h"], name="r"),
            helper.make_node("Neg", ["h"], ["y"], name="n"),
        ],
        {"x": [3]},
        {"y": [3]},
        value_info={"h": [5]},
    )
    with pytest.raises(
        OnnxImportError, match=r"value_info 'h' is declared with shape \[5\].*'r'"
    ):
        import_onnx(model)


def test_dynamic_declared_output_dims_are_not_a_contradiction() -> None:
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])], {"x": [2, 3]}, {"y": ["n", 3]}
    )
    import_onnx(model)


def test_operand_shapes_that_do_not_fit_name_the_node() -> None:
    model = make_model(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
        {"a": [2, 3], "b": [4, 5]},
        {"y": None},
    )
    with pytest.raises(OnnxImportError, match="mm"):
        import_onnx(model)


def test_input_of_the_wrong_shape_at_call() -> None:
    compiled = qidao.compile(small_cnn())
    with pytest.raises(ArgumentError) as info:
        compiled(rand(1, 1, 5, 4))
    message = str(info.value)
    assert "'x'" in message and "(1, 1, 4, 4)" in message and "(1, 1, 5, 4)" in message


def test_input_shapes_of_the_wrong_rank() -> None:
    with pytest.raises(OnnxImportError, match="input 'x' rank 2"):
        import_onnx(small_cnn(), input_shapes={"x": (4, 4)})


# ---- external data that escapes its folder ---------------------------------------


def test_external_data_escaping_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    path = folder / "cnn.onnx"
    onnx.save_model(
        small_cnn(),
        str(path),
        save_as_external_data=True,
        location="w.bin",
        size_threshold=0,
    )
    proto = onnx.load(str(path), load_external_data=False)
    for entry in proto.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = "../../w.bin"
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(
        OnnxImportError, match=r"initializer 'w'.*'\.\./\.\./w\.bin'.*escapes"
    ):
        qidao.compile(path)
