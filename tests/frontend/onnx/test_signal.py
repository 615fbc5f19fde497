"""ONNX ``DFT``, ``STFT`` and ``MelWeightMatrix`` (``qidao/frontend/onnx/signal.py``),
compiled with ``qidao.compile`` and run on the CPU.

Oracles: ONNX's reference evaluator on the same model in float64 (NumPy's float64
FFT: exact to ~1e-15 here), ONNX Runtime on the float32 model, and the reference
itself for ``MelWeightMatrix`` (a table of scalars' functions).

Tolerances. qidao computes the DFT as a float64 matmul with float64 twiddles (error
about ``n * 2^-53`` of the largest magnitude) and rounds the result once to float32:
each entry is within half a float32 ulp of the exact one, so within ``2^-24 *
max|X|`` plus the float64 part; ``F32`` checks ``4 * 2^-24 * max|X|``. ONNX Runtime
computes in float32 (a radix-2 FFT for powers of two, Bluestein's algorithm
otherwise, 5e-6 of ``max|X|`` off at n = 20), so the comparison with it allows
``ORT * max|X|``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import qidao
from qidao.frontend.errors import OnnxImportError
from qidao.frontend.onnx import import_onnx

ort = pytest.importorskip("onnxruntime", reason="ONNX Runtime is an oracle")

Array = np.ndarray[Any, Any]

F32 = 4 * 2.0**-24
"""qidao's float32 DFT error bound, relative to the largest output magnitude."""

ORT = 1e-5
"""ONNX Runtime's float32 DFT error bound, relative to the largest output magnitude
(measured: 2e-7 with its radix-2 FFT at n = 16, 5e-6 with Bluestein's at n = 20)."""


def dft_model(
    shape: tuple[int, ...],
    opset: int = 20,
    elem_type: int = TensorProto.FLOAT,
    axis: int | None = None,
    dft_length: int | None = None,
    **attrs: Any,
) -> Any:
    """One ``DFT`` node on input ``x``; ``axis`` and ``dft_length`` as initializers
    (opset 20's axis input) or the attribute (opset 17/19's axis)."""
    inputs, inits = ["x", "", ""], []
    if dft_length is not None:
        inputs[1] = "dft_length"
        inits.append(numpy_helper.from_array(np.array(dft_length), "dft_length"))
    if axis is not None and opset >= 20:
        inputs[2] = "axis"
        inits.append(numpy_helper.from_array(np.array(axis), "axis"))
    elif axis is not None:
        attrs["axis"] = axis
    while not inputs[-1]:
        inputs.pop()
    node = helper.make_node("DFT", inputs, ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        "dft",
        [helper.make_tensor_value_info("x", elem_type, list(shape))],
        [helper.make_tensor_value_info("y", elem_type, None)],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m


def reference64(make: Any, x: Array) -> Array:
    """ONNX's reference on the float64 version of the model: the exact answer."""
    m = make(TensorProto.DOUBLE)
    return run_reference(m, {"x": x.astype(np.float64)})


def run_reference(m: Any, feeds: dict[str, Array]) -> Array:
    """The first output of ONNX's reference evaluator on ``m``."""
    (y, *_) = ReferenceEvaluator(m).run(None, feeds)
    return np.asarray(y)


def check_dft(
    shape: tuple[int, ...], opset: int = 20, seed: int = 0, **kwargs: Any
) -> None:
    """qidao's float32 result within ``F32`` of the exact one, and float64 within
    1e-12 relative."""
    x = np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)
    want = reference64(lambda t: dft_model(shape, opset, t, **kwargs), x)
    scale = np.abs(want).max()
    (got,) = qidao.compile(dft_model(shape, opset, **kwargs))(x)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=F32 * scale)
    m64 = dft_model(shape, opset, TensorProto.DOUBLE, **kwargs)
    (got64,) = qidao.compile(m64)(x.astype(np.float64))
    np.testing.assert_allclose(got64, want, rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [
        ((2, 12, 3, 1), {"axis": 1}),  # real, batch dims on both sides
        ((2, 12, 3, 2), {"axis": -2}),  # complex, the last signal axis
        ((12, 2), {"axis": 0}),  # no batch
        ((3, 5, 7, 2), {"axis": 0, "inverse": 1}),
        ((2, 9, 1), {"axis": 1, "onesided": 1}),  # odd n: rfft
        ((2, 10, 4, 2), {"axis": 1, "dft_length": 6}),  # truncated
        ((2, 7, 1), {"axis": 1, "dft_length": 12, "inverse": 1}),  # zero padded
        ((4, 6, 2), {"axis": 1, "inverse": 1, "onesided": 1}),  # irfft, n = 10
        ((4, 6, 2), {"axis": 1, "inverse": 1, "onesided": 1, "dft_length": 9}),
        ((4, 6, 2), {"axis": -2, "inverse": 1, "onesided": 1, "dft_length": 16}),
    ],
)
def test_dft_matches_numpys_float64_fft(
    shape: tuple[int, ...], kwargs: dict[str, int]
) -> None:
    check_dft(shape, **kwargs)


