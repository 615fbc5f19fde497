"""One ONNX node test case through ``qidao.compile``: run it, classify the outcome.

A case (``onnx.backend.test.case.node``) is a model, usually one node, with one or
more sets of input and expected output arrays. Its outcome is one of:

- ``pass``: it compiled on the CPU and every output matches the expected one (same
  shape, values within the case's ``rtol``/``atol``, NaN where NaN is expected);
- ``unsupported``: qidao refuses it up front with its clear error: an op type it
  does not implement (``op: Foo``), a graph input or output that is not a tensor
  of a dtype tg has (``dtype: ...``: ``load.DTYPES`` are taken, i.e. float16/32/64,
  the signed and unsigned integers of 8 to 64 bits, bool, bfloat16, the float8s
  but float8e8m0, float4e2m1 and the 2/4-bit integers; strings are not), or any
  other ``OnnxImportError`` (a
  constant-only op given a runtime tensor, an attribute not supported yet, ...);
- ``fail``: a bug: wrong numbers or shapes, an importer result that contradicts
  ONNX shape inference, or any other exception while compiling or running;
- ``deviates``: a case listed in ``DEVIATIONS``, whose expected outputs qidao
  does not match for a stated reason: ONNX's reference and ONNX Runtime disagree
  and qidao follows ONNX Runtime (and PyTorch), or the expected data carries
  float32 rounding noise above the case's tolerance. It counts as a deviation, not
  a pass, only when qidao's outputs match the listed oracle (ONNX Runtime on the
  same model and inputs, or ``exact``: ONNX's reference on the model computed in
  float64); else it is a fail.

float16 cases: outputs compare in float64 with the case's own tolerances (mostly
``rtol=1e-3, atol=1e-7``), and one float16 ulp is 2^-11 to 2^-10 relative, so a
float16 result passes within about one ulp of the reference's. ONNX's references
compute float16 with NumPy's float16 ufuncs, each op rounded to float16; qidao's
elementwise ops do the same (float32 inside, rounded per op), and a float16
softmax is that formula in float16 ops too (``Graph.softmax``): one rounding at
the end instead would put Attention's outputs two ulps off.

``reason`` says why in one line, without the node name (every case names its node
differently, and the table groups reasons per op).
"""

from __future__ import annotations

import re
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from qidao.frontend.onnx.load import DTYPES

PASS, FAIL, UNSUPPORTED, DEVIATES = "pass", "fail", "unsupported", "deviates"
STATUSES = (PASS, FAIL, UNSUPPORTED, DEVIATES)

_ALIGN_CORNERS = (
    "align_corners with scales whose output length L * scale is not an integer: "
    "ONNX's reference divides by L * scale - 1, ONNX Runtime and PyTorch by the "
    "integer output length - 1 (docs/onnx.md)"
)

_FFT_NOISE = (
    "the expected imaginary parts that are exactly 0 hold NumPy's complex64 FFT "
    "noise (1.9e-7), above the case's atol of 1e-7"
)

ORT, EXACT = "ONNX Runtime", "the exact result"

DEVIATIONS: dict[str, tuple[str, str]] = {
    "test_resize_downsample_scales_cubic_align_corners": (ORT, _ALIGN_CORNERS),
    "test_resize_downsample_scales_linear_align_corners": (ORT, _ALIGN_CORNERS),
    "test_dft_inverse": (EXACT, _FFT_NOISE),
    "test_dft_inverse_opset19": (EXACT, _FFT_NOISE),
}
"""Cases whose expected outputs qidao does not match on purpose: the oracle it
matches instead (``ORT`` or ``EXACT``), and why."""


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one node test case."""

    op: str
    case: str
    status: str
    reason: str = ""
    seconds: float = 0.0


EXPANDED = " (expanded)"
"""Suffix of the operator of an ``_expanded`` case: the op's function body (other,
simpler ops), which says nothing about the op's own support."""


def case_ops(cases: list[Any]) -> dict[str, str]:
    """Case name -> the operator it tests: the op type of a one-node case (or of a
    case whose nodes all have one type); ``Op (expanded)`` for an ``_expanded`` case
    (the function body of ``Op``); otherwise the last node's op type."""
    ops: dict[str, str] = {}
    for case in cases:
        nodes = case.model.graph.node
        if "_expanded" not in case.name and len({n.op_type for n in nodes}) == 1:
            ops[case.name] = str(nodes[0].op_type)
    for case in cases:
        if case.name in ops:
            continue
        nodes = case.model.graph.node
        base = re.sub(r"_expanded.*$", "", case.name)
        if base != case.name and base in ops:
            ops[case.name] = ops[base] + EXPANDED
        else:
            ops[case.name] = str(nodes[-1].op_type) if nodes else "?"
    return ops


def run_case(case: Any, op: str) -> CaseResult:
    """Compile ``case.model`` with ``qidao.compile`` and check every data set."""
    start = time.perf_counter()
    status, reason = _run(case)
    return CaseResult(op, case.name, status, reason, time.perf_counter() - start)


