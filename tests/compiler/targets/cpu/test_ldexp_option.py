"""The CPU target's ``ldexp`` option (``expand-math{ldexp}``): exp's scaling by
``2^n`` as one ``llvm.ldexp`` where the host has AVX-512F, bit for bit the two
factors built from exponent bits that it replaces."""

from __future__ import annotations

import numpy as np
import pytest

import qidao
from qidao.frontend.builder import Graph
from qidao.runtime.cpu import host_has


def _exp_graph(n: int) -> Graph:
    g = Graph("main")
    g.output(g.exp(g.input("x", (n,))))
    return g


def test_ldexp_must_be_a_bool_or_none() -> None:
    with pytest.raises(TypeError, match="ldexp must be None, True or False, got 'yes'"):
        qidao.compile(_exp_graph(16), ldexp="yes")


def test_the_default_follows_the_host() -> None:
    scf = qidao.compile(_exp_graph(64)).ir("scf")
    assert ("llvm.ldexp.f32.i32" in scf) == host_has("avx512f"), scf


def test_both_scalings_give_the_same_bits() -> None:
    """Over normal, overflowing and gradually underflowing results (exp of -104
    to 89) and the special values: identical float32 bits, and within 2 ulp of
    float64 NumPy where the result is normal."""
    x = np.concatenate(
        [
            np.linspace(-104.0, 89.0, 40_000, dtype=np.float32),
            np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -87.5, 88.7], np.float32),
        ]
    )
    g = _exp_graph(x.size)
    bits, ldexp = (qidao.compile(g, ldexp=v)(x)[0] for v in (False, True))
    np.testing.assert_array_equal(bits.view(np.uint32), ldexp.view(np.uint32))
    want = np.exp(x.astype(np.float64))
    normal = np.isfinite(want) & (want >= 2.0**-126) & (want < 3.4e38)
    np.testing.assert_allclose(ldexp[normal], want[normal], rtol=2e-7)
