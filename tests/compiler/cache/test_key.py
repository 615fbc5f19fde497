"""The compile cache's key (``qidao.compiler.cache.key``) covers everything that
decides the machine code: a change to any of it is a miss with the right answer,
never a hit with the old one. What the importer would refuse is refused before a
byte of it is hashed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import (
    convert_model_to_external_data,
    set_external_data,
)

import qidao
from qidao.compiler.cache import key as cache_key_module
from qidao.compiler.cache import model_digest, module_digest
from qidao.compiler.options import COMMON_OPTIONS
from qidao.compiler.targets.cpu.target import CpuTarget
from tests.compiler.cache.helpers import W, X, compile_dense, dense, reference


def test_the_weights_are_part_of_the_key(cache_dir: Path) -> None:
    compile_dense()
    other = qidao.compile(dense(2 * W), threads=1, verify="stage")
    assert other.stats["cache"] == "miss, stored"
    np.testing.assert_allclose(other(X)[0], reference(2 * W), rtol=1e-5, atol=1e-5)


def test_an_onnx_file_is_keyed_by_its_bytes(cache_dir: Path, tmp_path: Path) -> None:
    def model(scale: float) -> Path:
        w = numpy_helper.from_array(W * scale, "w")
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])],
            [w],
        )
        path = tmp_path / "m.onnx"
        onnx.save(helper.make_model(graph), path)
        return path

    path = model(1.0)
    assert qidao.compile(path, verify="stage").stats["cache"] == "miss, stored"
    assert qidao.compile(path, verify="stage").stats["cache"] == "hit"
    path = model(3.0)  # the same path, other weights
    changed = qidao.compile(path, verify="stage")
    assert changed.stats["cache"] == "miss, stored"
    np.testing.assert_allclose(changed(X)[0], X @ (3 * W), rtol=1e-5, atol=1e-4)


def _scale_model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("scale", ["x"], ["y"], domain="demo")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("demo", 1)]
    return helper.make_model(graph, opset_imports=opsets)


@pytest.mark.parametrize("as_file", [False, True], ids=["ModelProto", "path"])
def test_a_custom_ops_body_is_part_of_the_key(
    cache_dir: Path, tmp_path: Path, as_file: bool
) -> None:
    """The ONNX bytes name ``demo.scale``; its body is the registered Python
    function, so another body must be another key (in this process or another)."""
    model: Any = _scale_model()
    if as_file:
        onnx.save(model, tmp_path / "m.onnx")
        model = tmp_path / "m.onnx"
    x = np.ones(3, np.float32)
    statuses = []
    for k in (2.0, 3.0, 2.0, 3.0):
        qidao.custom_op("demo::scale", lambda g, v, k=k: v * k)
        try:
            f = qidao.compile(model, verify="stage")
        finally:
            qidao.frontend.custom.unregister("demo::scale")
        np.testing.assert_array_equal(f(x)[0], x * k)
        statuses.append(f.stats["cache"])
    assert statuses == ["miss, stored", "miss, stored", "hit", "hit"]


def test_a_custom_ops_vjp_is_part_of_the_key(cache_dir: Path) -> None:
    def build() -> Any:
        g = qidao.frontend.builder.Graph()
        x = g.input("x", (3,))
        g.output(g.reduce_sum(g.custom("demo::cube", x)))
        return g

    x = np.array([1.0, 2.0, 3.0], np.float32)
    for factor in (3.0, 5.0):  # a deliberately wrong vjp the second time
        qidao.custom_op(
            "demo::cube",
            lambda g, v: v * v * v,
            vjp=lambda g, v, y, dy, factor=factor: dy * v * v * factor,
        )
        try:
            f = qidao.compile(build(), grad=["x"], verify="stage")
        finally:
            qidao.frontend.custom.unregister("demo::cube")
        assert f.stats["cache"] == "miss, stored"
        np.testing.assert_allclose(f(x)[1], factor * x * x, rtol=1e-6)


def _external_constant_model(folder: Path, value: float) -> Path:
    c = numpy_helper.from_array(np.full(300, value, np.float32), "c")
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["c"], value=c),
            helper.make_node("Mul", ["x", "c"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [300])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [300])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    convert_model_to_external_data(
        model,
        all_tensors_to_one_file=True,
        location="m.data",
        size_threshold=0,
        convert_attribute=True,
    )
    path = folder / "m.onnx"
    onnx.save_model(model, path)
    return path


def test_a_constants_external_data_is_part_of_the_key(
    cache_dir: Path, tmp_path: Path
) -> None:
    path = _external_constant_model(tmp_path, 2.0)
    x = np.ones(300, np.float32)
    first = qidao.compile(path, verify="stage")
    np.testing.assert_array_equal(first(x)[0], 2 * x)
    np.full(300, 5.0, np.float32).tofile(tmp_path / "m.data")  # the constant is 5
    changed = qidao.compile(path, verify="stage")
    assert changed.stats["cache"] == "miss, stored"
    np.testing.assert_array_equal(changed(x)[0], 5 * x)


def test_only_the_external_bytes_the_import_reads_are_keyed(
    cache_dir: Path, tmp_path: Path
) -> None:
    path = _external_constant_model(tmp_path, 2.0)
    digest = model_digest(path)
    with open(tmp_path / "m.data", "ab") as f:
        f.write(b"bytes after the tensor: not part of the model")
    assert model_digest(path) == digest
    assert qidao.compile(path, verify="stage").stats["cache"] == "miss, stored"


@pytest.mark.usefixtures("deadline")
def test_an_external_location_outside_the_folder_is_refused_before_it_is_read(
    cache_dir: Path, tmp_path: Path
) -> None:
    """A FIFO outside the model's folder: hashing it would block forever; the
    importer's checks refuse it first (as with the cache off)."""
    outside = tmp_path / "outside.fifo"
    os.mkfifo(outside)
    (tmp_path / "model").mkdir()
    t = numpy_helper.from_array(np.ones(4, np.float32), "w")
    set_external_data(t, location=str(outside), offset=0, length=16)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [t],
    )
    path = tmp_path / "model" / "m.onnx"
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path
    )
    start = time.perf_counter()
    with pytest.raises(qidao.ModelError, match="escapes the model's folder"):
        qidao.compile(path, verify="stage")
    assert time.perf_counter() - start < 20


