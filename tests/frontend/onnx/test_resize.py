"""ONNX ``Resize`` (``qidao/frontend/onnx/resize.py``): nearest, linear and cubic
along any axes, every coordinate transformation mode (``tf_crop_and_resize`` with
its ``roi``), ``antialias``, every ``nearest_mode``, ``scales`` or ``sizes`` (with ``axes`` and
``keep_aspect_ratio_policy``), compiled with ``qidao.compile`` and run on the CPU.

The oracle is ONNX Runtime on the same model and random inputs; the models that
``torch.nn.functional.interpolate`` exports are also checked against PyTorch. (ONNX's
reference differs from both for ``align_corners`` with a scale whose output size is
rounded: it divides by ``size * scale - 1`` instead of ``output size - 1``.)
Refusals are checked for their message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.errors import ResourceError
from qidao.frontend.errors import ConstantRequiredError, OnnxImportError
from qidao.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

Array = np.ndarray[Any, Any]

COORDINATE_MODES = [
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


@dataclass
class Case:
    """One ``Resize`` node: its input shape, its ``scales`` or ``sizes`` (constants)
    and its attributes."""

    shape: tuple[int, ...]
    scales: list[float] | None = None
    sizes: list[int] | None = None
    attrs: dict[str, Any] = field(default_factory=dict)


def resize_model(
    cases: Sequence[Case], opset: int = 19, elem_type: int = TensorProto.FLOAT
) -> Any:
    """A model of one ``Resize`` node per case, ``resize<k>`` from input ``x<k>`` to
    output ``y<k>`` (many cases compile once: compiling dominates these tests).
    ``scales`` and ``sizes`` are initializers; before opset 13 an empty ``roi`` and
    (with ``sizes``) empty ``scales`` fill the required inputs."""
    empty = np.zeros(0, np.float32)
    initializers = [numpy_helper.from_array(empty, "empty")]
    nodes = []
    for k, case in enumerate(cases):
        names = [f"x{k}", "empty" if opset < 13 else "", "", ""]
        if case.scales is not None:
            scales = np.array(case.scales, np.float32)
            initializers.append(numpy_helper.from_array(scales, f"scales{k}"))
            names[2] = f"scales{k}"
        elif opset < 13:
            names[2] = "empty"
        if case.sizes is not None:
            sizes = np.array(case.sizes, np.int64)
            initializers.append(numpy_helper.from_array(sizes, f"sizes{k}"))
            names[3] = f"sizes{k}"
        while not names[-1]:
            names.pop()
        nodes.append(
            helper.make_node(
                "Resize", names, [f"y{k}"], name=f"resize{k}", **case.attrs
            )
        )
    graph = helper.make_graph(
        nodes,
        "resize",
        [
            helper.make_tensor_value_info(f"x{k}", elem_type, list(case.shape))
            for k, case in enumerate(cases)
        ],
        [
            helper.make_tensor_value_info(f"y{k}", elem_type, None)
            for k in range(len(cases))
        ],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


def rand(shape: Sequence[int], seed: int = 0) -> Array:
    rng = np.random.default_rng(seed + sum(shape))
    return rng.standard_normal(shape).astype(np.float32)


def assert_close(
    got: Array, want: Array, what: str = "", rtol: float = 1e-4, atol: float = 1e-5
) -> None:
    """Equal shapes and values; a mismatch names the case, the first index and both
    values."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"{what}: mismatch at index {idx}: got {got[idx]!r}, expected "
            f"{want[idx]!r} ({int(bad.sum())} of {bad.size} differ)"
        )


def check(
    cases: Sequence[Case], opset: int = 19, dtype: Any = np.float32
) -> list[Array]:
    """qidao's outputs equal ONNX Runtime's on random inputs; returns them."""
    elem_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = resize_model(cases, opset, elem_type)
    inputs = {f"x{k}": rand(c.shape, k).astype(dtype) for k, c in enumerate(cases)}
    session = ort.InferenceSession(model.SerializeToString())
    want = session.run(None, inputs)
    got = [np.asarray(y) for y in qidao.compile(model)(*inputs.values())]
    for k, case in enumerate(cases):
        assert got[k].dtype == want[k].dtype
        assert_close(got[k], want[k], f"case {k} {case}")
    return got


