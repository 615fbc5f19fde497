"""``qidao``: the user's jobs (tour, compile, run, bench).

    qidao tour                      # the book's relu(x·w + b): every level, run, timing
    qidao compile MODEL --emit affine
    qidao compile MODEL --stats     # kernels, launches, buffers, bytes: eager vs graph
    qidao compile MODEL --mode eager --emit affine
    qidao compile MODEL --target cuda --emit cuda   # CUDA C + launch plan
    qidao run MODEL --inputs in.npz --save out.npz
    qidao profile MODEL --threads 1 # the median time of every kernel, largest first
    qidao bench chain call16        # medians vs PyTorch eager, each in its own process
    qidao bench sweep --only bert   # transformers architectures: ORT, qidao, torch.compile
    qidao bench quant cnn bert      # int8 and fp32, qidao vs ONNX Runtime, 1 thread
    qidao bench bf16 mlp bert gpt2  # bfloat16 and fp32, qidao vs PyTorch eager
    qidao bench-cuda                # the GPU workloads vs PyTorch eager on a CUDA GPU
    qidao tune matmul1024 --trials 64 --records tune.jsonl   # search schedules
    qidao conformance onnx          # ONNX's node tests: pass/fail/unsupported per op
    qidao zoo resnet50 vit bert     # transformers models vs ONNX Runtime and PyTorch
    qidao cache info                # the compile cache: where, entries, size (or clear)
    qidao fuzz --minutes 30         # hostile inputs in worker processes: counts, failures
    qidao explain MODEL --html x.html   # one page: graph, kernels, each pass's diff, times
    qidao bisect MODEL              # the first pass, kernel or primitive that is wrong
    qidao pipeline --write docs/pipeline.md   # the stage tables from the pipeline data

MODEL is a ``.onnx`` or ``.mlir`` file or the name of a built-in model
(``qidao compile --help`` lists them; default ``book``).

    qidao compile MODEL --print-ir-after-change --print-ir-diff   # what each pass did
    qidao compile MODEL --disable-pass fuse,cse --emit affine     # without those passes
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qidao.compiler.pipeline import ALL_STAGE_NAMES, MODES, TARGETS, check_stage
from qidao.examples import model_argument
from qidao.tools.bench_cuda import add_bench_cuda_parser
from qidao.tools.bf16_command import cmd_bench_bf16
from qidao.tools.bisect_command import add_bisect_parser
from qidao.tools.cache_command import add_cache_parser
from qidao.tools.conformance_command import add_conformance_parser
from qidao.tools.explain_command import add_explain_parser
from qidao.tools.fuzz import add_fuzz_parser
from qidao.tools.gguf_command import add_gguf_parser
from qidao.tools.inputs import load_inputs
from qidao.tools.pipeline_command import add_pipeline_parser
from qidao.tools.quant_command import cmd_bench_quant
from qidao.tools.sweep_command import add_sweep_arguments, cmd_bench_sweep
from qidao.tools.tune import add_tune_parser

DEFAULT_MODEL = "book"


def _checkpoint_value(text: str) -> int | str | dict[str, int]:
    """``--checkpoint``: ``4``, ``sqrt`` or ``budget=1000000`` (checked by
    ``qidao.compile``)."""
    if text.isdigit():
        return int(text)
    name, _, number = text.partition("=")
    if name == "budget" and number.isdigit():
        return {"budget": int(number)}
    if text == "sqrt":
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r}: expected K (a positive integer), sqrt or budget=BYTES"
    )


def _compile(args: argparse.Namespace, **options: Any) -> Any:
    """``qidao.compile`` of the command's MODEL with its debug and pass flags."""
    import qidao

    disable = getattr(args, "disable_pass", None)
    if disable:
        options["disable"] = disable
    return qidao.compile(model_argument(args.model), debug=_debug(args), **options)


