"""ONNX ``GridSample`` (``qidao/frontend/onnx/grid_sample.py``, the op
``tg.grid_sample``): every mode, padding mode and ``align_corners``, 2-D and 3-D
(volumetric) inputs, coordinates far outside ``[-1, 1]``, ties of nearest rounding,
NaN and infinite coordinates, float32, float64 and float16, compiled with
``qidao.compile`` and run on the CPU.

The oracle is ONNX Runtime on the same model and inputs,
``torch.nn.functional.grid_sample`` for infinite and very far coordinates, where
ONNX Runtime's integer casts go astray, and onnx.reference for a cubic volume. NaN coordinates give NaN (both oracles
leave them to an undefined cast). Refusals are checked for their message.
"""

from __future__ import annotations

import itertools
from typing import Any, cast

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.dialects.tg.grid_sample_numpy import grid_sample
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

Array = np.ndarray[Any, Any]

MODES = ["linear", "nearest", "cubic"]
PADDINGS = ["zeros", "border", "reflection"]
COMBOS = list(itertools.product(MODES, PADDINGS, [0, 1]))


def model(
    x_shape: tuple[int, ...],
    grid_shape: tuple[int, ...],
    combos: list[tuple[str, str, int]],
    opset: int = 20,
    elem_type: int = TensorProto.FLOAT,
) -> Any:
    """One ``GridSample`` node per (mode, padding_mode, align_corners), all on
    inputs ``x`` and ``grid``, output ``y<k>`` (compiling once keeps it fast)."""
    nodes = [
        helper.make_node(
            "GridSample",
            ["x", "grid"],
            [f"y{k}"],
            mode=mode,
            padding_mode=padding,
            align_corners=align,
        )
        for k, (mode, padding, align) in enumerate(combos)
    ]
    graph = helper.make_graph(
        nodes,
        "grid_sample",
        [
            helper.make_tensor_value_info("x", elem_type, list(x_shape)),
            helper.make_tensor_value_info("grid", elem_type, list(grid_shape)),
        ],
        [
            helper.make_tensor_value_info(f"y{k}", elem_type, None)
            for k in range(len(combos))
        ],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def check(
    x: Array,
    grid: Array,
    combos: list[tuple[str, str, int]] = COMBOS,
    opset: int = 20,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> list[Array]:
    """qidao's outputs equal ONNX Runtime's (NaN where it has NaN); returns them."""
    elem_type = helper.np_dtype_to_tensor_dtype(x.dtype)
    m = model(x.shape, grid.shape, combos, opset, elem_type)
    want = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x, "grid": grid})
    got = [np.asarray(y) for y in qidao.compile(m)(x, grid)]
    for k, combo in enumerate(combos):
        assert got[k].dtype == want[k].dtype, combo
        np.testing.assert_allclose(
            got[k], want[k], rtol=rtol, atol=atol, err_msg=str(combo)
        )
    return got


def rand(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> Array:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, shape) * scale).astype(np.float32)


def torch_grid_sample(
    x: Array, grid: Array, mode: str, padding: str, align: int
) -> Array:
    return F.grid_sample(
        torch.from_numpy(x),
        torch.from_numpy(grid),
        mode={"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode),
        padding_mode=padding,
        align_corners=bool(align),
    ).numpy()


@pytest.mark.parametrize("mode", MODES)
def test_every_padding_and_align_corners_2d(mode: str) -> None:
    """In range, beyond ``[-1, 1]``, up to 40 widths away (zeros reads 0, border
    the edge, reflection folds back however far) and NaN (NaN, module text)."""
    x = rand((2, 3, 5, 6), 0, 4.0)
    grid = rand((2, 4, 7, 2), 1, 1.3)
    grid[1, 2:] *= 30.0
    grid[0, 0, 1, 0] = grid[1, 3, 2, 1] = np.nan
    combos = [(mode, p, a) for p in PADDINGS for a in (0, 1)]
    m = model(x.shape, grid.shape, combos)
    want = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x, "grid": grid})
    got = qidao.compile(m)(x, grid)
    for combo, y, w in zip(combos, got, want, strict=True):
        y = np.asarray(y)
        # NaN in every mode (ONNX Runtime casts NaN to an integer: undefined)
        assert np.isnan(y[0, :, 0, 1]).all() and np.isnan(y[1, :, 3, 2]).all(), combo
        y[0, :, 0, 1] = y[1, :, 3, 2] = w[0, :, 0, 1] = w[1, :, 3, 2] = 0
        np.testing.assert_allclose(y, w, rtol=1e-3, atol=1e-4, err_msg=str(combo))


def test_opset_16_names_bilinear_and_bicubic() -> None:
    x = rand((1, 2, 4, 5), 2)
    grid = rand((1, 3, 3, 2), 3, 1.2)
    combos = [("bilinear", "zeros", 0), ("bicubic", "reflection", 1)]
    check(x, grid, combos, opset=16)