# ---- against ONNX Runtime -------------------------------------------------------------


def test_nearest() -> None:
    """Every coordinate mode with every ``nearest_mode``, up along one axis and down
    along the other (ties included: 1.5 and 0.5); sizes 7 from 4 and 2 from 5."""
    cases = [Case((1, 2, 4, 5), sizes=[1, 2, 7, 2])]
    for coordinate in [*COORDINATE_MODES, "tf_half_pixel_for_nn"]:
        attrs = {"coordinate_transformation_mode": coordinate}
        for mode in NEAREST_MODES:
            cases.append(
                Case(
                    (1, 2, 4, 5),
                    [1, 1, 1.5, 0.6],
                    attrs={**attrs, "nearest_mode": mode},
                )
            )
    check(cases)


def test_linear() -> None:
    """Every coordinate mode, up along one axis and down along the other, and to
    sizes 1 (``pytorch_half_pixel`` and ``align_corners`` special-case it) and 9."""
    cases = []
    for coordinate in COORDINATE_MODES:
        attrs = {"mode": "linear", "coordinate_transformation_mode": coordinate}
        cases.append(Case((1, 2, 4, 5), [1, 1, 0.6, 1.7], attrs=attrs))
        cases.append(Case((1, 2, 4, 5), sizes=[1, 2, 1, 9], attrs=attrs))
    check(cases)


def test_cubic() -> None:
    shape, scales = (1, 2, 5, 6), [1, 1, 1.6, 0.7]
    variants: list[dict[str, Any]] = [
        {},
        {"coordinate_transformation_mode": "align_corners"},
        {"cubic_coeff_a": -0.5, "exclude_outside": 1},
    ]
    check([Case(shape, scales, attrs={"mode": "cubic", **v}) for v in variants])


def test_antialias() -> None:
    """``antialias=1``: linear and cubic downsampling by a widened filter (and
    upsampling, where it changes nothing), with ``exclude_outside``."""
    cases = []
    for mode in ("linear", "cubic"):
        for extra in ({}, {"exclude_outside": 1}):
            attrs = {"mode": mode, "antialias": 1, **extra}
            cases.append(Case((1, 2, 9, 7), [1, 1, 0.45, 0.6], attrs=attrs))
            cases.append(Case((1, 2, 4, 5), sizes=[1, 2, 7, 3], attrs=attrs))
    check(cases)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_tf_crop_and_resize(mode: str) -> None:
    """The crop box ``roi`` (partly outside the input: those outputs are the
    ``extrapolation_value``), resized to ``sizes``; the roi a graph input too."""
    graph = helper.make_graph(
        [
            helper.make_node(
                "Resize",
                ["x", "roi", "", "sizes"],
                ["y"],
                mode=mode,
                coordinate_transformation_mode="tf_crop_and_resize",
                extrapolation_value=-7.0,
            )
        ],
        "crop",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 5]),
            helper.make_tensor_value_info("roi", TensorProto.FLOAT, [8]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 2, 4, 7], np.int64), "sizes")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    x = rand((1, 2, 6, 5))
    session = ort.InferenceSession(model.SerializeToString())
    compiled = qidao.compile(model)
    for roi in ([0, 0, 0.1, -0.2, 1, 1, 0.8, 1.3], [0, 0, 0, 0, 1, 1, 1, 1]):
        box = np.array(roi, np.float32)
        (want,) = session.run(None, {"x": x, "roi": box})
        (got,) = compiled(x, box)
        assert_close(got, want, f"roi {roi}")