def _debug(args: argparse.Namespace) -> Any:
    """``--debug N`` and the ``--print-ir-*`` flags as ``qidao.compile``'s debug."""
    from qidao.compiler.print_ir import PrintIR

    config = PrintIR(
        after_change=bool(getattr(args, "print_ir_after_change", False)),
        diff=bool(getattr(args, "print_ir_diff", False)),
        after_all=bool(getattr(args, "print_ir_after_all", False)),
        before=tuple(getattr(args, "print_ir_before", None) or ()),
        after=tuple(getattr(args, "print_ir_after", None) or ()),
        level=args.debug or 0,
    )
    if config == PrintIR(level=config.level):
        return args.debug
    if config.diff and not (config.after_change or config.after_all or config.after):
        raise ValueError(
            "--print-ir-diff prints the IR a pass changed as a diff: give it with "
            "--print-ir-after-change, --print-ir-after=PASS or --print-ir-after-all"
        )
    return config


def cmd_compile(args: argparse.Namespace) -> int:
    if args.stats:
        from qidao.tools.explain import stats_table

        grad = {"grad": args.grad} if args.grad else {}
        if args.checkpoint is not None:
            grad["checkpoint"] = args.checkpoint
        graph = _compile(
            args,
            mode="graph",
            fuse=not args.no_fuse,
            algo=args.algo,
            **grad,
        )
        eager = _compile(args, mode="eager", **grad)
        print(stats_table(graph, eager))
        return 0
    check_stage(args.emit, args.target)  # before any work: llvm is not a cuda stage
    compiled = _compile(
        args,
        mode=args.mode,
        fuse=not args.no_fuse,
        algo=args.algo,
        checks=args.checks,
        **({"target": args.target} if args.target != "cpu" else {}),
        **({"grad": args.grad} if args.grad else {}),
        **({"checkpoint": args.checkpoint} if args.checkpoint is not None else {}),
    )
    from qidao.frontend.onnx.specialize import Specialized

    if isinstance(compiled, Specialized):
        raise ValueError(
            f"{args.model} is compiled at its first call ({compiled.why()}); run it "
            "with `qidao run MODEL --inputs FILE.npz` "
            f"(arrays named {', '.join(compiled.names)})"
        )
    text = compiled.ir(args.emit)
    if args.output:
        Path(args.output).write_text(text.rstrip("\n") + "\n")
    else:
        print(text)
    return 0


def _input_names(compiled: Any) -> list[str]:
    """The graph inputs a call takes, in order (a model compiled at its first
    call, ``Specialized``, knows them before it is compiled)."""
    from qidao.frontend.onnx.specialize import Specialized

    if isinstance(compiled, Specialized):
        return list(compiled.names)
    return [s.name for s in compiled.inputs]


def _inputs(args: argparse.Namespace, compiled: Any) -> list[np.ndarray[Any, Any]]:
    from qidao.examples import EXAMPLES, shaped_example
    from qidao.frontend.onnx.specialize import Specialized

    if args.inputs:
        return load_inputs(args.inputs, _input_names(compiled))
    rng = np.random.default_rng(args.seed)
    if isinstance(compiled, Specialized):
        specs = compiled.static_inputs()
        if specs is None:
            raise ValueError(
                f"{args.model} is compiled at its first call ({compiled.why()}), and "
                "its inputs are not all float tensors of static shape, so random "
                "inputs cannot be made up; give them with --inputs FILE.npz (arrays "
                f"named {', '.join(compiled.names)})"
            )
        return [rng.standard_normal(shape).astype(dtype) for _, shape, dtype in specs]
    if args.model in EXAMPLES:
        return EXAMPLES[args.model].inputs(rng)
    matmul = shaped_example(args.model) if not Path(args.model).exists() else None
    if matmul is not None:
        return matmul.inputs(rng)
    return [rng.standard_normal(s.shape).astype(s.dtype) for s in compiled.inputs]


