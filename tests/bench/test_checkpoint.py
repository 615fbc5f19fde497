"""``qidao bench checkpoint``: each point in its own process, the gradients
checked, the budget row under its budget, the table, CSV and plot written."""

from __future__ import annotations

from pathlib import Path

import pytest

from qidao.bench.checkpoint import (
    book_memory,
    book_time,
    format_table,
    ratios,
    run_checkpoint_bench,
)

pytest.importorskip("torch")


def test_the_books_formulas() -> None:
    # N = 20, k = 4: (4 + 5)/20 of the memory, (4 - 0.2)/3 of the time
    assert book_memory(4, 20) == pytest.approx(0.45)
    assert book_time(4, 20) == pytest.approx(3.8 / 3)
    assert book_memory(20, 20) == pytest.approx(1.05)
    assert book_time(20, 20) == pytest.approx(1.0)


def test_a_sweep_point_per_process(tmp_path: Path) -> None:
    points = run_checkpoint_bench(
        ["mlp"],
        ks=[4],
        min_time=0.05,
        csv_path=tmp_path / "checkpoint.csv",
        plot_path=tmp_path / "checkpoint.png",
        tiny=True,
        progress=False,
        # the tiny MLP's weight gradients (32 x 32) outweigh its activations (8 x
        # 32): 40% of its peak is below what any plan reaches
        budget_share=0.6,
    )
    assert [(p.backend, p.setting) for p in points][:4] == [
        ("qidao", "none"),
        ("torch", "none"),
        ("qidao", "4"),
        ("torch", "4"),
    ]
    assert not any(p.error for p in points), [p.error for p in points]
    by = {(p.backend, p.setting.partition("=")[0]): p for p in points}
    assert by["qidao", "4"].grads_match == "bitwise"
    assert by["qidao", "4"].segments == 20
    memory = ratios(points, by["qidao", "4"])
    assert memory is not None and memory[0] < 0.5
    budget = by["qidao", "budget"]
    assert budget.peak_bytes <= 0.6 * by["qidao", "none"].peak_bytes
    assert budget.grads_match == "bitwise"
    assert "| mlp | 4 | 4 |" in format_table(points)
    assert (tmp_path / "checkpoint.csv").read_text().startswith("workload,backend")
    assert (tmp_path / "checkpoint.png").stat().st_size > 0
