"""``qidao bisect MODEL``: the first pass, kernel or schedule primitive that makes a
model's result wrong (``qidao.compiler.bisect``).

    qidao bisect model.onnx                       # the default schedules
    qidao bisect model.onnx --schedule trace.py   # a schedule of yours (a trace)
    qidao bisect model.onnx --records tune.jsonl  # tuned schedules

Exit status: 0 when every step agrees with NumPy's evaluator of tg, 1 when a step
is to blame (or the outputs differ), 2 for a bad argument.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np


def add_bisect_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bisect",
        help="find the first graph pass, kernel or schedule primitive whose result "
        "differs from NumPy's evaluator of tg",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "model",
        help="a .onnx or .mlir file, or a built-in model (qidao compile --help)",
    )
    p.add_argument("--inputs", help=".npz with one array per input (default random)")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    p.add_argument("--threads", type=int, default=1, help="threads (default 1)")
    p.add_argument("--mode", choices=("graph", "eager"), default="graph")
    p.add_argument(
        "--schedule",
        metavar="FILE",
        help="a schedule trace (Python `s.split(...)` lines or a qidao-opt pipeline, "
        "as compiled.stats['schedule'] prints) instead of the default schedules",
    )
    p.add_argument("--records", metavar="FILE", help="tuned records (qidao tune)")
    p.add_argument(
        "--disable-pass",
        metavar="PASS[,PASS]",
        help="compile without these optional passes",
    )
    p.add_argument("--no-fuse", action="store_true", help="skip the fusion pass")
    p.add_argument(
        "--rtol", type=float, default=1e-3, help="relative tolerance (default 1e-3)"
    )
    p.add_argument(
        "--atol",
        type=float,
        default=1e-4,
        help="absolute tolerance, times the tensor's largest |value| (default 1e-4)",
    )
    p.set_defaults(run=cmd_bisect)


def cmd_bisect(args: argparse.Namespace) -> int:
    from qidao.compiler.bisect import bisect
    from qidao.compiler.host import signature
    from qidao.compiler.models import load_model
    from qidao.examples import EXAMPLES, model_argument

    model = model_argument(args.model)
    options: dict[str, Any] = {"fuse": not args.no_fuse}
    if args.schedule:
        options["schedule"] = Path(args.schedule).read_text()
    if args.records:
        options["records"] = args.records
    if args.disable_pass:
        options["disable"] = [n.strip() for n in args.disable_pass.split(",") if n]
    inputs: list[np.ndarray[Any, Any]] | None = None
    if args.inputs:
        from qidao.tools.inputs import load_inputs

        names = [spec.name for spec in signature(load_model(model))[0]]
        inputs = load_inputs(args.inputs, names)
    elif args.model in EXAMPLES:  # inputs in the ranges the model is made for
        inputs = EXAMPLES[args.model].inputs(np.random.default_rng(args.seed))
    report = bisect(
        model,
        inputs,
        seed=args.seed,
        threads=args.threads,
        mode=args.mode,
        rtol=args.rtol,
        atol=args.atol,
        name=args.model,
        **options,
    )
    print(report, end="")
    return 0 if report.culprit is None and report.outputs_wrong is None else 1
