"""``qidao bench dynamic``: one compile for every sequence length against programs
specialized at each, side by side.

    qidao bench dynamic [gpt2 bert] [--threads 1]

Per model (the zoo's GPT-2 and BERT configs, ``qidao.bench.zoo_models``, with
position tables of ``MAX_SEQ`` so that every length in ``[1, MAX_SEQ]`` exists;
``transformers`` classes, random weights, seed 0), the parent exports the model
to ONNX with a dynamic sequence axis (``dim_param`` ``seq``), then one worker
process, pinned to the threads:

- compiles it once with ``dynamic={"seq": (1, MAX_SEQ)}`` (the *symbolic*
  program) and once per length of ``SIZES`` with ``dynamic={"seq": (n, n)}``
  (a program *specialized* at ``n``), each compile timed, with the compile cache
  off;
- checks the symbolic program against PyTorch eager at every length of
  ``CHECKED`` (``1`` and ``MAX_SEQ`` included), max absolute error;
- times, at each length of ``SIZES``, the two programs and PyTorch eager
  interleaved (``REPEATS`` rounds of one call each after warm-up), medians.

The table's ratio is symbolic over specialized time (1.00: as fast; the issue's
bar is 1.15); compile seconds say what one compile for every length costs
against one per length.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qidao.runtime.worker import run_once_data, serve

WORKER = "qidao.bench.dynamic"
MAX_SEQ = 2048
SIZES = (64, 128, 512)
CHECKED = (1, 7, 64, 128, 512, MAX_SEQ)
REPEATS = 15
TIMEOUT = 1800.0
MODELS = ("gpt2", "bert")
OUTPUT = {"gpt2": "logits", "bert": "last_hidden_state"}
POSITIONS = {"gpt2": "n_positions", "bert": "max_position_embeddings"}


@dataclass(frozen=True)
class DynamicRow:
    """One model: per length, the two programs' and PyTorch's medians (ms)."""

    model: str
    symbolic_ms: dict[int, float] = field(default_factory=dict)
    specialized_ms: dict[int, float] = field(default_factory=dict)
    torch_ms: dict[int, float] = field(default_factory=dict)
    errors: dict[int, float] = field(default_factory=dict)
    symbolic_compile_s: float = float("nan")
    specialized_compile_s: dict[int, float] = field(default_factory=dict)
    error: str = ""


def _network(model: str) -> Any:
    """The zoo's ``model`` (its config, position tables of ``MAX_SEQ``), eval."""
    import torch

    from qidao.bench.zoo_models import get_model

    zoo = get_model(model)
    config = zoo.config()
    setattr(config, POSITIONS[model], MAX_SEQ)
    torch.manual_seed(0)
    import transformers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = getattr(transformers, zoo.model_class)(config)

    class Main(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.net(input_ids=ids, return_dict=True)[OUTPUT[model]]
            return out

    return Main().eval()


def onnx_file(model: str) -> Path:
    """``model`` exported with a dynamic sequence axis (once, in the temp folder)."""
    import torch

    folder = Path(tempfile.gettempdir()) / "qidao-models"
    path = folder / f"{model}-dynamic-{MAX_SEQ}-torch{torch.__version__}.onnx"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _network(model),
                (torch.zeros((1, 16), dtype=torch.int64),),
                str(partial),
                dynamo=False,
                opset_version=17,
                input_names=["ids"],
                output_names=["y"],
                dynamic_axes={"ids": {1: "seq"}, "y": {1: "seq"}},
            )
        partial.replace(path)
    return path