@pytest.mark.parametrize("opset", [11, 13])
def test_older_opsets(opset: int) -> None:
    """Opset 11 takes roi and scales as required inputs (empty ones here when
    unused); 13 makes them optional."""
    check(
        [Case((1, 3, 3, 4), [1, 1, 2, 2]), Case((1, 3, 3, 4), sizes=[1, 3, 5, 3])],
        opset,
    )


def test_axes_and_aspect_ratio() -> None:
    """``axes`` (opset 18) lists the axes ``scales`` or ``sizes`` give; the aspect
    ratio policies scale them all by the smallest or the largest of their
    ratios."""
    cases = [
        Case((1, 2, 4, 5), [3.0, 1.5], attrs={"axes": [3, 2]}),
        Case((1, 2, 4, 5), sizes=[7, 3], attrs={"axes": [3, 2], "mode": "linear"}),
    ]
    for axes in ([2, 3], [3, 2]):
        for policy in ("not_larger", "not_smaller"):
            attrs = {"axes": axes, "keep_aspect_ratio_policy": policy}
            cases.append(Case((1, 2, 4, 5), sizes=[7, 3], attrs=attrs))
    check(cases)


def test_other_ranks_and_layouts() -> None:
    check(
        [
            Case((3, 5), [2, 0.6], attrs={"mode": "linear"}),
            Case((2, 3, 5), [1, 2, 0.6], attrs={"mode": "linear"}),
            Case((1, 4, 5, 2), [1, 2, 1.5, 1], attrs={"mode": "linear"}),  # NHWC
            Case((1, 1, 3, 4, 5), [1, 1, 2, 1.5, 0.5]),
            Case((2, 3, 5), [2, 2, 0.6]),
            Case((2, 3, 4, 5), [1, 2, 1, 1.5]),  # an unchanged axis in between
            Case((2, 3, 4, 5), [2, 1, 3, 1], attrs={"nearest_mode": "floor"}),
        ]
    )


def test_nearest_on_integers() -> None:
    check([Case((1, 2, 3, 4), [1, 1, 2, 1.5])], dtype=np.int32)


def test_float64_linear_computes_in_float64() -> None:
    """ONNX Runtime has no float64 Resize: its float32 result, within float32
    rounding."""
    case = Case((1, 2, 3, 4), [1, 1, 2, 1.5], attrs={"mode": "linear"})
    x = rand(case.shape)
    (got,) = qidao.compile(resize_model([case], elem_type=TensorProto.DOUBLE))(
        x.astype(np.float64)
    )
    assert np.asarray(got).dtype == np.float64
    session = ort.InferenceSession(resize_model([case]).SerializeToString())
    (want,) = session.run(None, {"x0": x})
    assert_close(np.asarray(got), want, "float64")


# ---- the models torch exports, against PyTorch --------------------------------------------

