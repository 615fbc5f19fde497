"""``debug=qidao.PrintIR(...)`` and ``disable=[...]``: seeing what each pass changed,
and compiling without an optional pass (``qidao/compiler/print_ir.py``,
``qidao.compiler.pipeline.check_disable``).

The model below is built so that every optional graph and kernel pass changes it;
each pass is then switched off in turn, and the program must still give PyTorch's
answer (a pass the program needs would break it, which is why those are refused).
"""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch

import qidao
from qidao.compiler.pipeline import PIPELINES, optional_passes
from qidao.compiler.targets.cpu.target import BF16_FEATURE, VNNI_FEATURE
from qidao.examples import EXAMPLES
from qidao.frontend.builder import Graph
from qidao.runtime.cpu import host_has

RNG = np.random.default_rng(0)
W_CONV = (RNG.standard_normal((64, 16, 3, 3)) * 0.1).astype(np.float32)
W_MAT = RNG.standard_normal((16, 8)).astype(np.float32)
SHIFT = np.full(64, 0.1, np.float32)
W_INT8 = RNG.integers(-128, 128, (8, 16)).astype(np.int8)
B_INT32 = RNG.integers(-1000, 1000, 16).astype(np.int32)
W_PANELS = RNG.standard_normal((16, 256)).astype(np.float32)
W_BF16 = RNG.standard_normal((32, 16)).astype(ml_dtypes.bfloat16).astype(np.float32)
W_1D = (RNG.standard_normal((8, 4, 1, 3)) * 0.3).astype(np.float32)


def sink() -> Graph:
    """A model every optional pass of the CPU pipeline changes (the test below
    checks that it does): a padded 3x3 convolution to 64 channels with a batch norm
    after it (layout, select-conv-algo, materialize-padding, fold-constants),
    relu(relu) (collapse-unary), a batched matmul by a matrix
    (collapse-matmul-batch), ``* 1`` (simplify), the same expression twice (cse),
    two identical kernels (dedupe-kernels) and an int8 matmul by a constant
    (pack-vnni, where the CPU has AVX-512 VNNI), reshaped, plus a bias
    (sink-reshape), a float matmul by a constant 256 columns wide
    (pack-panels), a widened bfloat16 matrix by a constant of bfloat16 values
    (bf16-matmul, where the CPU has AVX512_BF16), a tanh over a column sum,
    written in place (plan-memory), and a 1-D convolution (2-D on the unit height,
    as the frontends import one) with a ReLU on its [N, C, L] result
    (lift-conv1d)."""
    g = Graph("main")
    x = g.input("x", (1, 16, 8, 8))
    a = g.input("a", (2, 4, 16))
    q = g.input("q", (3, 8), "uint8")
    v = g.input("v", (64, 128))
    h = g.input("h", (4, 32), "bfloat16")
    s = g.input("s", (1, 4, 10))
    # a column sum (its own kernel: no row group takes a leading axis), a tanh over
    # it written over the sum's buffer (plan-memory's in place), summed again
    t = g.tanh(g.reduce_sum(v, axes=[0]))
    g.output(g.reduce_sum(g.reshape(t, (128, 1)), axes=[0]))
    ones, zeros = np.ones(64, np.float32), np.zeros(64, np.float32)
    y = g.batch_norm(g.conv2d(x, W_CONV, padding=1), ones, SHIFT, zeros, ones)
    y = g.relu(g.relu(y))
    m = g.mul(g.matmul(a, W_MAT), g.constant(np.ones((), np.float32)))
    c = g.add(g.constant(np.float32(2.0)), g.constant(np.float32(3.0)))
    g.output(y, g.relu(g.add(g.exp(m), c)), g.relu(g.add(g.exp(m), c)))
    p = g.reshape(g.matmul_integer(q, W_INT8), (1, 3, 16))
    g.output(g.add(p, g.constant(B_INT32)))
    g.output(g.matmul(a, W_PANELS))
    g.output(g.matmul(g.cast(h, "float32"), W_BF16))
    c1 = g.conv2d(g.reshape(s, (1, 4, 1, 10)), W_1D)
    g.output(g.relu(g.reshape(c1, (1, 8, 8))))
    return g


