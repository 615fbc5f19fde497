"""Built-in models: the book's examples and issue 3's benchmarks.

Each entry builds a tg graph with the Python builder, gives a NumPy reference, a
PyTorch eager version for side-by-side timing, and inputs to run it on. A
memory-bound workload also states the bytes one call must move at least (inputs read
once, outputs written once: what a fully fused kernel moves), from which
``qidao bench`` reports GB/s; one with a NumPy version (``numpy_fn``, writing into a
preallocated output) gets a ``numpy`` row too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qidao.examples.base import Example
from qidao.examples.basic import BASIC_EXAMPLES, chain_graph
from qidao.examples.blockq import BLOCKQ_EXAMPLES, blockq_example
from qidao.examples.dense import DENSE_EXAMPLES, matmul_example
from qidao.examples.models import MODEL_EXAMPLES

__all__ = [
    "EXAMPLES",
    "Example",
    "chain_graph",
    "get_example",
    "matmul_example",
    "model_argument",
    "shaped_example",
]

EXAMPLES: dict[str, Example] = {
    e.name: e
    for e in (*BASIC_EXAMPLES, *DENSE_EXAMPLES, *BLOCKQ_EXAMPLES, *MODEL_EXAMPLES)
}
"""Every built-in model by name, as ``qidao compile NAME`` and ``qidao bench`` know
them."""


def shaped_example(name: str) -> Example | None:
    """The workload of a shape named in ``name``: ``matmulMxKxN``,
    ``q8_0_MxKxN``, ``q4_0_MxKxN`` or ``q4_k_MxKxN``; None for any other name."""
    return matmul_example(name) or blockq_example(name)


def get_example(name: str) -> Example:
    """A built-in model by name, or a ``matmulMxKxN`` (``q8_0_MxKxN``,
    ``q4_0_MxKxN``, ``q4_k_MxKxN``) of any shape."""
    if name in EXAMPLES:
        return EXAMPLES[name]
    example = shaped_example(name)
    if example is None:
        raise ValueError(
            f"unknown built-in model '{name}'; choose from {', '.join(EXAMPLES)}, "
            "or matmulMxKxN (any shape, e.g. matmul128x768x3072), or "
            "q8_0_MxKxN / q4_0_MxKxN / q4_k_MxKxN (a weight in GGUF blocks)"
        )
    return example


def model_argument(model: str) -> Any:
    """A command line's MODEL: a built-in model's builder graph, or the path of a
    model file (which must exist)."""
    if model in EXAMPLES:
        return EXAMPLES[model].build()
    shaped = shaped_example(model)
    if shaped is not None and not Path(model).exists():
        return shaped.build()
    if not Path(model).exists():
        raise SystemExit(
            f"qidao: '{model}' is neither a file nor a built-in model "
            f"({', '.join(EXAMPLES)}, matmulMxKxN, q8_0_MxKxN, q4_0_MxKxN, "
            "q4_k_MxKxN)"
        )
    return model