def measure(request: dict[str, Any]) -> dict[str, Any]:
    """One model in this (worker) process."""
    os.environ["QIDAO_CACHE"] = "off"
    import numpy as np
    import torch

    import qidao

    model, path, threads = request["model"], request["path"], int(request["threads"])
    torch.set_num_threads(threads)
    net = _network(model)
    rng = np.random.default_rng(0)
    vocab = int(net.net.config.vocab_size)
    start = time.perf_counter()
    symbolic = qidao.compile(path, dynamic={"seq": (1, MAX_SEQ)}, threads=threads)
    symbolic_compile = time.perf_counter() - start
    errors: dict[int, float] = {}
    for n in CHECKED:
        ids = rng.integers(0, vocab, (1, n)).astype(np.int64)
        with torch.no_grad():
            ref = net(torch.from_numpy(ids)).numpy()
        errors[n] = float(np.abs(symbolic(ids)[0] - ref).max())
    out: dict[str, Any] = {
        "symbolic_compile_s": symbolic_compile,
        "errors": errors,
        "symbolic_ms": {},
        "specialized_ms": {},
        "torch_ms": {},
        "specialized_compile_s": {},
    }
    for n in SIZES:
        start = time.perf_counter()
        specialized = qidao.compile(path, dynamic={"seq": (n, n)}, threads=threads)
        out["specialized_compile_s"][n] = time.perf_counter() - start
        ids = rng.integers(0, vocab, (1, n)).astype(np.int64)
        tensor = torch.from_numpy(ids)

        def run_torch(t: torch.Tensor = tensor) -> None:
            with torch.no_grad():
                net(t)

        def run_symbolic(a: Any = ids) -> None:
            symbolic(a)

        def run_specialized(a: Any = ids, f: Any = specialized) -> None:
            f(a)

        calls = {
            "symbolic_ms": run_symbolic,
            "specialized_ms": run_specialized,
            "torch_ms": run_torch,
        }
        for call in calls.values():
            for _ in range(3):
                call()
        times: dict[str, list[float]] = {k: [] for k in calls}
        for _ in range(REPEATS):  # interleaved: the machine's drift hits all three
            for key, call in calls.items():
                start = time.perf_counter()
                call()
                times[key].append(time.perf_counter() - start)
        for key in calls:
            out[key][n] = statistics.median(times[key]) * 1e3
    return out


def run_dynamic(models: list[str], threads: int) -> list[DynamicRow]:
    """Each model in a fresh pinned worker."""
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        raise ValueError(
            f"unknown model(s) {', '.join(unknown)}; the models are {', '.join(MODELS)}"
        )
    from tqdm import tqdm

    rows = []
    for model in tqdm(models, desc="dynamic", unit="model"):
        request = {"model": model, "path": str(onnx_file(model)), "threads": threads}
        data = run_once_data(WORKER, request, threads=threads, timeout=TIMEOUT)
        if "error" in data:
            rows.append(DynamicRow(model, error=data["error"]))
            continue

        def ints(d: dict[str, float]) -> dict[int, float]:
            return {int(k): float(v) for k, v in d.items()}

        rows.append(
            DynamicRow(
                model,
                ints(data["symbolic_ms"]),
                ints(data["specialized_ms"]),
                ints(data["torch_ms"]),
                ints(data["errors"]),
                float(data["symbolic_compile_s"]),
                ints(data["specialized_compile_s"]),
            )
        )
    return rows


def format_table(rows: list[DynamicRow]) -> str:
    """Per model and length: specialized, symbolic, their ratio, PyTorch eager;
    then the compile seconds and the symbolic program's errors."""
    head = (
        f"{'model':<6} {'seq':>5} {'specialized ms':>14} {'symbolic ms':>11} "
        f"{'ratio':>6} {'torch ms':>9} {'symbolic / torch':>16}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        if r.error:
            lines.append(f"{r.model:<6} failed: {r.error}")
            continue
        for n in sorted(r.symbolic_ms):
            s, p, t = r.symbolic_ms[n], r.specialized_ms[n], r.torch_ms[n]
            lines.append(
                f"{r.model:<6} {n:>5} {p:>14.2f} {s:>11.2f} {s / p:>5.2f}x "
                f"{t:>9.2f} {t / s:>15.2f}x"
            )
    lines.append("")
    for r in rows:
        if r.error:
            continue
        each = ", ".join(f"{n}: {s:.1f} s" for n, s in r.specialized_compile_s.items())
        worst = max(r.errors.values())
        lines.append(
            f"{r.model}: one compile for seq 1..{MAX_SEQ} {r.symbolic_compile_s:.1f} s "
            f"(specialized, one per length: {each}); max |error| against PyTorch "
            f"at seq {', '.join(map(str, r.errors))}: {worst:.1e}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    serve(measure)
