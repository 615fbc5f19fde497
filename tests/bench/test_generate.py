"""``qidao bench generate``: each job a worker process, the tokens compared, the
rates from timings (never asserted as speeds)."""

from __future__ import annotations

import math
from typing import Any

import pytest

pytest.importorskip("gguf", reason="GGUF needs the gguf package")
pytest.importorskip("transformers", reason="the models are transformers'")

from qidao.bench.generate import (
    GenerateRow,
    format_table,
    run_generate,
)


@pytest.mark.slow
def test_the_tiny_model_generates_the_same_tokens_on_both_sides() -> None:
    rows = run_generate(["llama-tiny"], threads=1, new=4, encodings=("Q4_0",))
    assert [(r.encoding, r.job) for r in rows] == [("Q4_0", "qidao"), ("Q4_0", "torch")]
    assert all(not r.error for r in rows), [r.error for r in rows]
    for qidao, torch in zip(rows[::2], rows[1::2], strict=True):
        assert len(qidao.tokens) == 4 and qidao.tokens == torch.tokens
        assert (qidao.compiles, torch.compiles) == (2, 0)
        assert math.isfinite(qidao.decode_tok_s) and qidao.decode_tok_s > 0
        assert qidao.peak_mib >= qidao.rss_mib - 1  # the peak bounds what stays
    assert "same as torch" in format_table(rows)


def test_the_table_says_when_tokens_differ_and_names_a_failure() -> None:
    base: dict[str, Any] = {"prefill_tok_s": 10.0, "compiles": 2, "file_mib": 1.0}
    rows = [
        GenerateRow(
            "m", "F32", "qidao", decode_tok_s=20.0, tokens=(1, 2), peak_mib=3.5, **base
        ),
        GenerateRow("m", "F32", "torch", decode_tok_s=10.0, tokens=(1, 3), **base),
        GenerateRow("m", "Q8_0", "qidao", error="crashed: boom"),
    ]
    text = format_table(rows)
    assert "2.00x" in text and "DIFFER from torch" in text
    assert "3.50x" in text  # the peak over the file's size
    assert "m           Q8_0  qidao  failed: crashed: boom" in text


def test_an_unknown_model_is_named() -> None:
    with pytest.raises(ValueError, match=r"unknown model.*llama-9b.*the models are"):
        run_generate(["llama-9b"], threads=1)