TORCH_EXPORTS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {
            "mode": "nearest",
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "floor",
        },
        {"mode": "nearest"},
    ),
    (
        {"mode": "linear", "coordinate_transformation_mode": "half_pixel"},
        {"mode": "bilinear", "align_corners": False},
    ),
    (
        {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
        {"mode": "bilinear", "align_corners": False},
    ),
    (
        {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
        {"mode": "bilinear", "align_corners": True},
    ),
    (
        {"mode": "cubic", "coordinate_transformation_mode": "half_pixel"},
        {"mode": "bicubic", "align_corners": False},
    ),
]
"""The attributes ``F.interpolate`` exports, with its own arguments."""


def test_torch_interpolate() -> None:
    """``F.interpolate(x, scale_factor=2)`` (and ``size=(7, 3)`` for nearest and
    bilinear) as torch exports them: against ONNX Runtime and against PyTorch."""
    shape = (1, 3, 4, 5)
    cases = [Case(shape, [1, 1, 2, 2], attrs=attrs) for attrs, _ in TORCH_EXPORTS]
    cases += [Case(shape, sizes=[1, 3, 7, 3], attrs=a) for a, _ in TORCH_EXPORTS[:2]]
    got = check(cases)
    for k, (_, kwargs) in enumerate(TORCH_EXPORTS):
        x = torch.from_numpy(rand(shape, k))
        want = F.interpolate(x, scale_factor=2, **kwargs).numpy()
        assert_close(got[k], want, f"{kwargs} scale_factor=2")
    for k, (_, kwargs) in enumerate(TORCH_EXPORTS[:2], len(TORCH_EXPORTS)):
        x = torch.from_numpy(rand(shape, k))
        want = F.interpolate(x, size=(7, 3), **kwargs).numpy()
        assert_close(got[k], want, f"{kwargs} size=(7, 3)")


# ---- what the converter builds ----------------------------------------------------------


def test_what_nearest_and_linear_become() -> None:
    """Nearest at integer upscales is a broadcast (one copy); at other scales one
    ``tg.take`` of the resized axes flattened. Linear where every coordinate is a
    whole number (asymmetric halving) is one ``tg.gather`` along that axis (few
    arithmetic runs of indices), and an axis that keeps its size costs nothing."""
    doubled = str(import_onnx(resize_model([Case((1, 2, 4, 6), [1, 1, 2, 3])])))
    assert "tg.broadcast" in doubled and "tg.gather" not in doubled
    assert "tg.take" not in doubled and "tg.mul" not in doubled
    fractional = str(import_onnx(resize_model([Case((1, 2, 4, 6), [1, 1, 1.5, 2])])))
    assert fractional.count("tg.take") == 1 and "tg.gather" not in fractional
    assert "tensor<1x2x24xf32>, tensor<72xi32>) -> tensor<1x2x72xf32>" in fractional
    attrs = {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}
    halved = resize_model([Case((1, 2, 4, 6), [1, 1, 1, 0.5], attrs=attrs)])
    text = str(import_onnx(halved))
    assert text.count("tg.gather") == 1 and "tg.mul" not in text


# ---- refusals -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (
            {"coordinate_transformation_mode": "tf_crop_and_resize"},
            "tf_crop_and_resize needs the roi input",
        ),
        ({"mode": "area"}, "mode='area' is not supported (supported: nearest,"),
        ({"nearest_mode": "nearest"}, "nearest_mode='nearest' is not supported"),
    ],
)
def test_refused_attributes(attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(OnnxImportError) as info:
        import_onnx(resize_model([Case((1, 1, 4, 4), [1, 1, 2, 2], attrs=attrs)]))
    assert "Resize node 'resize0'" in str(info.value)
    assert message in str(info.value)


def test_linear_on_integers_is_refused() -> None:
    case = Case((1, 1, 2, 2), [1, 1, 2, 2], attrs={"mode": "linear"})
    model = resize_model([case], elem_type=TensorProto.INT64)
    with pytest.raises(OnnxImportError, match="mode 'linear' on a int64 tensor"):
        import_onnx(model)


def test_runtime_scales_are_named() -> None:
    """Scales computed at run time would make the output shape dynamic."""
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize")],
        "resize",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
            helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(
        ConstantRequiredError, match="the scales input 'scales'"
    ) as info:
        import_onnx(model)
    assert info.value.names == ("scales",)


@pytest.mark.parametrize(
    ("scales", "sizes", "shape"),
    [
        (None, [1, 1, 4, 2**62], "[1, 1, 4, 4611686018427387904]"),
        ([1, 1, 1, 1e30], None, "[1, 1, 4, 5000000"),
        (None, [1, 1, 2**31, 2**31], "[1, 1, 2147483648, 2147483648]"),
    ],
)
def test_huge_outputs_are_resource_errors_before_numpy(
    scales: list[float] | None, sizes: list[int] | None, shape: str
) -> None:
    """Issue 29, F17: the output size is checked against qidao's limit before NumPy
    makes the coordinates and index tables (a bare 'array is too big' before)."""
    model = resize_model([Case((1, 1, 4, 5), scales, sizes)])
    with pytest.raises(ResourceError) as info:
        import_onnx(model)
    assert str(info.value).startswith(
        f"Resize node 'resize0': a tensor of shape {shape}"
    )
