"""The normalizations of ``qidao/frontend/onnx/norm.py``: ``LRN``,
``InstanceNormalization`` and ``GroupNormalization`` (opset 18's per-group and 21's
per-channel scale), compiled with ``qidao.compile`` and run on the CPU.

The oracle is ONNX Runtime on the same model and random inputs. It takes ``LRN``
of odd sizes on 4-D inputs only; for the rest the oracle is ``reference_lrn`` below,
written from ONNX's definition (ONNX's ``ReferenceEvaluator`` sums over the wrong
channels: its loop runs over the batch). Refusals are checked for their message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is the oracle")

Array = np.ndarray[Any, Any]
FLOAT, DOUBLE = TensorProto.FLOAT, TensorProto.DOUBLE


def make_model(
    op: str,
    inputs: Mapping[str, Sequence[int]],
    opset: int,
    initializers: Mapping[str, Array] | None = None,
    elem_type: int = FLOAT,
    **attrs: Any,
) -> Any:
    """One ``op`` node named ``norm`` of the graph inputs, then the initializers."""
    initializers = initializers or {}
    node = helper.make_node(op, [*inputs, *initializers], ["y"], name="norm", **attrs)
    graph = helper.make_graph(
        [node],
        "norm",
        [helper.make_tensor_value_info(n, elem_type, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info("y", elem_type, None)],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    return model


def random_inputs(
    inputs: Mapping[str, Sequence[int]], dtype: Any = np.float32
) -> dict[str, Array]:
    rng = np.random.default_rng(sum(len(s) for s in inputs.values()))
    return {n: rng.standard_normal(s).astype(dtype) for n, s in inputs.items()}


def assert_close(
    got: Array, want: Array, rtol: float = 1e-4, atol: float = 1e-5
) -> None:
    """Equal shapes and values; a mismatch names the first index and both values."""
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(
            f"mismatch at index {idx}: got {got[idx]!r}, expected {want[idx]!r} "
            f"({int(bad.sum())} of {bad.size} differ)"
        )


def onnxruntime(model: Any, feeds: Mapping[str, Array]) -> Array:
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, dict(feeds))
    return np.asarray(want)


def check(model: Any, feeds: Mapping[str, Array], want: Array | None = None) -> None:
    """qidao's output equals ``want``, by default ONNX Runtime's."""
    (got,) = qidao.compile(model)(*feeds.values())
    assert_close(np.asarray(got), onnxruntime(model, feeds) if want is None else want)


# ---- LRN ----------------------------------------------------------------------------


def reference_lrn(
    x: Array, size: int, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0
) -> Array:
    """ONNX ``LRN``: the sum of squares over channels ``c - floor((size - 1) / 2)``
    to ``c + ceil((size - 1) / 2)``, one channel at a time, in float64."""
    wide = x.astype(np.float64)
    square_sum = np.zeros_like(wide)
    for c in range(x.shape[1]):
        lo = max(0, c - (size - 1) // 2)
        hi = min(x.shape[1], c + size // 2 + 1)  # size // 2 == ceil((size - 1) / 2)
        square_sum[:, c] = (wide[:, lo:hi] ** 2).sum(axis=1)
    return (wide / (bias + alpha / size * square_sum) ** beta).astype(x.dtype)


@pytest.mark.parametrize(
    ("shape", "attrs"),
    [
        ((2, 7, 3, 4), {"size": 3}),
        ((1, 6, 5, 5), {"size": 5, "alpha": 0.1, "beta": 0.6, "bias": 2.0}),
        ((2, 3, 2, 3), {"size": 9, "alpha": 0.5, "beta": 1.2, "bias": 0.5}),
        ((1, 4, 3, 3), {"size": 1, "alpha": 1.0, "beta": 0.5}),
    ],
)
def test_lrn_matches_onnxruntime(shape: tuple[int, ...], attrs: dict[str, Any]) -> None:
    model = make_model("LRN", {"x": shape}, 13, **attrs)
    feeds = random_inputs({"x": shape})
    check(model, feeds)
    assert_close(reference_lrn(feeds["x"], **attrs), onnxruntime(model, feeds))


@pytest.mark.parametrize(
    ("shape", "size"),
    [((1, 6, 3, 3), 4), ((2, 5, 7), 3), ((1, 4, 2, 2, 3), 2)],
)
def test_lrn_even_sizes_and_other_ranks(shape: tuple[int, ...], size: int) -> None:
    """ONNX Runtime takes odd sizes and 4-D inputs only; the window of an even size
    reaches one channel further up than down."""
    model = make_model("LRN", {"x": shape}, 13, size=size, alpha=0.3, bias=1.5)
    feeds = random_inputs({"x": shape})
    check(model, feeds, reference_lrn(feeds["x"], size, alpha=0.3, bias=1.5))


def test_lrn_is_one_average_pool() -> None:
    text = str(import_onnx(make_model("LRN", {"x": (1, 8, 4, 4)}, 13, size=5)))
    assert text.count("tg.avg_pool2d") == 1
    assert "kernel = [5, 1]" in text and "padding = [2, 0, 2, 0]" in text


# ---- InstanceNormalization -----------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 6), (1, 2, 2, 3, 2)])
def test_instance_normalization_matches_onnxruntime(shape: tuple[int, ...]) -> None:
    c = shape[1]
    model = make_model(
        "InstanceNormalization", {"x": shape, "s": (c,), "b": (c,)}, 22, epsilon=0.01
    )
    check(model, random_inputs({"x": shape, "s": (c,), "b": (c,)}))


def test_instance_normalization_with_constant_parameters() -> None:
    rng = np.random.default_rng(1)
    params = {
        "s": rng.standard_normal(4).astype(np.float32),
        "b": rng.standard_normal(4).astype(np.float32),
    }
    model = make_model("InstanceNormalization", {"x": (2, 4, 3, 3)}, 6, params)
    x = rng.standard_normal((2, 4, 3, 3)).astype(np.float32) * 5 + 100
    check(model, {"x": x})


# ---- GroupNormalization ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("opset", "shape", "groups"),
    [
        (18, (2, 6, 4, 5), 3),
        (18, (1, 4, 7), 1),
        (21, (2, 6, 4, 5), 3),
        (21, (2, 6, 3, 3), 6),
        (21, (2, 4, 7), 1),
    ],
)
def test_group_normalization_matches_onnxruntime(
    opset: int, shape: tuple[int, ...], groups: int
) -> None:
    """Opset 18 scales per group, opset 21 per channel."""
    params = (groups,) if opset < 21 else (shape[1],)
    inputs = {"x": shape, "s": params, "b": params}
    model = make_model(
        "GroupNormalization", inputs, opset, num_groups=groups, epsilon=1e-3
    )
    check(model, random_inputs(inputs))


def test_group_normalization_float64_standardizes_in_float32() -> None:
    """``stash_type=1`` (opset 21): the statistics in float32, scale and bias in the
    input's float64."""
    inputs = {"x": (2, 4, 3, 3), "s": (4,), "b": (4,)}
    model = make_model("GroupNormalization", inputs, 21, elem_type=DOUBLE, num_groups=2)
    feeds = random_inputs(inputs, np.float64)
    (got,) = qidao.compile(model)(*feeds.values())
    assert np.asarray(got).dtype == np.float64
    assert_close(np.asarray(got), onnxruntime(model, feeds))


