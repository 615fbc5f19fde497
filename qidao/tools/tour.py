"""``qidao tour``: one model through every level of the tower, run and timed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qidao.compiler.pipeline import PIPELINES, check_stage


def _banner(title: str) -> str:
    return f"\n{'=' * 78}\n== {title}\n{'=' * 78}"


def tour(
    model: str, stages: Sequence[str], bench: bool = True, debug: int | None = None
) -> int:
    """Print ``model`` at each stage, run it on its example inputs, time it vs torch."""
    import qidao
    from qidao import Compiled
    from qidao.examples import EXAMPLES, get_example

    for stage in stages:
        check_stage(stage)
    example = get_example(model) if model in EXAMPLES else None
    source = example.build() if example is not None else model
    compiled = qidao.compile(source, debug=debug)
    if not isinstance(compiled, Compiled):
        why = getattr(compiled, "why", lambda: "a wrapper around programs")()
        raise SystemExit(
            f"qidao tour: {model} is compiled at its first call ({why}); run it "
            "with inputs: qidao run MODEL --inputs in.npz"
        )
    summary = {s.name: s.summary for s in PIPELINES["cpu"]}
    title = example.summary if example is not None else model
    print(f"qidao tour: {title}")
    for stage in stages:
        print(_banner(f"{stage}: {summary[stage]}"))
        print(compiled.ir(stage).rstrip())
    print(_banner("run"))
    if example is not None:
        inputs = example.inputs(np.random.default_rng(0))
    else:
        rng = np.random.default_rng(0)
        inputs = [rng.standard_normal(s.shape).astype(s.dtype) for s in compiled.inputs]
    outputs = compiled(*inputs)
    for spec, array in zip(compiled.inputs, inputs, strict=True):
        print(f"{spec.name} = {np.array2string(array, threshold=8)}")
    for spec, array in zip(compiled.outputs, outputs, strict=True):
        print(f"{spec.name} = {np.array2string(array, threshold=8)}")
    if example is not None:
        for got, want in zip(outputs, example.reference(*inputs), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        print("matches the NumPy reference")
    print(
        f"{compiled.stats['kernels']} kernel launch(es), "
        f"{compiled.stats['buffers']} intermediate buffer(s), "
        f"peak {compiled.stats['peak_bytes']:,} bytes"
    )
    if bench and example is not None:
        from qidao.bench.workloads import format_table, run_bench

        print(_banner("time: one thread, each backend in its own process, medians"))
        results = run_bench([model], backends=("torch", "qidao"), min_time=0.5)
        print(format_table(results))
    return 0