def reference(
    x: np.ndarray,
    a: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    h: np.ndarray,
    s: np.ndarray,
) -> list[np.ndarray]:
    """The sink's outputs from PyTorch, in float64."""
    conv = torch.nn.functional.conv2d(
        torch.from_numpy(x).double(), torch.from_numpy(W_CONV).double(), padding=1
    )
    y = torch.relu(
        conv / np.sqrt(1 + 1e-5) + torch.from_numpy(SHIFT).double()[:, None, None]
    )
    m = np.maximum(np.exp(a.astype(np.float64) @ W_MAT) + 5.0, 0)
    p = q.astype(np.int64) @ W_INT8.astype(np.int64) + B_INT32
    panels = a.astype(np.float64) @ W_PANELS
    conv1d = torch.nn.functional.conv1d(
        torch.from_numpy(s).double(), torch.from_numpy(W_1D[:, :, 0]).double()
    )
    return [
        np.tanh(v.astype(np.float64).sum(0)).sum(0, keepdims=True),
        y.numpy(),
        m,
        m,
        p.reshape(1, 3, 16),
        panels,
        h.astype(np.float64) @ W_BF16,
        torch.relu(conv1d).numpy(),
    ]


INPUTS = [
    RNG.standard_normal((1, 16, 8, 8)).astype(np.float32),
    RNG.standard_normal((2, 4, 16)).astype(np.float32),
    RNG.integers(0, 256, (3, 8)).astype(np.uint8),
    RNG.standard_normal((64, 128)).astype(np.float32),
    RNG.standard_normal((4, 32)).astype(ml_dtypes.bfloat16),
    RNG.standard_normal((1, 4, 10)).astype(np.float32),
]


def printed(model: Any, **options: Any) -> tuple[Any, str]:
    """Compile with stderr captured: the compiled model and what it printed."""
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        compiled = qidao.compile(model, **options)
    return compiled, buf.getvalue()


def sections(text: str) -> list[tuple[str, str]]:
    """The printed sections: (title, body) in order."""
    parts = re.split(r"^// ----- qidao: (.*) -----$", text, flags=re.M)
    return [(parts[i], parts[i + 1].strip("\n")) for i in range(1, len(parts), 2)]