def test_dft_opset_17_takes_the_axis_attribute() -> None:
    check_dft((3, 8, 5, 1), opset=17, axis=2, onesided=1)
    check_dft((3, 8, 2), opset=19)  # the default axis: 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"axis": 1},
        {"axis": 2, "inverse": 1},
        {"axis": 1, "onesided": 1},
        {"axis": 1, "dft_length": 20},
    ],
)
def test_dft_matches_onnxruntime(kwargs: dict[str, int]) -> None:
    parts = 2 if kwargs.get("inverse") else 1
    x = np.random.default_rng(1).uniform(-1, 1, (2, 16, 16, parts)).astype("float32")
    m = dft_model(x.shape, **kwargs)
    (want,) = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    (got,) = qidao.compile(m)(x)
    np.testing.assert_allclose(got, want, atol=ORT * np.abs(want).max())


def test_dft_length_and_axis_graph_inputs_are_bound_at_the_first_call() -> None:
    node = helper.make_node("DFT", ["x", "n", "axis"], ["y"])
    graph = helper.make_graph(
        [node],
        "dft",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 8, 1]),
            helper.make_tensor_value_info("n", TensorProto.INT64, []),
            helper.make_tensor_value_info("axis", TensorProto.INT64, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 9
    x = np.random.default_rng(2).uniform(-1, 1, (3, 8, 1)).astype(np.float32)
    compiled = qidao.compile(m)
    for n in (5, 11):
        (got,) = compiled(x, np.array(n), np.array(1))
        want = np.fft.fft(x[..., 0].astype(np.float64), n=n, axis=1)
        np.testing.assert_allclose(got[..., 0], want.real, atol=F32 * 8)
        np.testing.assert_allclose(got[..., 1], want.imag, atol=F32 * 8)


@pytest.mark.parametrize(
    ("shape", "kwargs", "message"),
    [
        ((2, 8, 1), {"axis": 2}, "axis attribute value 2 is invalid"),  # ONNX's
        ((2, 8, 1), {"axis": -1}, "axis attribute value -1 is invalid"),
        ((2, 8, 3), {"axis": 1}, "expected rank >= 2 with a last axis of 1"),
        ((2, 8, 1), {"axis": 1, "dft_length": 0}, "the DFT length is 0"),
        ((2, 1, 2), {"axis": 1, "inverse": 1, "onesided": 1}, "the DFT length is 0"),
    ],
)
def test_dft_refusals_name_the_value(
    shape: tuple[int, ...], kwargs: dict[str, int], message: str
) -> None:
    m = dft_model(shape, **kwargs)
    with pytest.raises(OnnxImportError, match=message):
        import_onnx(m, constants=None)


def stft_model(
    length: int,
    parts: int,
    step: int,
    window: Array | None,
    frame_length: int | None,
    onesided: int | None = None,
    elem_type: int = TensorProto.FLOAT,
) -> Any:
    """``STFT`` of input ``x`` [2, length, parts]; the window (a runtime input
    ``w``) and ``frame_length`` are optional."""
    inputs = ["x", "step", "w" if window is not None else "", ""]
    inits = [numpy_helper.from_array(np.array(step, np.int64), "step")]
    if frame_length is not None:
        inputs[3] = "frame_length"
        inits.append(
            numpy_helper.from_array(np.array(frame_length, np.int64), "frame_length")
        )
    attrs: dict[str, Any] = {} if onesided is None else {"onesided": onesided}
    graph_inputs = [helper.make_tensor_value_info("x", elem_type, [2, length, parts])]
    if window is not None:
        graph_inputs.append(
            helper.make_tensor_value_info("w", elem_type, [len(window)])
        )
    graph = helper.make_graph(
        [helper.make_node("STFT", inputs, ["y"], **attrs)],
        "stft",
        graph_inputs,
        [helper.make_tensor_value_info("y", elem_type, None)],
        inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    return m


@pytest.mark.parametrize(
    ("parts", "step", "with_window", "frame_length", "onesided"),
    [
        (1, 4, True, None, None),  # Hann window, onesided by default
        (1, 3, False, 10, 0),  # no window: all ones
        (2, 5, True, 16, 0),  # complex signal
    ],
)
def test_stft_matches_the_reference_and_onnxruntime(
    parts: int, step: int, with_window: bool, frame_length: int | None, onesided: Any
) -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 50, parts)).astype(np.float32)
    window = np.hanning(16).astype(np.float32) if with_window else None
    feeds = {"x": x} if window is None else {"x": x, "w": window}
    m = stft_model(50, parts, step, window, frame_length, onesided)
    (got,) = qidao.compile(m)(*feeds.values())
    m64 = stft_model(
        50, parts, step, window, frame_length, onesided, TensorProto.DOUBLE
    )
    feeds64 = {k: v.astype(np.float64) for k, v in feeds.items()}
    want = run_reference(m64, feeds64)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=F32 * np.abs(want).max())
    if parts == 1:  # ONNX Runtime's STFT takes real signals
        (ort_y,) = ort.InferenceSession(m.SerializeToString()).run(None, feeds)
        np.testing.assert_allclose(got, ort_y, atol=ORT * np.abs(want).max())


