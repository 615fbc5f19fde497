"""Whole models on the CUDA target without a GPU: the zoo's ResNet and BERT classes
(``transformers``, random weights; ``qidao/bench/zoo_models.py``) at small sizes,
through ONNX, with the default GPU schedules. Every nest of every kernel on the
grid (no ``<<<1, 1>>>`` launch), the CUDA C warning-free for sm_80 and sm_90
(``nvcc``, each model once per architecture), PyTorch's results on the emulator,
twice in a row on the same loaded program (its buffers are allocated once and
reused), and the host plan's scratch buffers shared as ``@main`` frees them
(``emit/program.py``). On a GPU the same models run against PyTorch; without one
that test skips with the reason.

The sizes: a ResNet of two stages (basic blocks, widths 8 and 16, the stem's 7x7
conv and 3x3 max pool, a 1x1 shortcut, the global average pool and the
classifier) on 2x3x32x32, and a BERT of 2 layers (hidden 32, 2 heads, sequence
8, batch 2): the bench's small models (``qidao/bench/cuda/models.py``). The emulator runs each in well under a second once built; the
build (``g++`` of the whole program) takes a few seconds.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func, memref

import qidao
from qidao.compiler.host import host_stats
from qidao.compiler.targets.cuda.compiled import CompiledCuda
from qidao.frontend.builder import Graph
from qidao.runtime.cuda import cuda_unavailable_reason

NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
needs_gxx = pytest.mark.skipif(GXX is None, reason="g++ (the emulator) is not on PATH")
pytest.importorskip("transformers", reason="the zoo's models are transformers classes")
pytest.importorskip("onnx", reason="the models go through ONNX")

from qidao.bench.cuda.models import BERT_TINY_B2, RESNET_TINY_B2  # noqa: E402
from qidao.bench.zoo_models import onnx_path, reference  # noqa: E402

MODELS = {"resnet": RESNET_TINY_B2, "bert": BERT_TINY_B2}
"""The bench's small models (``qidao/bench/cuda/models.py``): the zoo's tiny ResNet
at batch 2 and a BERT of 2 layers, hidden 32."""

KINDS = {
    "resnet": ("conv2d: ", "pool: ", "rows: over axes before the last: ", "matmul: "),
    "bert": ("elementwise: ", "matmul: ", "rows: "),
}
"""Kinds each model's report must show (the take of BERT's embeddings is an
elementwise kernel; ResNet's global pool a reduction over H and W)."""


def compile_model(name: str, **options: Any) -> CompiledCuda:
    compiled = qidao.compile(onnx_path(MODELS[name]), target="cuda", **options)
    assert isinstance(compiled, CompiledCuda)
    return compiled


def other_inputs(name: str) -> list[np.ndarray[Any, Any]]:
    """Inputs other than the model's example inputs, of the same kind."""
    model = MODELS[name]
    rng = np.random.default_rng(99)
    if model.is_text:
        vocab = model.config().vocab_size
        return [rng.integers(0, vocab, model.input_shape, dtype=np.int64)]
    return [rng.standard_normal(model.input_shape, dtype=np.float32)]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_nest_of_the_model_is_on_the_grid(name: str) -> None:
    compiled = compile_model(name)
    report = compiled.stats["default_schedule"]
    assert compiled.stats["serial_launches"] == [], report
    assert not [k for k, what in report.items() if "none: " in what], report
    for kind in KINDS[name]:
        assert any(what.startswith(kind) for what in report.values()), (kind, report)
    launches = compiled.program.launches
    assert compiled.stats["launches"] == len(launches) > compiled.stats["kernels"]
    assert all(not launch.serial for launch in launches)


@needs_gxx
@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_model_matches_pytorch_on_the_emulator(name: str) -> None:
    """Two calls of one loaded program (its device buffers reused), each against
    PyTorch eager."""
    compiled = compile_model(name, device="emulate")
    model = MODELS[name]
    for inputs in (model.inputs(), other_inputs(name)):
        (got,) = compiled(*inputs)
        want = reference(model, inputs)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_the_models_warning_free(arch: str, tmp_path: Path) -> None:
    for name in sorted(MODELS):
        source = tmp_path / f"{name}.cu"
        source.write_text(compile_model(name).program.source)
        cmd = [str(NVCC), f"-arch={arch}", "-std=c++17", "--cubin", "-o"]
        result = subprocess.run(
            [*cmd, str(tmp_path / f"{name}.cubin"), str(source)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, (name, result.stderr)
        assert "warning" not in result.stderr.lower(), (name, result.stderr)


# --- buffers ----------------------------------------------------------------------------


def scratch_bytes(compiled: CompiledCuda) -> int:
    return sum(b.nbytes for b in compiled.program.buffers if b.kind == "scratch")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_scratch_buffers_are_shared_as_main_frees_them(name: str) -> None:
    """The device holds less than one buffer per ``alloc`` of ``@main``, and no
    less than the most bytes ``@main`` has live at once (``host_stats``)."""
    compiled = compile_model(name)
    affine = compiled.module("affine")
    main = next(
        op
        for op in affine.ops
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main"
    )
    allocs = [op for op in main.body.block.ops if isinstance(op, memref.AllocOp)]
    every_alloc = sum(
        math.prod(op.memref.type.get_shape())
        * op.memref.type.get_element_type().bitwidth  # type: ignore[union-attr]
        // 8
        for op in allocs
    )
    stats = host_stats(affine)
    assert len(allocs) == stats["buffers"] > 1
    assert stats["peak_bytes"] <= scratch_bytes(compiled) < every_alloc
    shared = [b for b in compiled.program.buffers if b.name.startswith("scratch")]
    assert shared and "then" in compiled.program.source


def chain(n: int) -> Graph:
    g = Graph("main")
    y = g.input("x", (n,))
    for op in ("exp", "neg", "relu", "sqrt", "tanh"):
        y = getattr(g, op)(y)
    g.output(y)
    return g


def test_a_chain_of_kernels_takes_turns_in_two_buffers() -> None:
    """Eager mode: five kernels, four intermediate buffers, each freed after the
    next kernel reads it: two device buffers take turns (the first and third
    buffer in one, the second and fourth in the other)."""
    compiled = qidao.compile(chain(1000), target="cuda", mode="eager")
    assert isinstance(compiled, CompiledCuda)
    program = compiled.program
    scratch = [b for b in program.buffers if b.kind == "scratch"]
    assert [b.name for b in scratch] == ["scratch0", "scratch1"]
    assert [b.nbytes for b in scratch] == [4000, 4000]
    names = [
        [program.buffers[b].name for b in launch.buffers] for launch in program.launches
    ]
    assert names == [
        ["x", "scratch0"],
        ["scratch0", "scratch1"],
        ["scratch1", "scratch0"],
        ["scratch0", "scratch1"],
        ["scratch1", "output0"],
    ]


@needs_gxx
def test_the_chain_in_two_buffers_runs_right() -> None:
    compiled = qidao.compile(chain(1000), target="cuda", mode="eager", device="emulate")
    x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
    (got,) = compiled(x)
    np.testing.assert_allclose(got, np.tanh(np.sqrt(np.maximum(-np.exp(x), 0))))


# --- on a GPU ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_model_matches_pytorch_on_a_gpu(name: str) -> None:
    reason = cuda_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no GPU: {reason}")
    compiled = compile_model(name)
    model = MODELS[name]
    for inputs in (model.inputs(), other_inputs(name)):
        (got,) = compiled(*inputs)
        np.testing.assert_allclose(got, reference(model, inputs), rtol=1e-4, atol=1e-4)
