"""Schedule traces (``qidao.compiler.trace``): both text forms derive from the
primitives' methods and passes, and bad traces or arguments get clear errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import qidao
from qidao.compiler.schedule import (
    PRIMITIVES,
    InvalidArgumentError,
    Schedule,
    TraceEntry,
    parse_trace,
)
from qidao.frontend.builder import Graph
from qidao.passes import pass_modules

K = "main_k0_matmul"


def matmul() -> Graph:
    g = Graph("main")
    x = g.input("x", (16, 8))
    w = g.input("w", (8, 32))
    g.output(x @ w)
    return g


def test_every_schedule_pass_is_a_primitive_whose_fields_are_its_parameters() -> None:
    schedule_passes = {n for n, m in pass_modules().items() if ".schedule." in m}
    assert {p.pass_name for p in PRIMITIVES.values()} == schedule_passes
    for prim in PRIMITIVES.values():
        fields = [f.name for f in dataclasses.fields(prim.pass_class())]
        params = [p.name for p in prim.params]
        assert sorted(fields) == sorted(params), (prim.method, fields, params)
        assert params[0] == "kernel", prim.method


def test_python_and_pipeline_forms_round_trip() -> None:
    s = Schedule.for_model(matmul())
    s.split(K, "i", 4)
    s.reorder(K, "i_o", "k", "i_i", "j")
    s.vectorize(K, "j", 16)
    s.unroll(K, "k", 2)
    assert s.python().splitlines() == [
        f's.split("{K}", "i", 4)',
        f's.reorder("{K}", "i_o", "k", "i_i", "j")',
        f's.vectorize("{K}", "j", 16)',
        f's.unroll("{K}", "k", 2)',
    ]
    assert s.pipeline().split("},")[1] == (f'reorder{{kernel="{K}" loops="i_o,k,i_i,j"')
    assert parse_trace(s.python()) == s.trace == parse_trace(s.pipeline())


def test_pipeline_defaults_come_from_the_method() -> None:
    (entry,) = parse_trace(f'unroll{{kernel="{K}" loop="k"}}')
    assert entry == TraceEntry("unroll", K, ("k", 0))
    (entry,) = parse_trace(f'vectorize{{kernel="{K}" loop="j"}}')
    assert entry == TraceEntry("vectorize", K, ("j", 16))


def test_keyword_arguments_record_the_same_trace() -> None:
    s = Schedule.for_model(matmul())
    assert s.split(kernel=K, loop="i", factor=4) == ("i_o", "i_i")
    assert s.trace == [TraceEntry("split", K, ("i", 4))]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.split(K, "i", True), "'factor' must be an integer, got True"),
        (lambda s: s.vectorize(K, "j", "16"), "'width' must be an integer"),
        (lambda s: s.split(K, 3, 4), "'loop' must be a name"),
    ],
)
def test_wrong_argument_types_are_refused_before_the_pass(
    call: object, message: str
) -> None:
    s = Schedule.for_model(matmul())
    before = str(s.module)
    with pytest.raises(InvalidArgumentError, match=message):
        call(s)  # type: ignore[operator]
    assert str(s.module) == before and s.trace == []


def test_wrong_argument_count_names_the_primitive() -> None:
    s = Schedule.for_model(matmul())
    with pytest.raises(TypeError, match=r"split\(\): missing a required argument"):
        s.split(K, "i")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('s.swizzle("k", "i")', r"expected s\.<primitive>"),
        ("fuse", "not a schedule primitive's pass"),
        ("not a schedule", "neither Python .* nor a pipeline"),
        ('s.split("k", "i")', "line 1: split: 'factor' is missing"),
        ('s.split("k", "i", 4, 5)', "1 argument.* too many"),
        ('s.split("k", "i", x)', "must be literals"),
        ('split{kernel="k" loop="i" factor="4"}', "'factor' must be an integer"),
        ('split{kernel="k" loop="i" size=4}', "unknown option.*size"),
        ("s.split(", "not Python"),
    ],
)
def test_bad_trace_text_is_a_clear_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_trace(text)


def test_a_trace_of_comments_only_is_empty() -> None:
    assert parse_trace("# nothing\n\n# still nothing") == []


def test_compile_refuses_a_schedule_that_is_not_one() -> None:
    with pytest.raises(TypeError, match="got int"):
        qidao.compile(matmul(), schedule=123)
    with pytest.raises(ValueError, match="neither Python"):
        qidao.compile(matmul(), schedule="not a schedule")


def test_replayed_text_trace_computes_the_product() -> None:
    trace = f's.split("{K}", "i", 4)\ns.vectorize("{K}", "j", 16)\n'
    compiled = qidao.compile(matmul(), schedule=trace)
    assert compiled.stats["schedule"] == trace
    rng = np.random.default_rng(0)
    x, w = (
        rng.standard_normal((16, 8), np.float32),
        rng.standard_normal((8, 32), np.float32),
    )
    np.testing.assert_allclose(compiled(x, w)[0], x @ w, rtol=1e-5, atol=1e-5)
