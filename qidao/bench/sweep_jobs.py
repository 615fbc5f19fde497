"""The architecture sweep's worker: one job on one architecture, in its own process.

``qidao bench sweep`` (``qidao/bench/sweep.py``) runs ``python -m
qidao.bench.sweep_jobs`` workers through the runtime's worker harness
(``qidao/runtime/worker.py``), threads pinned to 1, one worker per job kind. A
request names the architecture, its class, the job and a folder the jobs of one
architecture share:

- ``export``: build the small model (``qidao/bench/sweep_configs.py``), run it in
  PyTorch eager (``eager.npy``, the inputs in ``inputs.npz``) and export it to
  ``model.onnx`` (``torch.onnx.export(dynamo=False)``, opset 17, as the zoo does);
- ``ort``: ONNX Runtime on ``model.onnx`` (a CPU session, one intra-op thread),
  its output against eager's, saved as ``ort.npy``;
- ``qidao``: ``qidao.compile(model.onnx, threads=1)``, its output against ONNX
  Runtime's (eager's where ONNX Runtime failed);
- ``torch``: ``torch.compile(model, backend=qidao_backend)`` on the model built
  again, its output against eager's in the same process, with the parts qidao
  compiled and the operators left to PyTorch.

A request's ``dtype`` (``float32``, the default, or ``bfloat16``) is the model's.
In bfloat16 the ``export`` job builds the float32 model, runs it (``fp32.npy``,
the float32 model's output: what bfloat16 costs, informational), converts it with
``.to(torch.bfloat16)`` and its floating inputs with it (token ids stay int64),
runs that in eager (``eager.npy``, the reference, saved widened to float32) and
exports the bfloat16 model; ``ort`` is not asked (its CPU provider has no bfloat16
``Gemm``/``MatMul``: ``ORT_BF16``); ``qidao`` compiles the bfloat16 ONNX file and
is checked against eager's bfloat16 output; ``torch`` compiles the bfloat16 module
and is checked against eager on it. Outputs are compared widened to float32,
within :func:`tolerance`: ``BF16_ULPS`` bfloat16 ulps of the reference's largest
magnitude. The answers also carry each output's error against the float32
model's (``error_vs_fp32``).

``ort`` and ``qidao`` are timed when the request asks (``time``): the zoo's timing
(``time_calls``: 3 warm-up calls, then at least 5 calls and ``MIN_TIME`` seconds),
the median. Every answer has a ``status`` (see :func:`run_job`), the first line of
an error in ``error`` and, for a refusal, its ``reasons``: one entry per
unsupported op type or operator, else the error's first line.
"""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qidao.bench.jobs import first_line
from qidao.bench.workloads import _onnxruntime_session, time_calls
from qidao.runtime.worker import serve

JOBS = ("export", "ort", "qidao", "torch")
"""What one worker process does for an architecture, in order."""

DTYPES = ("float32", "bfloat16")
"""The model dtypes the sweep runs (``--dtype``)."""

RTOL = 1e-3
"""A float32 result is ``wrong`` when its largest absolute error exceeds ``RTOL``
times the largest magnitude of the reference's output."""

BF16_ULPS = 4
"""A bfloat16 result is ``wrong`` when its largest absolute error exceeds this many
bfloat16 ulps at the reference's largest magnitude ``L`` (``4 * 2**(floor(log2 L)
- 7)``, between 2**-6 and 2**-5 of ``L``). qidao computes each op as PyTorch's
CPU kernels do (widened to float32, rounded to bfloat16 once), with the float32
sums in another order, so a sum near a bfloat16 tie rounds the other way and,
through LayerNorm and attention, moves its row: measured over the bfloat16 sweep
(``docs/benchmarks/index.md``), the torch.compile path is within 2 ulps. The ONNX
path is further off where the exporter decomposed an op into bfloat16 ops that
ONNX rounds one by one, which eager computes in float32 at once."""

ORT_BF16 = "ONNX Runtime's CPU provider has no bfloat16 Gemm/MatMul"
"""Why the ``ort`` job is skipped in bfloat16."""

MIN_TIME = 0.5
"""Seconds of timed calls per timed job (after the warm-up)."""

MAX_RUNS = 1000
"""At most this many timed calls per timed job."""


