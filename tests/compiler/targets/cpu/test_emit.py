"""The CPU emitter (``qidao/compiler/targets/cpu/emit.py``): the host program's
kernel calls stay calls."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

import qidao
from qidao.frontend.builder import Graph


def test_kernel_calls_of_the_host_are_not_inlined() -> None:
    """Inlined, a host of N kernel calls is one function of N loop nests, and -O3's
    time grows with its square (3,000 unfused kernels took minutes): every kernel
    the host calls is ``noinline``, and still a call after -O3."""
    g = Graph()
    x = g.input("x", (64,))
    y = x
    for k in range(40):  # 40 calls of a few distinct kernels
        y = g.tanh(y) if k % 2 else y * 0.5
    g.output(y)
    compiled: Any = qidao.compile(g, fuse=False, threads=1)
    text = compiled.ir("llvm")
    kernels = re.findall(r'^define void @"(main_k\w+)"\(.*\) noinline', text, re.M)
    assert kernels and all(k.startswith("main_k") for k in kernels)
    host_line = text.split('define void @"main"(')[1].split("\n")[0]
    assert "noinline" not in host_line
    optimized = compiled.ir("llvm-opt")
    host = optimized.split("@main(")[1].split("\n}\n")[0]
    assert host.count("call void @main_k") == 40
    xs = np.linspace(-2, 2, 64, dtype=np.float32)
    want = xs.copy()
    for k in range(40):
        want = np.tanh(want) if k % 2 else want * np.float32(0.5)
    np.testing.assert_allclose(compiled(xs)[0], want, rtol=1e-5, atol=1e-6)