def cmd_run(args: argparse.Namespace) -> int:
    compiled = _compile(args, mode=args.mode, algo=args.algo, checks=args.checks)
    inputs = _inputs(args, compiled)
    outputs = compiled(*inputs)  # a Specialized model compiles here
    for spec, out in zip(compiled.outputs, outputs, strict=True):
        print(f"{spec.name}: shape {list(out.shape)} {out.dtype}")
        print(np.array2string(out, threshold=20, precision=5))
    if args.save:
        np.savez(
            args.save,
            **{s.name: o for s, o in zip(compiled.outputs, outputs, strict=True)},
        )
        print(f"saved to {args.save}")
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    from qidao import Compiled
    from qidao.frontend.onnx.specialize import Specialized

    compiled = _compile(args, profile=True, threads=args.threads, algo=args.algo)
    if not isinstance(compiled, Compiled):
        why = compiled.why() if isinstance(compiled, Specialized) else "a wrapper"
        raise SystemExit(
            f"qidao profile: {args.model} is compiled at its first call ({why}): "
            "profile a model compiled ahead"
        )
    inputs = _inputs(args, compiled)
    print(
        f"qidao profile: {args.model}, {compiled.stats['kernels']} kernels, "
        f"{compiled.stats['threads']} thread(s)"
    )
    print(compiled.profile(*inputs, runs=args.runs))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from qidao.bench.workloads import BACKENDS, check_backend, format_table, run_bench
    from qidao.examples import EXAMPLES, shaped_example

    if "ladder" in args.workloads:  # the special workload: the schedule ladder
        return cmd_bench_ladder(args)
    if args.rung:
        raise ValueError(
            "--rung picks rows of the ladder: qidao bench ladder --rung ..."
        )
    if args.workloads[:1] == ["train"]:  # training steps: qidao bench train [mlp ...]
        return cmd_bench_train(args)
    if args.workloads[:1] == ["checkpoint"]:  # qidao bench checkpoint [mlp resnet]
        return cmd_bench_checkpoint(args)
    if args.workloads[:1] == ["sweep"]:  # qidao bench sweep: qidao/bench/sweep.py
        return cmd_bench_sweep(args)
    if args.workloads[:1] == ["quant"]:  # qidao bench quant: qidao/bench/quant.py
        return cmd_bench_quant(args)
    if args.workloads[:1] == ["bf16"]:  # qidao bench bf16: qidao/bench/bf16.py
        return cmd_bench_bf16(args)
    if args.workloads[:1] == ["generate"]:  # qidao/bench/generate.py
        from qidao.tools.generate_command import cmd_bench_generate

        return cmd_bench_generate(args)
    if args.workloads[:1] == ["dynamic"]:  # qidao/bench/dynamic.py
        from qidao.tools.dynamic_command import cmd_bench_dynamic

        return cmd_bench_dynamic(args)
    unknown = [
        w for w in args.workloads if w not in EXAMPLES and shaped_example(w) is None
    ]
    if unknown:
        raise ValueError(
            f"unknown workload(s) {', '.join(unknown)}; the workloads are: "
            f"{', '.join(EXAMPLES)}, and matmulMxKxN, q8_0_MxKxN, q4_0_MxKxN and "
            "q4_k_MxKxN of any shape"
        )
    for backend in args.backends or ():
        check_backend(backend)
    results = run_bench(
        args.workloads or ["chain", "call16"],
        backends=args.backends or BACKENDS,
        threads=args.threads,
        min_time=args.min_time,
        csv_path=Path(args.csv or "bench-results/bench.csv"),
        plot_path=_plot_path(args, "bench-results/bench.png"),
    )
    print(format_table(results))
    print(f"\nCSV: {args.csv}" + (f"; plot: {args.plot}" if args.plot else ""))
    return 1 if any(r.error for r in results) else 0


