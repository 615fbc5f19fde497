"""``qidao explain MODEL [--html out.html]``: what the compiler did to one model.

Without ``--html`` it prints the kernel table (launches, bytes, time, GFLOP/s, the
default schedule's choice) and the compile time per stage; with ``--html`` it
writes one self-contained page: the tg graph with its kernels, every stage and
what each pass changed, the kernel table and the compile times
(``qidao.compiler.report``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np


def cmd_explain(args: argparse.Namespace) -> int:
    from qidao.compiler.report import explain, render_html, summary_text

    model, inputs = _model(args.model, args.seed)
    options: dict[str, Any] = {"mode": args.mode, "fuse": not args.no_fuse}
    if args.threads is not None:
        options["threads"] = args.threads
    if args.algo != "auto":
        options["algo"] = args.algo
    if args.disable_pass:
        options["disable"] = args.disable_pass
    if args.runs < 0:
        raise ValueError(f"--runs {args.runs}: give 0 (no timing) or more")
    x = explain(model, name=args.model, inputs=inputs, runs=args.runs, **options)
    if args.html is None:
        print(summary_text(x))
        return 0
    path = Path(args.html)
    path.write_text(render_html(x), encoding="utf-8")
    print(f"wrote {path} ({path.stat().st_size:,} bytes)", file=sys.stderr)
    return 0


def _model(name: str, seed: int) -> tuple[Any, list[np.ndarray[Any, Any]] | None]:
    """The model a command line names and, for a built-in one, its inputs; an
    unknown name is a ``ValueError`` listing the built-in models."""
    from qidao.examples import EXAMPLES, model_argument, shaped_example

    try:
        model = model_argument(name)
    except SystemExit as err:  # neither a file nor a built-in model
        raise ValueError(str(err.code).removeprefix("qidao: ")) from None
    rng = np.random.default_rng(seed)
    if name in EXAMPLES:
        return model, EXAMPLES[name].inputs(rng)
    matmul = shaped_example(name) if not Path(name).exists() else None
    if matmul is not None:
        return model, matmul.inputs(rng)
    return model, None  # a file: random inputs of its shapes


def _names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated names, got {text!r}"
        )
    return names


def add_explain_parser(sub: Any) -> None:
    from qidao.compiler.pipeline import MODES
    from qidao.examples import EXAMPLES
    from qidao.passes.graph.select_conv_algo import MODES as ALGOS

    p = sub.add_parser(
        "explain",
        help="what the compiler did to a model: kernels, times, every pass "
        "(--html: one self-contained page with the graph drawn)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "model",
        help=f"a .onnx or .mlir file, or a built-in model: {', '.join(EXAMPLES)}, "
        "or matmulMxKxN (any shape)",
    )
    p.add_argument(
        "--html",
        metavar="OUT.html",
        help="write the page here instead of printing the summary",
    )
    p.add_argument(
        "--mode",
        default="graph",
        choices=MODES,
        help="graph: the optimized pipeline (default); eager: one kernel per tg op",
    )
    p.add_argument("--no-fuse", action="store_true", help="skip the fusion pass")
    p.add_argument("--threads", type=int, default=None, help="default: all cores")
    p.add_argument(
        "--algo",
        default="auto",
        choices=ALGOS,
        help="each convolution's algorithm (as qidao compile --algo)",
    )
    p.add_argument(
        "--disable-pass",
        type=_names,
        action="extend",
        metavar="PASS[,PASS]",
        help="skip these optional passes",
    )
    p.add_argument(
        "--runs",
        type=int,
        default=20,
        help="timed calls for the kernel times (default 20; 0: no timing)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    p.set_defaults(run=cmd_explain)