def relative_error(got: Any, want: Any) -> float:
    """The largest absolute difference over the largest magnitude of ``want`` (of
    its finite values; 1 where that is 0); equal values (NaN and NaN, an infinity
    and itself) differ by 0, a NaN against a number by infinity, and so do
    different shapes."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return np.inf
    with np.errstate(invalid="ignore"):
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        diff = np.where(same, 0.0, np.abs(got - want))
    worst = float(np.max(np.nan_to_num(diff, nan=np.inf), initial=0.0))
    scale = largest(want)
    return worst / (scale if scale > 0 else 1.0)


def tolerance(want: Any, dtype: str = "float32") -> float:
    """The largest :func:`relative_error` a result of a ``dtype`` model may have
    against ``want``: ``RTOL``, or in bfloat16 ``BF16_ULPS`` ulps at ``want``'s
    largest magnitude over that magnitude (as :func:`relative_error` divides:
    over 1 where it is 0)."""
    if dtype == "float32":
        return RTOL
    from qidao.bench.bf16_models import bf16_ulp

    want = np.asarray(want, dtype=np.float64)
    scale = largest(want)
    return BF16_ULPS * bf16_ulp(scale if scale > 0 else 1.0) / (scale or 1.0)


def largest(want: Any) -> float:
    """The largest magnitude of ``want``'s finite values (0 where none)."""
    want = np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(want[np.isfinite(want)]), initial=0.0))


def refusal_reasons(err: BaseException) -> list[str]:
    """What a refusal counts as in the summary: each unsupported ONNX op type or
    PyTorch operator (an error with ``ops``; an operator with the reason qidao
    gave), else the error's first line, less the node names of an ONNX shape
    inference error (``(op_type:Conv, node name: /a/Conv)``: ``(op_type:Conv)``),
    so that one cause counts as one reason across architectures."""
    ops = getattr(err, "ops", None)
    if isinstance(ops, dict) and ops:
        return sorted(str(op) for op in ops)
    text = re.sub(r", node name: [^)]*\)", ")", str(err))
    return [first_line(text, 120) or type(err).__name__]


def _describe(err: BaseException) -> str:
    message = first_line(str(err))
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def _failure(status: str, err: BaseException) -> dict[str, Any]:
    traceback.print_exc()
    return {"status": status, "error": _describe(err), "reasons": [_describe(err)]}


def _qidao_status(err: BaseException) -> str:
    """``refused`` for a ``QidaoError`` (a clear refusal), ``internal`` for any
    other exception (qidao's bug)."""
    from qidao.errors import QidaoError

    return "refused" if isinstance(err, QidaoError) else "internal"


def _timed(call: Any) -> dict[str, Any]:
    times = time_calls(call, MIN_TIME, MAX_RUNS)
    return {"median_us": float(np.median(times)) * 1e6, "runs": len(times)}


def _inputs(folder: Path, dtype: str = "float32") -> list[Any]:
    """The saved inputs (float32 and int64), the floating ones in ``dtype``
    (``ml_dtypes.bfloat16`` for bfloat16)."""
    with np.load(folder / "inputs.npz") as data:
        inputs = [data[f"arr_{k}"] for k in range(len(data.files))]
    if dtype == "float32":
        return inputs
    import ml_dtypes

    narrow = getattr(ml_dtypes, dtype)
    return [a.astype(narrow) if a.dtype.kind == "f" else a for a in inputs]


def to_dtype(net: Any, args: Sequence[Any], dtype: str) -> tuple[Any, list[Any]]:
    """``net`` converted with ``.to(dtype)`` and its floating ``args`` with it (the
    integer ones, token ids, kept); as they are for float32."""
    import torch

    if dtype == "float32":
        return net, list(args)
    narrow = getattr(torch, dtype)
    return net.to(narrow), [a.to(narrow) if a.is_floating_point() else a for a in args]


def _vs_fp32(got: Any, folder: Path) -> dict[str, Any]:
    """``got``'s error against the float32 model's output where the folder has it
    (a bfloat16 sweep's ``fp32.npy``)."""
    path = folder / "fp32.npy"
    return (
        {"error_vs_fp32": relative_error(got, np.load(path))} if path.exists() else {}
    )