def test_very_far_and_infinite_coordinates() -> None:
    """Millions of widths away and +-inf, against PyTorch (ONNX Runtime's integer
    casts go astray there: it reads 0 or the wrong edge with border padding).
    Border padding reads the edge, zeros padding 0; an infinity in linear or
    cubic mode gives NaN (``inf - floor(inf)``). A float32 position that far has
    no exact reflection (its spacing exceeds the image): qidao gives a finite
    sample of the input there."""
    x = rand((1, 2, 4, 3), 4, 3.0)
    grid = np.array([[[[-1e6, 3e5], [2e7, -0.5], [np.inf, 0.2], [0.5, -np.inf]]]])
    grid = grid.astype(np.float32)
    combos = [(m, p, 0) for m in MODES for p in ("zeros", "border")]
    combos += [(m, "reflection", 1) for m in MODES]
    got = qidao.compile(model(x.shape, grid.shape, combos))(x, grid)
    for (mode, padding, align), y in zip(combos, got, strict=True):
        y = np.asarray(y)
        if padding == "reflection":
            assert np.isfinite(y[..., :2]).all()
            continue
        want = torch_grid_sample(x, grid, mode, padding, align)
        np.testing.assert_allclose(
            y, want, rtol=1e-4, atol=1e-5, err_msg=f"{mode} {padding} {align}"
        )


def test_nearest_rounds_half_to_even() -> None:
    """Grid values whose positions are exactly k + 0.5, inside and outside."""
    x = rand((1, 1, 4, 5), 6)
    # align_corners=0: u = ((g + 1) * 5 - 1) / 2; align_corners=1: u = 2 * (g + 1)
    g0 = (2 * np.arange(-4.5, 9.0, 1.0) + 1) / 5 - 1
    g1 = np.arange(-6, 8) / 4 + 0.125 - 1
    g = np.concatenate([g0, g1]).astype(np.float32)
    grid = np.stack([g, np.zeros_like(g)], axis=-1).reshape(1, 1, len(g), 2)
    check(x, grid, [("nearest", p, a) for p in PADDINGS for a in (0, 1)])


def test_volumetric_5d() -> None:
    x = rand((1, 2, 3, 4, 5), 7, 2.0)
    grid = rand((1, 2, 3, 4, 3), 8, 1.3)
    combos = [("linear", "zeros", 0), ("linear", "reflection", 1)]
    combos += [("nearest", "border", 0), ("nearest", "reflection", 0)]
    check(x, grid, combos)  # ONNX Runtime has no 3-D cubic


def test_volumetric_cubic_against_onnx_reference() -> None:
    """onnx.reference (ONNX Runtime has no 3-D cubic), with zeros padding: for
    border and reflection the reference moves a cubic position before its taps,
    which ONNX Runtime and PyTorch (and qidao) do not."""
    x = rand((1, 1, 3, 3, 4), 20, 2.0)
    grid = rand((1, 1, 2, 3, 3), 21, 1.2)
    m = model(x.shape, grid.shape, [("cubic", "zeros", 0)])
    outputs = ReferenceEvaluator(m).run(None, {"x": x, "grid": grid})
    (want,) = cast(list[Array], outputs)
    (got,) = qidao.compile(m)(x, grid)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)


def test_float64() -> None:
    x = rand((1, 2, 4, 4), 9, 2.0).astype(np.float64)
    grid = rand((1, 3, 5, 2), 10, 1.4).astype(np.float64)
    combos = [("linear", "reflection", 0), ("nearest", "zeros", 1)]
    combos += [("cubic", "border", 0)]
    check(x, grid, combos, rtol=1e-9, atol=1e-10)


def test_float16_computes_in_float32() -> None:
    x = rand((1, 2, 4, 4), 11, 2.0)
    grid = rand((1, 3, 5, 2), 12, 1.2)
    combos = [("cubic", "border", 1)]
    m = model(x.shape, grid.shape, combos)
    (want,) = ort.InferenceSession(m.SerializeToString()).run(
        None, {"x": x, "grid": grid}
    )
    m16 = model(x.shape, grid.shape, combos, 20, TensorProto.FLOAT16)
    (got,) = qidao.compile(m16)(x.astype(np.float16), grid.astype(np.float16))
    assert np.asarray(got).dtype == np.float16
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-2, atol=2e-2)


def test_empty_output() -> None:
    x = rand((1, 2, 4, 4), 13)
    grid = rand((1, 0, 3, 2), 14)
    (y,) = qidao.compile(model(x.shape, grid.shape, [("linear", "zeros", 0)]))(x, grid)
    assert np.asarray(y).shape == (1, 2, 0, 3)


def test_bad_attributes_are_refused() -> None:
    x, grid = rand((1, 1, 3, 3), 0), rand((1, 2, 2, 2), 1)
    m = model(x.shape, grid.shape, [("area", "zeros", 0)])
    with pytest.raises(OnnxImportError, match="mode='area' is not supported"):
        import_onnx(m)
    m = model(x.shape, grid.shape, [("linear", "wrap", 0)])
    with pytest.raises(OnnxImportError, match="padding_mode='wrap' is not supported"):
        import_onnx(m)


def test_grid_that_does_not_fit_is_refused() -> None:
    m = model((1, 1, 3, 3), (1, 2, 2, 3), [("linear", "zeros", 0)])
    with pytest.raises(OnnxImportError, match="GridSample"):
        import_onnx(m)


def test_numpy_semantics_match_onnx_runtime() -> None:
    """``numpy_eval``'s ``tg.grid_sample`` (``grid_sample_numpy.py``) is the rule the
    kernel follows: every combination, against ONNX Runtime."""
    x = rand((2, 3, 5, 6), 22, 4.0)
    grid = rand((2, 4, 7, 2), 23, 1.3)
    grid[1, 2:] *= 30.0
    m = model(x.shape, grid.shape, COMBOS)
    want = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x, "grid": grid})
    for (mode, padding, align), w in zip(COMBOS, want, strict=True):
        y = grid_sample(x, grid, mode, padding, bool(align))
        np.testing.assert_allclose(
            y, w, rtol=1e-3, atol=1e-4, err_msg=f"{mode} {padding} {align}"
        )