def cmd_zoo(args: argparse.Namespace) -> int:
    from qidao.bench import zoo
    from qidao.bench.zoo_models import DEFAULT_MODELS, ZOO

    if args.list:
        for name, model in ZOO.items():
            extra = "" if model.default else "  (not in the default list)"
            print(f"{name:<14} {model.summary}{extra}")
        return 0
    rows = zoo.run_zoo(
        args.models or DEFAULT_MODELS,
        threads=args.threads,
        paths=[p.strip() for p in args.paths.split(",") if p.strip()],
        min_time=args.min_time,
        timeout=args.timeout,
        csv_path=Path(args.csv),
        plot_path=_plot_path(args, "bench-results/zoo.png"),
        rounds=args.rounds,
    )
    print(zoo.format_table(rows))
    print(f"\nCSV: {args.csv}" + (f"; plot: {args.plot}" if args.plot else ""))
    return 1 if zoo.failed_models(rows) else 0


def _plot_path(args: argparse.Namespace, default: str) -> Path | None:
    """``--plot PATH``, ``--plot`` alone (``default``), or no plot."""
    if args.plot is None:
        return None
    args.plot = args.plot or default
    return Path(args.plot)


def cmd_bench_train(args: argparse.Namespace) -> int:
    from qidao.bench.train import (
        format_table,
        measure_peak_gflops,
        run_train_bench,
    )
    from qidao.bench.train_models import TRAIN_MODELS

    if args.backends:
        raise ValueError("'train' compares qidao with PyTorch eager: no --backends")
    args.csv = args.csv or "bench-results/train.csv"
    results = run_train_bench(
        args.workloads[1:] or list(TRAIN_MODELS),
        threads=args.threads,
        min_time=args.min_time,
        csv_path=Path(args.csv),
        plot_path=_plot_path(args, "bench-results/train.png"),
        tiny=args.tiny,
    )
    peak = measure_peak_gflops(args.threads)
    print(f"one core's FMA peak on this machine: {peak:.0f} GFLOP/s\n")
    print(format_table(results))
    print(f"\nCSV: {args.csv}" + (f"; plot: {args.plot}" if args.plot else ""))
    return 1 if any(r.error for r in results) else 0


def cmd_bench_checkpoint(args: argparse.Namespace) -> int:
    from qidao.bench.checkpoint import (
        WORKLOADS,
        format_table,
        run_checkpoint_bench,
    )
    from qidao.bench.train import measure_peak_gflops

    if args.backends:
        raise ValueError(
            "'checkpoint' compares qidao with torch.utils.checkpoint: no --backends"
        )
    args.csv = args.csv or "bench-results/checkpoint.csv"
    points = run_checkpoint_bench(
        args.workloads[1:] or list(WORKLOADS),
        ks=args.k,
        threads=args.threads,
        min_time=args.min_time,
        csv_path=Path(args.csv),
        plot_path=_plot_path(args, "bench-results/checkpoint.png"),
        tiny=args.tiny,
    )
    peak = measure_peak_gflops(args.threads)
    print(f"one core's FMA peak on this machine: {peak:.0f} GFLOP/s\n")
    print(format_table(points))
    print(f"\nCSV: {args.csv}" + (f"; plot: {args.plot}" if args.plot else ""))
    return 1 if any(p.error for p in points) else 0


def cmd_bench_ladder(args: argparse.Namespace) -> int:
    from qidao.bench.ladder import format_table, run_ladder

    if args.workloads != ["ladder"] or args.backends:
        raise ValueError("'ladder' runs alone: qidao bench ladder [--size N] ...")
    args.csv = args.csv or "bench-results/ladder.csv"
    rows = run_ladder(
        n=args.size,
        threads=args.threads,
        min_time=args.min_time,
        csv_path=Path(args.csv),
        plot_path=_plot_path(args, "bench-results/ladder.png"),
        records=Path(args.records) if args.records else None,
        tune_trials=args.tune_trials,
        only=args.rung,
    )
    print(format_table(rows))
    print(f"\nCSV: {args.csv}" + (f"; plot: {args.plot}" if args.plot else ""))
    return 1 if any(r.error for r in rows) else 0