def export_job(
    arch: str, model_class: str, folder: Path, dtype: str = "float32"
) -> dict[str, Any]:
    """Build, run in eager, export (see the module docstring); in bfloat16, eager on
    the float32 model too, and ``eager failed`` where PyTorch cannot run the
    bfloat16 one."""
    import warnings

    import torch

    from qidao.bench.sweep_configs import build
    from qidao.examples.models import ONNX_OPSET

    try:
        built = build(arch, model_class)
        args = list(map(torch.from_numpy, built.inputs))
        with torch.no_grad():
            want = built.net(*args).numpy()
    except Exception as err:
        return _failure("build failed", err)
    np.savez(folder / "inputs.npz", *built.inputs)
    net, out = built.net, {}
    if dtype != "float32":
        np.save(folder / "fp32.npy", want)
        try:
            net, args = to_dtype(net, args, dtype)
            with torch.no_grad():
                want = net(*args).float().numpy()
        except Exception as err:
            return _failure("eager failed", err)
        out = _vs_fp32(want, folder)
    np.save(folder / "eager.npy", want)
    out["scale"] = largest(want)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                net,
                tuple(args),
                str(folder / "model.onnx"),
                dynamo=False,
                opset_version=ONNX_OPSET,
                input_names=built.input_names,
                output_names=["y"],
            )
    except Exception as err:
        return _failure("export failed", err) | out
    shapes = [
        f"{n} {'x'.join(map(str, a.shape))} {str(a.dtype).removeprefix('torch.')}"
        for n, a in zip(built.input_names, args, strict=True)
    ]
    params = sum(p.numel() for p in net.parameters())
    return out | {"inputs": "; ".join(shapes), "output": built.output, "params": params}


def ort_job(folder: Path, timed: bool) -> dict[str, Any]:
    """ONNX Runtime at one thread, against eager; ``ort.npy`` its output. Where it
    differs from eager (status ``differs``) the model is no fair target: the
    summary leaves it out of what ONNX Runtime runs."""
    inputs = _inputs(folder)
    try:
        run = _onnxruntime_session(folder / "model.onnx", 1, inputs)
        (got,) = run()
    except Exception as err:
        return _failure("failed", err)
    np.save(folder / "ort.npy", got)
    error = relative_error(got, np.load(folder / "eager.npy"))
    if error > RTOL:  # a model that draws random numbers per call (ViT-MAE's mask)
        return {
            "status": "differs",
            "error_vs": error,
            "error": f"ONNX Runtime differs from eager by {error:.3g} x the "
            "largest |eager| (a model that draws random numbers at each call?)",
        }
    return {"error_vs": error, **(_timed(run) if timed else {})}


def qidao_job(folder: Path, timed: bool, dtype: str = "float32") -> dict[str, Any]:
    """qidao on the ONNX file at one thread, against ONNX Runtime (else eager)."""
    import qidao

    inputs = _inputs(folder, dtype)
    start = time.perf_counter()
    try:
        compiled = qidao.compile(str(folder / "model.onnx"), threads=1)
        (got,) = compiled(*inputs)  # a model compiled at its first call: here
    except Exception as err:
        return _failure(_qidao_status(err), err) | {"reasons": refusal_reasons(err)}
    compile_s = time.perf_counter() - start
    reference = folder / "ort.npy"
    if not reference.exists():
        reference = folder / "eager.npy"
    want = np.load(reference)
    error = relative_error(got, want)
    out = {
        "status": "ok" if error <= tolerance(want, dtype) else "wrong",
        "error_vs": error,
        "reference": reference.stem,
        "compile_s": compile_s,
        "kernels": compiled.stats["kernels"],
        **_vs_fp32(got, folder),
    }
    if out["status"] == "wrong":
        out["error"] = f"max error {error:.3g} x the largest |{reference.stem}|"
        return out
    return out | (_timed(lambda: compiled(*inputs)) if timed else {})


