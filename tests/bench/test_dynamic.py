"""``qidao bench dynamic``: the table and the model check (the run itself compiles
GPT-2 and BERT four times each: a benchmark, not a unit test; the symbolic path it
times is tested in tests/compiler/test_symbolic.py)."""

from __future__ import annotations

import pytest

from qidao.bench.dynamic import DynamicRow, format_table, run_dynamic


def test_the_table_shows_each_ratio_and_the_compiles() -> None:
    row = DynamicRow(
        "gpt2",
        symbolic_ms={64: 4.0},
        specialized_ms={64: 3.2},
        torch_ms={64: 12.0},
        errors={1: 1e-6, 2048: 3e-6},
        symbolic_compile_s=3.0,
        specialized_compile_s={64: 2.0},
    )
    table = format_table([row, DynamicRow("bert", error="timed out after 1 s")])
    assert "1.25x" in table  # symbolic / specialized
    assert "3.00x" in table  # torch / symbolic
    assert (
        "one compile for seq 1..2048 3.0 s (specialized, one per length: 64: 2.0 s)"
        in table
    )
    assert "3.0e-06" in table
    assert "bert   failed: timed out after 1 s" in table


def test_an_unknown_model_is_named() -> None:
    with pytest.raises(
        ValueError, match="unknown model\\(s\\) vit; the models are gpt2, bert"
    ):
        run_dynamic(["vit"], threads=1)