def check(compiled: Any) -> None:
    outputs = compiled(*INPUTS)
    for got, want in zip(outputs, reference(*INPUTS), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def after_change_text() -> str:
    """What a default compile of the sink prints with ``after_change`` (the
    compiled sink gives PyTorch's answer)."""
    compiled, text = printed(sink(), debug=qidao.PrintIR(after_change=True))
    check(compiled)
    return text


@pytest.fixture(scope="module")
def changed_by_default(after_change_text: str) -> list[str]:
    """The passes that change the sink in a default compile, in order."""
    return [title.split()[2] for title, _ in sections(after_change_text)]


# --- disable= ---------------------------------------------------------------------


@pytest.mark.parametrize("name", [p for p in optional_passes("cpu") if p != "dce"])
def test_each_optional_pass_is_skipped_and_the_answer_holds(
    name: str, changed_by_default: list[str]
) -> None:
    if name in ("pack-vnni", "sink-reshape") and not host_has(VNNI_FEATURE):
        pytest.skip(f"this CPU has no AVX-512 VNNI: {name} does not run")
    if name == "bf16-matmul" and not host_has(BF16_FEATURE):
        pytest.skip(f"this CPU has no AVX512_BF16: {name} does not run")
    # the pass does something here ...
    assert name in changed_by_default, (
        f"the optional pass '{name}' does not change sink(): add to sink() "
        "(tests/compiler/test_pass_flags.py) a case that it rewrites, and to "
        "reference() what that case computes, so that compiling without it is "
        "tested too"
    )
    compiled, text = printed(
        sink(), disable=[name], debug=qidao.PrintIR(after_change=True, after=[name])
    )
    assert f"pass {name} did not run: disable= names it" in text
    assert f"IR after {name}" not in text  # ... and, disabled, it does not run
    check(compiled)


def test_dce_is_skipped_at_both_levels() -> None:
    """``dce`` runs on the graph and on the llvm dialect; disabled, at neither."""
    example = EXAMPLES["conv3x3"]
    _, text = printed(example.build(), debug=qidao.PrintIR(after_change=True))
    assert [t for t, _ in sections(text)].count("IR after dce") == 2
    compiled, text = printed(
        example.build(), disable=["dce"], debug=qidao.PrintIR(after_change=True)
    )
    assert "IR after dce" not in text
    inputs = example.inputs(np.random.default_rng(1))
    for got, want in zip(compiled(*inputs), example.reference(*inputs), strict=True):
        np.testing.assert_allclose(got, want, *example.tolerance)


@pytest.mark.parametrize("mode", ["graph", "eager"])
def test_every_optional_pass_off_at_once(mode: str) -> None:
    compiled = qidao.compile(sink(), mode=mode, disable=list(optional_passes("cpu")))
    check(compiled)
    assert compiled.stats["kernels"] >= 6  # nothing fused, nothing merged


def needed_steps() -> list[tuple[str, str]]:
    steps = {s.name: s for stage in PIPELINES["cpu"] for s in stage.steps}
    return [(n, s.needed or "asks for it") for n, s in steps.items() if not s.optional]


@pytest.mark.parametrize(("name", "why"), needed_steps())
def test_a_needed_pass_is_refused_saying_why(name: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)) as err:
        qidao.compile(sink(), disable=["cse", name])
    assert f"'{name}'" in str(err.value)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (["fusion"], ValueError, "disable names unknown pass 'fusion'; did you mean"),
        (["xyzzy"], ValueError, "disable names unknown pass 'xyzzy'; the passes of"),
        (["widen-floats"], ValueError, "pass 'widen-floats' is registered"),
        (["split"], ValueError, "'split' is a schedule primitive"),
        ([1], TypeError, "disable must be a list of pass names, got [1]"),
        ({"fuse": True}, TypeError, "disable must be a list of pass names"),
    ],
)
def test_disable_names_bad_values(value: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        qidao.compile(sink(), disable=value)


def test_the_needed_and_optional_passes_cover_the_pipeline() -> None:
    """Every step is either optional or says why it is needed (a new pass must
    choose)."""
    for target in PIPELINES:
        for stage in PIPELINES[target]:
            for step in stage.steps:
                assert step.optional or step.needed or step.when, step


# --- debug=PrintIR(...) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("widen-floats", "add a Step for it to a stage in qidao/compiler/pipeline.py"),
        ("split", "'split' is a schedule primitive"),
    ],
)
def test_print_ir_says_how_to_reach_a_pass_the_pipeline_does_not_run(
    name: str, message: str
) -> None:
    """A pass just written is registered but not run: the error says what to do."""
    with pytest.raises(ValueError, match=re.escape(message)):
        qidao.compile(sink(), debug=qidao.PrintIR(after=[name]))


def test_after_change_prints_exactly_the_passes_whose_ir_changed(
    after_change_text: str,
) -> None:
    """Against the IR after every pass: a pass is printed by ``after_change`` if and
    only if its IR differs from the one before it."""
    _, every = printed(sink(), debug=qidao.PrintIR(after_all=True))
    changed = after_change_text
    dumps = sections(every)
    assert all(title.startswith("IR after ") for title, _ in dumps)
    # the lower stages start again from the scheduled IR: compare within each run
    expected = []
    previous = None
    for title, body in dumps:
        name = title.split()[2]
        if name == "expand-math":  # the first pass below the schedule
            previous = None
        if "(unchanged)" not in title and body != previous:
            expected.append(name)
        previous = body if "(unchanged)" not in title else previous
    assert [t.split()[2] for t, _ in sections(changed)] == expected