def test_stft_window_of_another_length_is_an_error() -> None:
    m = stft_model(50, 1, 4, np.hanning(8), 16)
    with pytest.raises(OnnxImportError, match="window must match the frame_length"):
        import_onnx(m)


def mel_model(inputs: bool) -> Any:
    """``MelWeightMatrix`` of scalar graph inputs (``inputs``) or initializers."""
    values = {
        "num_mel_bins": np.array(8, np.int32),
        "dft_length": np.array(16, np.int32),
        "sample_rate": np.array(8192, np.int32),
        "lower_edge_hertz": np.array(0, np.float32),
        "upper_edge_hertz": np.array(4096, np.float32),
    }
    node = helper.make_node("MelWeightMatrix", list(values), ["y"])
    graph = helper.make_graph(
        [node],
        "mel",
        [
            helper.make_tensor_value_info(
                k, helper.np_dtype_to_tensor_dtype(v.dtype), []
            )
            for k, v in values.items()
        ]
        if inputs
        else [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [] if inputs else [numpy_helper.from_array(v, k) for k, v in values.items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    return m, values


@pytest.mark.parametrize("inputs", [False, True])
def test_mel_weight_matrix_is_the_references(inputs: bool) -> None:
    m, values = mel_model(inputs)
    feeds = values if inputs else {}
    want = run_reference(m, feeds)
    (got,) = qidao.compile(m)(*feeds.values())
    np.testing.assert_array_equal(got, want)