def torch_job(arch: str, model_class: str, dtype: str = "float32") -> dict[str, Any]:
    """``torch.compile`` with qidao at one thread, against eager in this process
    (in bfloat16 also the float32 model's output, ``error_vs_fp32``)."""
    import torch

    from qidao.bench.sweep_configs import build
    from qidao.dynamo_backend import qidao_backend

    built = build(arch, model_class)
    net, args = built.net, [torch.from_numpy(a) for a in built.inputs]
    graphs: list[Any] = []  # what the backend returned, one per dynamo graph

    def backend(gm: Any, example_inputs: Any) -> Any:
        graphs.append(qidao_backend(gm, example_inputs, threads=1))
        return graphs[-1]

    torch._dynamo.reset()
    extra: dict[str, Any] = {}
    with torch.no_grad():  # not inference_mode: qidao captures with torch.export
        if dtype != "float32":
            fp32 = net(*args).numpy()
            net, args = to_dtype(net, args, dtype)
        want = net(*args).float().numpy()
        try:
            got = torch.compile(net, backend=backend, dynamic=False)(*args)
        except Exception as err:
            return _failure("failed", err) | {"reasons": refusal_reasons(err)}
    got = got.float().numpy()
    if dtype != "float32":
        extra["error_vs_fp32"] = relative_error(got, fp32)
    parts, fallback = torch_parts(graphs)
    error = relative_error(got, want)
    status = "fell back" if fallback or parts == 0 else "ok"
    out = {
        "status": status if error <= tolerance(want, dtype) else "wrong",
        "error_vs": error,
        "scale": largest(want),
        "graphs": len(graphs),
        "parts": parts,
        "fallback": ";".join(fallback),
        "reasons": fallback if fallback else [],
        **extra,
    }
    if out["status"] == "wrong":
        out["error"] = f"max error {error:.3g} x the largest |eager|"
    elif parts == 0:
        out["error"] = "no graph reached qidao: everything ran in PyTorch"
    return out


def torch_parts(graphs: list[Any]) -> tuple[int, list[str]]:
    """The parts qidao compiled of dynamo's graphs (a whole graph is one), and the
    operators that ran in PyTorch, each with the reason qidao gave where it gave
    one (``aten.gather.default (an input is torch.int64 ...)``), sorted."""
    parts = 0
    fallback: set[str] = set()
    for graph in graphs:
        compiled = getattr(graph, "compiled", None)  # FrozenGraph.compiled
        if compiled is None:  # dynamic shapes, or refused: ran in PyTorch
            continue
        whole = getattr(compiled, "compiled", None)  # TorchCompiled.compiled
        parts += 1 if whole is not None else len(getattr(compiled, "parts", []))
        ops = getattr(compiled, "fallback_ops", {})
        fallback.update(str(op) for op in ops)
    return parts, sorted(fallback)


def run_job(request: dict[str, Any]) -> dict[str, Any]:
    """One job (``request["job"]``); the answer's ``status`` is ``ok`` or, by job:
    export ``build failed`` / ``eager failed`` (bfloat16) / ``export failed``; ort ``failed``; qidao ``refused``
    (a ``QidaoError``), ``internal`` (any other error) or ``wrong``; torch
    ``fell back`` (operators ran in PyTorch), ``failed`` or ``wrong``."""
    job = request["job"]
    folder = Path(request["folder"])
    dtype = str(request.get("dtype", "float32"))
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype '{dtype}'; the dtypes are {', '.join(DTYPES)}")
    if job == "export":
        return export_job(request["arch"], request["model_class"], folder, dtype)
    if job == "ort":
        return ort_job(folder, bool(request.get("time", True)))
    if job == "qidao":
        return qidao_job(folder, bool(request.get("time", True)), dtype)
    if job == "torch":
        return torch_job(request["arch"], request["model_class"], dtype)
    raise ValueError(f"unknown sweep job '{job}'; the jobs are {', '.join(JOBS)}")


WARM: dict[str, tuple[str, ...]] = {
    "export": ("torch", "transformers", "torch.onnx"),
    "ort": ("onnxruntime",),
    "qidao": ("qidao",),
    "torch": ("torch", "transformers", "qidao.dynamo_backend"),
}
"""What a worker of each job kind imports before it says it is ready."""


def warm(kind: str) -> None:
    """Import what ``kind``'s jobs need, and pin torch to one thread."""
    import importlib

    for module in WARM.get(kind, ()):
        importlib.import_module(module)
    if "torch" in WARM.get(kind, ()):
        import torch

        torch.set_num_threads(1)


if __name__ == "__main__":
    import sys

    serve(run_job, lambda: warm(sys.argv[1] if len(sys.argv) > 1 else ""))