def cmd_tour(args: argparse.Namespace) -> int:
    from qidao.tools.tour import tour

    return tour(
        args.model, args.stages.split(","), bench=not args.no_bench, debug=args.debug
    )


def _version() -> str:
    from importlib.metadata import version

    import qidao

    return f"qidao {qidao.__version__} (xdsl {version('xdsl')}, llvmlite {version('llvmlite')})"


def _mode_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mode",
        default="graph",
        choices=MODES,
        help="graph: the optimized pipeline (default); eager: one kernel per tg op",
    )


def _add_tour(sub: Any) -> None:
    p = sub.add_parser("tour", help="print a model at every level, run it, time it")
    _model_argument(p)
    p.add_argument(
        "--stages", default="tg,affine,llvm", help="comma-separated stages to print"
    )
    p.add_argument(
        "--no-bench", action="store_true", help="skip the timing against PyTorch"
    )
    p.set_defaults(run=cmd_tour)


def _algo_argument(p: argparse.ArgumentParser) -> None:
    from qidao.passes.graph.select_conv_algo import MODES

    p.add_argument(
        "--algo",
        default="auto",
        choices=MODES,
        help="each convolution's algorithm: auto (the rule), benchmark (time every "
        "applicable one on this CPU, keep the fastest) or one algorithm wherever it "
        "applies (default: auto)",
    )


def _pass_arguments(p: argparse.ArgumentParser) -> None:
    """The flags that print the IR around passes or skip one (MLIR's names)."""
    g = p.add_argument_group(
        "passes", "see what each pass does (printed to stderr), or skip one"
    )
    g.add_argument(
        "--print-ir-after-change",
        action="store_true",
        help="print the IR after every pass that changed it",
    )
    g.add_argument(
        "--print-ir-diff",
        action="store_true",
        help="print a changed IR as a unified diff against the IR before the pass",
    )
    g.add_argument(
        "--print-ir-before",
        type=_names_list,
        action="extend",
        metavar="PASS[,PASS]",
        help="print the IR before these passes (repeatable; 'schedule': before the "
        "schedule)",
    )
    g.add_argument(
        "--print-ir-after",
        type=_names_list,
        action="extend",
        metavar="PASS[,PASS]",
        help="print the IR after these passes, changed or not (repeatable)",
    )
    g.add_argument(
        "--print-ir-after-all", action="store_true", help="the IR after every pass"
    )
    g.add_argument(
        "--disable-pass",
        type=_names_list,
        action="extend",
        metavar="PASS[,PASS]",
        help="skip these optional passes (a pass the program needs is refused, "
        "saying why)",
    )


def _model_argument(p: argparse.ArgumentParser) -> None:
    from qidao.examples import EXAMPLES

    p.add_argument(
        "model",
        nargs="?",
        default=DEFAULT_MODEL,
        help=f"a .onnx or .mlir file, or a built-in model: {', '.join(EXAMPLES)}, "
        f"or matmulMxKxN (any shape); default {DEFAULT_MODEL}",
    )


def _checks_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--checks",
        action="store_true",
        help="check gather indices and integer divisors at run time and fail like "
        "ONNX Runtime (qidao.CheckError) instead of clamping / giving 0",
    )


