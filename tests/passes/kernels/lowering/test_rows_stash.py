"""A row group whose output holds a transcendental op and is reduced too (GELU,
then the range a dynamic quantization reads, twice): the first reduction's pass
stores the output, the later passes load it, and no last pass recomputes it.
Against PyTorch, with the kernel's loops."""

from __future__ import annotations

import numpy as np
import torch

import qidao
from qidao.frontend.builder import Graph


def test_gelu_and_its_range_compute_erf_once() -> None:
    rng = np.random.default_rng(0)
    bias = rng.standard_normal(64).astype(np.float32)
    g = Graph("main")
    x = g.input("x", (8, 64), "int32")
    y = g.cast(x, "float32") * 0.001 + g.constant(bias)
    y = y * 0.5 * (g.erf(y / 1.4142135) + 1.0)
    g.output(y)
    g.output(g.maximum(g.reduce_max(y), 0.0))
    g.output(g.minimum(g.neg(g.reduce_max(g.neg(y))), 0.0))
    compiled = qidao.compile(g, threads=1)
    a = rng.integers(-3000, 3000, (8, 64)).astype(np.int32)
    out, hi, lo = compiled(a)

    t = torch.tensor(a).float() * 0.001 + torch.tensor(bias)
    want = torch.nn.functional.gelu(t).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert hi == max(float(out.max()), 0.0) and lo == min(float(out.min()), 0.0)

    kernel = compiled.ir("affine")
    assert kernel.count("math.erf") == 1, kernel
    assert "r_out" not in kernel