def _run(case: Any) -> tuple[str, str]:
    refused = dtype_refusal(case.model)
    if refused:
        return UNSUPPORTED, refused
    import qidao

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = qidao.compile(case.model)
            for inputs, expected in case.data_sets:
                with np.errstate(all="ignore"):  # rank-0 inputs come as NumPy scalars
                    got = compiled(*(_array(a) for a in inputs))
                expected = [_array(e) for e in expected]
                mismatch = compare(got, expected, case.rtol, case.atol)
                if mismatch and case.name in DEVIATIONS:
                    return _deviation(case, inputs, got, mismatch)
                if mismatch:
                    return FAIL, mismatch
    except Exception as e:
        return classify_error(e)
    return PASS, ""


def _deviation(
    case: Any, inputs: Any, got: list[Any], mismatch: str
) -> tuple[str, str]:
    """A listed deviation: ``deviates`` if ``got`` matches the listed oracle's
    outputs on the same inputs, else ``fail`` with the reference's mismatch."""
    oracle, reason = DEVIATIONS[case.name]
    arrays = [_array(a) for a in inputs]
    if oracle == ORT:
        expected = _onnxruntime(case.model, arrays)
    else:
        expected = _float64_reference(case.model, arrays)
    if compare(got, expected, case.rtol, case.atol):
        return FAIL, mismatch
    return DEVIATES, f"matches {oracle}: {reason}"


def _onnxruntime(model: Any, arrays: list[Any]) -> list[Any]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options)
    names = [i.name for i in session.get_inputs()]
    return list(session.run(None, dict(zip(names, arrays, strict=True))))


def _float64_reference(model: Any, arrays: list[Any]) -> list[Any]:
    """ONNX's reference on ``model`` with its float32 inputs and outputs made
    float64 (the exact result, to float64 rounding), cast back to float32."""
    from onnx.reference import ReferenceEvaluator

    wide = onnx.ModelProto()
    wide.CopyFrom(model)
    del wide.graph.value_info[:]
    for info in [*wide.graph.input, *wide.graph.output]:
        if info.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            info.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    feeds = {
        i.name: a.astype(np.float64) if a.dtype == np.float32 else a
        for i, a in zip(wide.graph.input, arrays, strict=False)
    }
    results = ReferenceEvaluator(wide).run(None, feeds)
    return [np.asarray(r).astype(np.float32) for r in results]


def _array(value: Any) -> Any:
    """A case's input or expected output as an array (some cases store
    ``TensorProto``s)."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return np.asarray(value)


def dtype_refusal(model: Any) -> str:
    """Why the model's graph inputs or outputs are out of reach (not tensors, or of
    a dtype tg does not have), or ""."""
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    for kind, infos in (("input", inputs), ("output", model.graph.output)):
        for info in infos:
            if not info.type.HasField("tensor_type"):
                what = info.type.WhichOneof("value") or "untyped"
                return f"dtype: {what} {kind} (only tensors)"
            elem_type = info.type.tensor_type.elem_type
            if elem_type not in DTYPES:
                name = onnx.TensorProto.DataType.Name(elem_type)
                return f"dtype: {name} {kind}"
    return ""


def compare(got: list[Any], expected: list[Any], rtol: float, atol: float) -> str:
    """ "" if ``got`` matches ``expected`` (like ``np.testing.assert_allclose``),
    else what differs first: count, shape or the worst value, with its index."""
    if len(got) != len(expected):
        return f"wrong output count: {len(got)}, expected {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        g, e = np.asarray(g), np.asarray(e)
        if g.shape != e.shape:
            return f"output #{k}: shape {list(g.shape)}, expected {list(e.shape)}"
        e64, g64 = e.astype(np.float64), g.astype(np.float64)
        close = np.isclose(g64, e64, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            error = np.where(close, 0.0, np.abs(g64 - e64))
            error = np.where(np.isnan(error), np.inf, error)
            index = np.unravel_index(int(np.argmax(error)), e.shape)
            return (
                f"output #{k}: wrong values at {list(map(int, index))}: got "
                f"{g64[index]:.6g}, expected {e64[index]:.6g} "
                f"({int((~close).sum())} of {close.size} differ)"
            )
    return ""


def classify_error(error: Exception) -> tuple[str, str]:
    """(status, reason) for an exception raised while compiling or running."""
    from qidao.frontend.errors import OnnxImportError, UnsupportedOpsError

    if isinstance(error, UnsupportedOpsError):
        return UNSUPPORTED, "op: " + ", ".join(sorted(error.ops))
    message = _first_line(str(error))
    if isinstance(error, OnnxImportError):
        message = re.sub(r"^\w+ node '[^']*': ", "", message)
        if "is supported only on constant inputs" in message:
            message = "constant-only op given a runtime tensor input"
        if "qidao computed" in message:  # contradicts ONNX shape inference: a bug
            return FAIL, message
        return UNSUPPORTED, message
    frames = traceback.extract_tb(error.__traceback__)
    origin = ""
    if frames:  # where it was raised: file and line
        origin = f" ({frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno})"
    return FAIL, f"{type(error).__name__}: {message}{origin}"


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."