def _add_compile(sub: Any) -> None:
    p = sub.add_parser("compile", help="compile a model and print one stage")
    _model_argument(p)
    p.add_argument(
        "--emit",
        default="tg",
        choices=ALL_STAGE_NAMES,
        help="the stage to print, one of the target's (cuda: the CUDA C and launch "
        "plan, with --target cuda)",
    )
    p.add_argument(
        "--target",
        default="cpu",
        choices=TARGETS,
        help="cpu (default) or cuda: CUDA C for the loops the default GPU schedule "
        "(or a given one) binds to blockIdx/threadIdx (no GPU needed to print it)",
    )
    p.add_argument(
        "--stats",
        action="store_true",
        help="print the kernels, launches, buffers and bytes of eager and graph mode "
        "side by side, and the compile time per stage, instead",
    )
    _mode_argument(p)
    p.add_argument("--no-fuse", action="store_true", help="skip the fusion pass")
    p.add_argument(
        "--grad",
        type=_names_list,
        default=None,
        metavar="W,B",
        help="append the gradient of sum(output 0) w.r.t. these inputs or ONNX "
        "initializers (the autodiff pass): forward and backward in one program",
    )
    p.add_argument(
        "--checkpoint",
        type=_checkpoint_value,
        default=None,
        metavar="K|sqrt|budget=BYTES",
        help="with --grad: keep every K-th segment's activation (or sqrt: K = "
        "sqrt(N); budget=BYTES: the least recomputation under that peak) and "
        "recompute the rest in the backward (the checkpoint pass)",
    )
    _algo_argument(p)
    _checks_argument(p)
    p.add_argument("-o", "--output", help="write the stage to this file")
    _pass_arguments(p)
    p.set_defaults(run=cmd_compile)


def _names_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated input names (w,b), got {text!r}"
        )
    return names


def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", help="compile and run a model on given or random inputs")
    _model_argument(p)
    p.add_argument("--inputs", help=".npz with one array per graph input name")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    p.add_argument("--save", help="write the outputs to this .npz")
    _mode_argument(p)
    _algo_argument(p)
    _checks_argument(p)
    _pass_arguments(p)
    p.set_defaults(run=cmd_run)


def _add_profile(sub: Any) -> None:
    p = sub.add_parser("profile", help="time every kernel of a model (median)")
    _model_argument(p)
    p.add_argument("--inputs", help=".npz with one array per graph input name")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    p.add_argument("--threads", type=int, default=None, help="default: all cores")
    p.add_argument("--runs", type=int, default=100, help="timed calls (default 100)")
    _algo_argument(p)
    p.set_defaults(run=cmd_profile)


def _add_bench(sub: Any) -> None:
    p = sub.add_parser("bench", help="time built-in workloads against PyTorch eager")
    p.add_argument(
        "workloads",
        nargs="*",
        help="built-in models (default: chain call16), or 'ladder': matmul N×N up "
        "the schedule ladder (naive, split, reorder, vectorize, parallel, ...), or "
        "'train [mlp cnn encoder]': one SGD training step against PyTorch eager, "
        "or 'checkpoint [mlp resnet]': activation checkpointing's memory and time "
        "over k, against torch.utils.checkpoint and the book's formulas, or "
        "'sweep': every transformers architecture through ONNX Runtime, qidao and "
        "torch.compile (the sweep options below)",
    )
    p.add_argument(
        "--backends",
        nargs="*",
        help="torch, qidao, qidao-raw, numpy, onnxruntime (default: all that apply); "
        "qidao:none or qidao:PATH: qidao with no schedule or the trace in PATH",
    )
    p.add_argument(
        "--plot",
        nargs="?",
        const="",
        help="write a PNG bar chart here (alone: bench-results/<bench|ladder>.png)",
    )
    p.add_argument("--size", type=int, default=1024, help="ladder: matmul N×N")
    p.add_argument(
        "--records",
        help="ladder: the tuned rung applies this records file's best record "
        "(default: tune first, into ladder-tune.jsonl beside the CSV)",
    )
    p.add_argument(
        "--rung",
        action="append",
        metavar="NAME",
        help="ladder: only this row (repeatable): a rung, pytorch, numpy or peak",
    )
    p.add_argument(
        "--tune-trials",
        type=int,
        default=32,
        help="ladder: trials of the tuning run before the tuned rung (default 32)",
    )
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--min-time", type=float, default=1.0, help="seconds of timing per run"
    )
    p.add_argument(
        "--tiny",
        action="store_true",
        help="train, checkpoint: the small test configurations",
    )
    p.add_argument(
        "--k",
        type=int,
        nargs="+",
        help="checkpoint: the k values to sweep (default: 1..N)",
    )
    p.add_argument("--csv", help="CSV path (default: bench-results/<bench|ladder>.csv)")
    add_sweep_arguments(p)
    p.set_defaults(run=cmd_bench)