def test_group_normalization_has_its_own_converter() -> None:
    """Not ONNX's function body (whose variance is ``E[x^2] - E[x]^2``): the
    two-pass standardization, with no value named after an expansion."""
    inputs = {"x": (2, 6, 4), "s": (6,), "b": (6,)}
    text = str(import_onnx(make_model("GroupNormalization", inputs, 21, num_groups=3)))
    assert "GroupNormalization" not in text
    assert "tensor<2x3x8xf32>" in text


# ---- refusals --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "inputs", "opset", "attrs", "message"),
    [
        ("LRN", {"x": (1, 3, 4, 4)}, 13, {"size": 0}, "size=0 must be >= 1"),
        ("LRN", {"x": (3, 4)}, 13, {"size": 3}, "rank >= 3, got shape [3, 4]"),
        (
            "InstanceNormalization",
            {"x": (2, 3, 4), "s": (4,), "b": (3,)},
            22,
            {},
            "the scale input must have shape [3], got [4]",
        ),
        (
            "GroupNormalization",
            {"x": (2, 6, 4), "s": (6,), "b": (6,)},
            21,
            {"num_groups": 4},
            "num_groups=4 must divide the 6 channels",
        ),
        (
            "GroupNormalization",
            {"x": (2, 6, 4), "s": (3,), "b": (3,)},
            21,
            {"num_groups": 3},
            "the scale input must have shape [6], got [3]",
        ),
        (
            "GroupNormalization",
            {"x": (2, 6, 4), "s": (6,), "b": (6,)},
            18,
            {"num_groups": 3},
            "the scale input must have shape [3], got [6]",
        ),
        (
            "GroupNormalization",
            {"x": (2, 6, 4), "s": (6,), "b": (6,)},
            21,
            {"num_groups": 3, "stash_type": 11},
            "stash_type=11 is not supported",
        ),
    ],
)
def test_refusals_name_the_node_and_the_value(
    op: str,
    inputs: dict[str, tuple[int, ...]],
    opset: int,
    attrs: dict[str, Any],
    message: str,
) -> None:
    with pytest.raises(OnnxImportError) as info:
        import_onnx(make_model(op, inputs, opset, **attrs))
    assert f"{op} node 'norm'" in str(info.value)
    assert message in str(info.value)
