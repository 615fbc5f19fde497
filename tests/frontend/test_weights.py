"""Weights: SafeTensors files into constants, bound by name into ONNX models, and ONNX
models whose initializers live in external data files.

Every compiled result is compared with NumPy; every bad file is a clear error naming
the file (and the tensor), never a crash.
"""

from __future__ import annotations

import builtins
import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.frontend.builder import Graph
from qidao.frontend.errors import OnnxImportError, WeightsError
from qidao.frontend.onnx import import_onnx, load
from qidao.frontend.weights import bind_onnx_weights, load_safetensors

safetensors_numpy = pytest.importorskip(
    "safetensors.numpy", reason="safetensors is a dev dependency (pip install .[dev])"
)

Array = np.ndarray[Any, Any]
RNG = np.random.default_rng(0)


def rand(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(np.float32)


def save(path: Path, tensors: dict[str, Array]) -> Path:
    safetensors_numpy.save_file(tensors, str(path))
    return path


def raw_safetensors(path: Path, header: dict[str, Any], data: bytes) -> Path:
    """A SafeTensors file written byte by byte: 8-byte header size, JSON, data."""
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path


def mlp_model(w: Array | None = None, b: Array | None = None) -> Any:
    """y = relu(x @ w + b), with w (8, 3) and b (3,) as initializers."""
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
            helper.make_node("Add", ["h", "b"], ["s"], name="add"),
            helper.make_node("Relu", ["s"], ["y"], name="relu"),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
        [
            numpy_helper.from_array(
                np.zeros((8, 3), np.float32) if w is None else w, "w"
            ),
            numpy_helper.from_array(np.zeros(3, np.float32) if b is None else b, "b"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def mlp_reference(x: Array, w: Array, b: Array) -> Array:
    return np.maximum(x @ w + b, 0)


# ---- load_safetensors -------------------------------------------------------------


def test_load_safetensors_round_trip(tmp_path: Path) -> None:
    tensors = {
        "fc.weight": rand(8, 3),
        "fc.bias": rand(3),
        "scale": np.array(2.0, np.float32),
        "steps": np.arange(4, dtype=np.int64),
    }
    loaded = load_safetensors(save(tmp_path / "w.safetensors", tensors))
    assert sorted(loaded) == sorted(tensors)
    for name, array in tensors.items():
        assert loaded[name].dtype == array.dtype
        np.testing.assert_array_equal(loaded[name], array)
        assert loaded[name].flags.c_contiguous


def test_load_safetensors_into_graph_constants(tmp_path: Path) -> None:
    w, b = rand(8, 3), rand(3)
    weights = load_safetensors(save(tmp_path / "w.safetensors", {"w": w, "b": b}))
    g = Graph("main")
    x = g.input("x", (4, 8))
    y = g.relu(
        x @ g.constant(weights["w"], name="w") + g.constant(weights["b"], name="b")
    )
    g.output(y)
    xv = rand(4, 8)
    (got,) = qidao.compile(g)(xv)
    np.testing.assert_allclose(got, mlp_reference(xv, w, b), rtol=1e-5, atol=1e-6)


def test_missing_safetensors_file(tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match=r"no SafeTensors file at .*nope"):
        load_safetensors(tmp_path / "nope.safetensors")


@pytest.mark.parametrize("cut", [0, 5, 20, -10])
def test_truncated_safetensors_file(tmp_path: Path, cut: int) -> None:
    data = save(tmp_path / "full.safetensors", {"w": rand(16, 16)}).read_bytes()
    path = tmp_path / "cut.safetensors"
    path.write_bytes(data[:cut])
    with pytest.raises(WeightsError, match=r"cannot read .*cut\.safetensors"):
        load_safetensors(path)


def test_garbage_safetensors_file(tmp_path: Path) -> None:
    path = tmp_path / "garbage.safetensors"
    path.write_bytes(b"\xff" * 100)
    with pytest.raises(WeightsError, match=r"garbage\.safetensors"):
        load_safetensors(path)


def test_corrupt_safetensors_header(tmp_path: Path) -> None:
    path = tmp_path / "bad.safetensors"
    text = b"{not json"
    path.write_bytes(struct.pack("<Q", len(text)) + text)
    with pytest.raises(WeightsError, match=r"bad\.safetensors.*JSON"):
        load_safetensors(path)
    overlap = raw_safetensors(
        tmp_path / "overlap.safetensors",
        {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}},
        bytes(12),
    )
    with pytest.raises(WeightsError, match=r"overlap\.safetensors"):
        load_safetensors(overlap)


def test_unsupported_dtype_is_refused_naming_the_tensor(tmp_path: Path) -> None:
    path = raw_safetensors(
        tmp_path / "half.safetensors",
        {
            "ok": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
            "emb": {"dtype": "BF16", "shape": [2], "data_offsets": [4, 8]},
            "head": {"dtype": "F8_E5M2", "shape": [4], "data_offsets": [8, 12]},
        },
        bytes(12),
    )
    with pytest.raises(WeightsError) as info:
        load_safetensors(path)
    message = str(info.value)
    assert "half.safetensors" in message
    assert "'emb' (BF16)" in message and "'head' (F8_E5M2)" in message
    assert "'ok'" not in message
    assert "F32 (float32)" in message


def test_directory_is_not_a_safetensors_file(tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match="no SafeTensors file"):
        load_safetensors(tmp_path)


# ---- qidao.compile(model, weights=...) ----------------------------------------------


def test_compile_onnx_with_weights_file(tmp_path: Path) -> None:
    w, b = rand(8, 3), rand(3)
    path = save(tmp_path / "mlp.safetensors", {"w": w, "b": b})
    model = mlp_model()  # zeros in the model; the file's values win
    compiled = qidao.compile(model, weights=path)
    x = rand(4, 8)
    (got,) = compiled(x)
    np.testing.assert_allclose(got, mlp_reference(x, w, b), rtol=1e-5, atol=1e-6)
    assert numpy_helper.to_array(model.graph.initializer[0]).max() == 0  # unchanged


def test_compile_onnx_path_with_weights_dict(tmp_path: Path) -> None:
    w, b = rand(8, 3), rand(3)
    onnx.save_model(mlp_model(b=b), str(tmp_path / "mlp.onnx"))
    compiled = qidao.compile(tmp_path / "mlp.onnx", weights={"w": w})  # b: the model's
    x = rand(4, 8)
    (got,) = compiled(x)
    np.testing.assert_allclose(got, mlp_reference(x, w, b), rtol=1e-5, atol=1e-6)


def test_weights_bind_a_graph_input_as_a_constant(tmp_path: Path) -> None:
    # w is a graph input with a dynamic dim; the weights make it a constant
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [8, "n"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "n"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    w = rand(8, 5)
    bound = bind_onnx_weights(model, save(tmp_path / "w.safetensors", {"w": w}))
    module = import_onnx(bound)
    assert "tensor<2x5xf32>" in str(module)
    compiled = qidao.compile(model, weights={"w": w})
    assert [s.name for s in compiled.inputs] == ["x"]
    x = rand(2, 8)
    np.testing.assert_allclose(compiled(x)[0], x @ w, rtol=1e-5, atol=1e-6)


def test_weights_name_the_model_lacks(tmp_path: Path) -> None:
    path = save(tmp_path / "w.safetensors", {"W": rand(8, 3), "extra": rand(2)})
    with pytest.raises(WeightsError) as info:
        qidao.compile(mlp_model(), weights=path)
    message = str(info.value)
    assert "w.safetensors" in message
    assert "'W' (did you mean 'w'?)" in message
    assert "'extra'" in message


@pytest.mark.parametrize(
    ("tensor", "expected", "given"),
    [
        (
            rand(3, 8),
            "shape [8, 3] and dtype float32",
            "shape [3, 8] and dtype float32",
        ),
        (
            rand(8, 3).astype(np.float64),
            "shape [8, 3] and dtype float32",
            "shape [8, 3] and dtype float64",
        ),
        (rand(8), "shape [8, 3]", "shape [8]"),
    ],
)
def test_weights_shape_or_dtype_mismatch(
    tmp_path: Path, tensor: Array, expected: str, given: str
) -> None:
    path = save(tmp_path / "w.safetensors", {"w": tensor})
    with pytest.raises(WeightsError) as info:
        qidao.compile(mlp_model(), weights=path)
    message = str(info.value)
    assert "w.safetensors" in message and "initializer 'w'" in message
    assert f"expected {expected}" in message and f"got {given}" in message


def test_weights_graph_input_shape_mismatch() -> None:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [8, "n"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "n"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(WeightsError, match=r"graph input 'w'.*\[8, n\].*\[7, 5\]"):
        bind_onnx_weights(model, {"w": rand(7, 5)})


def test_weights_of_an_unsupported_dtype_in_a_dict() -> None:
    with pytest.raises(WeightsError, match=r"'w' has dtype complex64"):
        bind_onnx_weights(mlp_model(), {"w": rand(8, 3).astype(np.complex64)})
    with pytest.raises(WeightsError, match=r"dtype float32, got .* dtype float16"):
        bind_onnx_weights(mlp_model(), {"w": rand(8, 3).astype(np.float16)})


def test_truncated_weights_file_at_compile(tmp_path: Path) -> None:
    data = save(tmp_path / "w.safetensors", {"w": rand(8, 3)}).read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[:-7])
    with pytest.raises(WeightsError, match=r"cut\.safetensors"):
        qidao.compile(mlp_model(), weights=tmp_path / "cut.safetensors")


def test_weights_need_an_onnx_model(tmp_path: Path) -> None:
    g = Graph("main")
    g.output(g.relu(g.input("x", (2,))))
    with pytest.raises(TypeError, match=r"weights=.*ONNX.*graph\.constant"):
        qidao.compile(g, weights={"w": rand(2)})
    with pytest.raises(FileNotFoundError, match="no model file"):
        qidao.compile(tmp_path / "nope.onnx", weights={"w": rand(2)})


# ---- ONNX external data -------------------------------------------------------------


def save_external(model: Any, folder: Path, location: str = "weights.bin") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save_model(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=location,
        size_threshold=0,
    )
    return path


def set_location(path: Path, location: str, tensor: str = "w") -> None:
    """Rewrite the external location of initializer ``tensor`` in the saved model."""
    proto = onnx.load(str(path), load_external_data=False)
    for t in proto.graph.initializer:
        if t.name == tensor:
            for entry in t.external_data:
                if entry.key == "location":
                    entry.value = location
    path.write_bytes(proto.SerializeToString())


def test_external_data_model_compiles(tmp_path: Path) -> None:
    w, b = rand(8, 3), rand(3)
    (tmp_path / "m" / "data").mkdir(parents=True)
    path = save_external(mlp_model(w, b), tmp_path / "m", "data/weights.bin")
    assert (tmp_path / "m" / "data" / "weights.bin").stat().st_size > 0
    x = rand(4, 8)
    (got,) = qidao.compile(path)(x)
    np.testing.assert_allclose(got, mlp_reference(x, w, b), rtol=1e-5, atol=1e-6)
    # weights= still overrides initializers read from external data
    w2 = rand(8, 3)
    (got2,) = qidao.compile(path, weights={"w": w2})(x)
    np.testing.assert_allclose(got2, mlp_reference(x, w2, b), rtol=1e-5, atol=1e-6)


def test_external_data_in_a_model_proto_is_refused(tmp_path: Path) -> None:
    path = save_external(mlp_model(), tmp_path)
    proto = onnx.load(str(path), load_external_data=False)
    with pytest.raises(OnnxImportError, match=r"initializer 'w'.*weights\.bin.*path"):
        import_onnx(proto)
    onnx.load_external_data_for_model(proto, str(tmp_path))
    import_onnx(proto)  # loaded by the caller: fine


@pytest.mark.parametrize(
    "location",
    ["../outside.bin", "data/../../outside.bin", "/etc/passwd", "..\\outside.bin"],
)
def test_external_location_escaping_the_folder(tmp_path: Path, location: str) -> None:
    path = save_external(mlp_model(), tmp_path / "m")
    (tmp_path / "outside.bin").write_bytes(bytes(1024))
    set_location(path, location)
    with pytest.raises(OnnxImportError) as info:
        import_onnx(path)
    message = str(info.value)
    assert "initializer 'w'" in message and location in message
    assert "escapes the model's folder" in message


def test_external_location_symlink_out_of_the_folder(tmp_path: Path) -> None:
    path = save_external(mlp_model(), tmp_path / "m")
    (tmp_path / "secret.bin").write_bytes((tmp_path / "m" / "weights.bin").read_bytes())
    os.symlink(tmp_path / "secret.bin", tmp_path / "m" / "link.bin")
    set_location(path, "link.bin")
    with pytest.raises(OnnxImportError, match=r"initializer 'w'.*'link\.bin'.*symlink"):
        import_onnx(path)


def test_external_location_symlink_inside_the_folder_is_fine(tmp_path: Path) -> None:
    w = rand(8, 3)
    path = save_external(mlp_model(w), tmp_path / "m")
    os.symlink(tmp_path / "m" / "weights.bin", tmp_path / "m" / "alias.bin")
    set_location(path, "alias.bin")
    set_location(path, "alias.bin", tensor="b")
    import_onnx(path)


def test_missing_external_file(tmp_path: Path) -> None:
    path = save_external(mlp_model(), tmp_path)
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(
        OnnxImportError, match=r"initializer 'w'.*'weights\.bin'.*not exist"
    ):
        import_onnx(path)


def test_truncated_external_file(tmp_path: Path) -> None:
    path = save_external(mlp_model(), tmp_path)
    data = (tmp_path / "weights.bin").read_bytes()
    (tmp_path / "weights.bin").write_bytes(data[:40])
    with pytest.raises(OnnxImportError, match=r"initializer '[wb]'.*truncated"):
        import_onnx(path)


def test_external_data_of_the_wrong_size(tmp_path: Path) -> None:
    # no length: the tensor takes the rest of the file, which is too long
    proto = mlp_model()
    w = proto.graph.initializer[0]
    w.ClearField("raw_data")
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value="w.bin")
    (tmp_path / "w.bin").write_bytes(bytes(8 * 3 * 4 + 4))
    (tmp_path / "model.onnx").write_bytes(proto.SerializeToString())
    with pytest.raises(OnnxImportError, match=r"initializer 'w'.*100 bytes.*need 96"):
        import_onnx(tmp_path / "model.onnx")


def test_escaping_location_is_refused_before_anything_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # w (first) is fine, b (second) escapes: nothing is read, not even w's data
    path = save_external(mlp_model(), tmp_path / "m")
    set_location(path, "../x.bin", tensor="b")
    (tmp_path / "x.bin").write_bytes(bytes(12))
    opened: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        opened.append(args[0])
        return builtins.open(*args, **kwargs)

    monkeypatch.setattr(load, "open", spy, raising=False)
    with pytest.raises(
        OnnxImportError, match=r"initializer 'b'.*'\.\./x\.bin'.*escapes"
    ):
        import_onnx(path)
    assert opened == []
    set_location(path, "weights.bin", tensor="b")
    import_onnx(path)
    assert len(opened) == 2  # the spy sees the reads once the locations are fine