def test_every_option_is_part_of_the_key(cache_dir: Path) -> None:
    """Each option of ``qidao.compile`` (a new one must be added here) changes the
    key; ``debug`` and ``verify`` are not keyed because compiles with them are not
    cached at all."""
    from qidao.compiler.compile import _cache_key
    from qidao.compiler.options import check_settings
    from qidao.compiler.targets import get_target
    from qidao.compiler.targets.cpu.target import BF16_FEATURE
    from qidao.runtime.amx import amx_available
    from qidao.runtime.cpu import host_has

    values: dict[str, Any] = {
        "fuse": False,
        "schedule": None,
        "algo": "direct",
        "checks": True,
        "tensor_cores": None,  # a CUDA option: nothing to vary on the CPU
        "grad": ["x"],
        "optimizer": None,  # varied below, with grad
        "checkpoint": None,  # varied below, with grad
        "opt_level": 1,
        "records": None,  # a file: keyed by its bytes (test_tune.py)
        "profile": False,  # not cached (test_store.py)
        "update_in_place": False,
        "vnni": False,
        # False differs from the default only where AVX512_BF16 is (True elsewhere:
        # an error)
        "bf16": False if host_has(BF16_FEATURE) else None,
        # False differs from the default only where AMX runs (True elsewhere: an error)
        "amx": False if amx_available() else None,
        "pack_weights": False,  # the default schedule's default is True
        # the default follows the host (AVX-512F): the other value differs from it
        "ldexp": not host_has("avx512f"),
        "disable": ["cse"],
        "debug": None,
        "verify": None,
    }
    known = {**COMMON_OPTIONS, **CpuTarget.options}
    assert set(values) == set(known), "a new option needs a case here"
    backend = get_target("cpu")

    def key(threads: int = 1, **options: Any) -> str | None:
        settings = check_settings("cpu", backend.options, "graph", threads, options)
        return _cache_key(dense(), backend, settings)[0]

    base = key(verify="stage")
    assert base is not None
    changed = {
        name: key(verify="stage", **{name: value})
        for name, value in values.items()
        if value is not None and name not in ("profile",)
    }
    assert all(k not in (None, base) for k in changed.values()), changed
    grad = key(verify="stage", grad=["x"])
    sgd = key(verify="stage", grad=["x"], optimizer=qidao.optim.SGD(lr=0.1))
    sgd_momentum = key(
        verify="stage", grad=["x"], optimizer=qidao.optim.SGD(lr=0.1, momentum=0.9)
    )
    checkpointed = key(verify="stage", grad=["x"], checkpoint=2)
    assert len({grad, sgd, sgd_momentum, checkpointed}) == 4
    assert None not in {grad, sgd, sgd_momentum, checkpointed}
    assert key(verify="stage", threads=1) == base
    assert key(verify="stage", disable=["cse", "dce"]) == key(
        verify="stage", disable=["dce", "cse", "dce"]
    )
    if (os.cpu_count() or 1) > 1:
        assert key(verify="stage", threads=2) != base


@pytest.mark.parametrize("package", ["qidao", "xdsl", "llvmlite", "numpy", "onnx"])
def test_the_versions_that_make_the_code_are_part_of_the_key(
    monkeypatch: pytest.MonkeyPatch, package: str
) -> None:
    digest = cache_key_module.compiler_digest()
    real = cache_key_module.metadata.version

    def other_version(name: str) -> str:
        return "0.0.0-other" if name == package else real(name)

    monkeypatch.setattr(cache_key_module.metadata, "version", other_version)
    cache_key_module.compiler_digest.cache_clear()
    try:
        assert cache_key_module.compiler_digest() != digest
    finally:
        cache_key_module.compiler_digest.cache_clear()


def test_the_llvm_version_is_part_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    import llvmlite.binding as llvm

    digest = cache_key_module.compiler_digest()
    monkeypatch.setattr(llvm, "llvm_version_info", (1, 2, 3))
    cache_key_module.compiler_digest.cache_clear()
    try:
        assert cache_key_module.compiler_digest() != digest
    finally:
        cache_key_module.compiler_digest.cache_clear()


def test_module_digest_is_the_same_in_another_process() -> None:
    here = module_digest(dense().module())
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from tests.compiler.cache.helpers import dense;"
        "from qidao.compiler.cache import module_digest;"
        "print(module_digest(dense().module()))"
    )
    root = str(Path(__file__).resolve().parents[3])
    out = subprocess.run(
        [sys.executable, "-c", code, root], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == here
    assert module_digest(dense(2 * W).module()) != here


def test_module_digest_sees_the_nesting_of_regions() -> None:
    """Ops in a region and the same ops after it walk alike; the digest tells
    them apart."""
    from xdsl.dialects import builtin, func
    from xdsl.ir import Block, Region

    def module(inside: bool) -> builtin.ModuleOp:
        body = [func.ReturnOp()]
        inner = func.FuncOp("inner", ([], []), Region(Block(body)))
        if inside:
            return builtin.ModuleOp([builtin.ModuleOp([inner])])
        return builtin.ModuleOp([builtin.ModuleOp([]), inner])

    assert module_digest(module(True)) != module_digest(module(False))