def _add_zoo(sub: Any) -> None:
    from qidao.bench.jobs import DEFAULT_TIMEOUT
    from qidao.bench.zoo import PATHS

    p = sub.add_parser(
        "zoo",
        help="transformers models (ResNet-50, ViT, BERT, ...) through ONNX and "
        "torch.compile, checked and timed against ONNX Runtime and PyTorch",
    )
    p.add_argument(
        "models", nargs="*", help="zoo models (default: all but the tiny ones; --list)"
    )
    p.add_argument("--list", action="store_true", help="list the models and exit")
    p.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1, 2],
        help="thread counts (default: 1 2); compile times are the first's",
    )
    p.add_argument(
        "--paths",
        default=",".join(PATHS),
        help="comma-separated ways into qidao: onnx (qidao.compile on the exported "
        "file, vs ONNX Runtime), torch (torch.compile); default: both",
    )
    p.add_argument(
        "--min-time", type=float, default=1.0, help="seconds of timing per job"
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="times each qidao and ONNX Runtime timing job runs, interleaved per "
        "model; the table has the median of their medians (default 1)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds a job may take before its process is killed (default "
        f"{DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--csv", default="bench-results/zoo.csv", help="CSV path (default %(default)s)"
    )
    p.add_argument(
        "--plot",
        nargs="?",
        const="",
        help="write a bar chart of ORT/qidao and eager/qidao here, .png or .svg "
        "(alone: bench-results/zoo.png)",
    )
    p.set_defaults(run=cmd_zoo)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="qidao",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument(
        "--debug",
        type=int,
        default=None,
        metavar="N",
        help="0-4: print stage times (1), IR per stage (2), per pass (3), LLVM -O3 "
        "and asm (4) to stderr; default $QIDAO_DEBUG or 0",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    for add in (
        _add_tour,
        _add_compile,
        _add_run,
        _add_profile,
        _add_bench,
        _add_zoo,
        add_cache_parser,  # qidao cache: qidao/tools/cache_command.py
        add_tune_parser,  # qidao tune: qidao/tools/tune.py
        add_conformance_parser,  # qidao conformance: qidao/tools/conformance_command.py
        add_bench_cuda_parser,  # qidao bench-cuda: qidao/bench/cuda/bench.py
        add_fuzz_parser,  # qidao fuzz: qidao/tools/fuzz.py
        add_explain_parser,  # qidao explain: qidao/tools/explain_command.py
        add_bisect_parser,  # qidao bisect: qidao/tools/bisect_command.py
        add_pipeline_parser,  # qidao pipeline: qidao/tools/pipeline_command.py
        add_gguf_parser,  # qidao gguf: qidao/tools/gguf_command.py
    ):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from qidao.compiler.pipeline import InternalCompilerError
    from qidao.errors import CheckError, QidaoError
    from qidao.frontend.errors import FrontendError
    from qidao.runtime.errors import ArgumentError

    try:
        return int(args.run(args))
    except InternalCompilerError as err:  # a bug in qidao: the pass and the op
        print(
            f"qidao {args.command}: internal compiler error: {err} (please report "
            "it with the model)",
            file=sys.stderr,
        )
    except ParseError as err:  # its text carries file:line:column and a caret
        print(f"qidao {args.command}: parse error: {err}", file=sys.stderr)
    except DiagnosticException as err:  # a verifier's message, naming the op
        print(f"qidao {args.command}: invalid IR: {err}", file=sys.stderr)
    except (QidaoError, FrontendError, ArgumentError, OSError, ValueError) as err:
        if getattr(args, "debug", None):  # --debug N: the traceback too
            raise
        print(f"qidao {args.command}: error: {err}", file=sys.stderr)
        if isinstance(err, CheckError):  # the command was right; the data failed
            return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