def test_a_diff_holds_the_lines_a_pass_removed_and_added() -> None:
    _, text = printed(
        sink(), debug=qidao.PrintIR(before=["fuse"], after=["fuse"], diff=True)
    )
    (t1, before), (t2, diff) = sections(text)
    assert (t1, t2) == ("IR before fuse", "IR after fuse (diff)")
    lines = diff.splitlines()
    assert lines[:2] == ["--- before fuse", "+++ after fuse"]
    removed = [line[1:] for line in lines[2:] if line.startswith("-")]
    added = [line[1:] for line in lines[2:] if line.startswith("+")]
    assert removed and added
    assert set(removed) <= set(before.splitlines())
    assert any("tg.fused" in line for line in added)
    assert not any("tg.fused" in line for line in before.splitlines())


def test_before_prints_the_ir_the_pass_gets() -> None:
    """The IR before ``fuse`` is the IR after the passes that ran before it
    (``materialize-padding``, then ``dce``, which changes nothing here; with
    ``vnni=False`` ``sink-reshape`` does not run, on any CPU, with
    ``pack_weights=False`` neither does ``pack-panels``, and with ``bf16=False``
    no ``bf16-matmul`` leaves a cast for ``dce``)."""
    _, text = printed(
        sink(),
        vnni=False,
        bf16=False,
        pack_weights=False,
        debug=qidao.PrintIR(after=["materialize-padding", "dce"], before=["fuse"]),
    )
    (t1, padded), (t2, _), (t3, before_fuse), _ = sections(text)
    assert (t1, t2, t3) == (
        "IR after materialize-padding",
        "IR after dce (unchanged)",
        "IR before fuse",
    )
    assert padded == before_fuse and "tg.pad" in before_fuse


def test_the_schedule_prints_like_a_pass() -> None:
    _, text = printed(
        EXAMPLES["chain"].build(),
        debug=qidao.PrintIR(before=["schedule"], after=["schedule"]),
    )
    (t1, before), (t2, after) = sections(text)
    assert (t1, t2) == ("IR before schedule", "IR after schedule")
    assert "qd.parallel" not in before and "qd.parallel" in after


def test_a_named_pass_that_does_not_run_says_why() -> None:
    _, text = printed(
        sink(), debug=qidao.PrintIR(after=["autodiff", "fuse"]), fuse=False
    )
    titles = [t for t, _ in sections(text)]
    assert "pass autodiff did not run: it runs only with `grad=[...]`" in titles
    assert "pass fuse did not run: it runs only with `fuse=True`" in titles
    _, text = printed(sink(), debug=qidao.PrintIR(after=["fuse"]), mode="eager")
    assert [t for t, _ in sections(text)] == [
        'pass fuse did not run: mode="eager" skips it'
    ]


def test_print_ir_turns_the_cache_off_and_keeps_the_level(monkeypatch: Any) -> None:
    monkeypatch.setenv("QIDAO_CACHE", "on")
    compiled, text = printed(sink(), debug=qidao.PrintIR(level=1))
    assert compiled.stats["cache"] == "off: debug prints the stages as they run"
    assert "qidao: stats" in text  # level 1: the times and the kernel line


@pytest.mark.parametrize(
    ("config", "error", "message"),
    [
        (lambda: qidao.PrintIR(after=["fusion"]), ValueError, "did you mean 'fuse'?"),
        (
            lambda: qidao.PrintIR(before=["zzz"]),
            ValueError,
            "the passes of target 'cpu'",
        ),
        (lambda: qidao.PrintIR(after=[3]), TypeError, "takes a list of pass names"),
        (lambda: qidao.PrintIR(diff="yes"), TypeError, "is True or False"),
    ],
)
def test_print_ir_names_bad_settings(config: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        qidao.compile(sink(), debug=config())


def test_print_ir_takes_one_name_as_a_string() -> None:
    assert qidao.PrintIR(after="fuse").after == ("fuse",)
