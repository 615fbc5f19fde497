"""The matmul template: a register tile of C in a cache-blocked loop nest.

The kernel ``out[i, j] += x[i, k] * w[k, j]`` (loops ``i, k, j``) becomes::

    split i by tile_i, j by tile_j (and k by tile_k when it is not 0)
    reorder <outer loops in `order`>, k (or k_i), i_i, j_i
    compute_at the zeroing nest, the tile loop    (init; no k split)
    parallel <parallel>                           (threads > 1)
    cache_write at the innermost outer loop       (cache_write)
    cache_read w at the loop enclosing i_o         (pack = "w", when registered;
                                                    the tile loop if i_o is outermost)
    vectorize j_i (and the copy loops) by width
    unroll j_i, i_i and the copy loops fully      (unroll_tile, where constant)
    unroll k (or k_i) by unroll_k

``order`` names the outer loops ``i_o, j_o, k_o`` outermost first (``"jki"``:
``j_o, k_o, i_o``); without a k split ``k_o`` does not exist. With ``cache_write``
and ``unroll_tile`` this is the ladder's register tile; the template's ``recipe``
is the default schedule's point (8 × 32, width 16, ``j_o`` outermost, ``w`` packed,
the zeroing in the tile: ``qidao/compiler/targets/cpu/defaults/matmul.py``), which the
evolutionary search measures first. ``tile_k`` and ``order`` add the cache blocking
around it. ``parallel`` marks its loop before the tile is copied and unrolled
(``parallel`` cannot see through an unrolled vector write-back). ``tile_i``
and ``tile_k`` include factors that do not divide the extents (the last tile is
shorter; its loops are not unrolled).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qidao.compiler.schedule import Schedule
from qidao.compiler.tune.space import Config, Knob, Template
from qidao.compiler.tune.task import Task

ORDERS = ("ijk", "jik", "ikj", "jki", "kij", "kji")
MAX_UNROLLED = 64
"""Vector statements in a fully unrolled tile (tile_i · tile_j / width), at most."""
MAX_BODY = 256
"""... and times unroll_k."""

KNOBS = (
    Knob("tile_i", (8, 2, 4, 6, 12, 16), "rows of the register tile"),
    Knob("tile_j", (32, 16, 64, 128, 256), "columns of the register tile"),
    Knob("tile_k", (0, 32, 64, 96, 128, 256, 384), "k block (0: no split)"),
    Knob("order", ORDERS, "the outer loops, outermost first"),
    Knob("width", (16, 4, 8), "vector lanes of j_i"),
    Knob("cache_write", (True, False), "accumulate the tile in a local buffer"),
    Knob("unroll_tile", (True, False), "unroll the tile's loops fully"),
    Knob("unroll_k", (1, 2, 4), "unroll the reduction loop by"),
    Knob("pack", ("none", "w"), "cache_read (pack) w", requires="cache-read"),
    Knob("init", (False, True), "compute_at the zeroing into the tile loop"),
    Knob("parallel", ("none", "i_o", "j_o"), "worker threads", needs_threads=True),
)


def _dims(task: Task) -> tuple[int, int, int]:
    (m, k), (_, n) = task.shapes[0], task.shapes[1]
    return m, k, n


def _outer(config: Config) -> list[str]:
    has_k = bool(config["tile_k"])
    return [f"{c}_o" for c in str(config["order"]) if c != "k" or has_k]


def canonical(config: Config, task: Task) -> Config:
    """Without a k split, only the order of i_o and j_o matters."""
    del task
    if config["tile_k"]:
        return config
    ij = "".join(c for c in str(config["order"]) if c != "k")
    return {**config, "order": ij + "k"}


def violation(config: Config, task: Task) -> str:
    m, k, n = _dims(task)
    ti, tj, tk = int(config["tile_i"]), int(config["tile_j"]), int(config["tile_k"])
    width, uk = int(config["width"]), int(config["unroll_k"])
    if tj % width:
        return f"tile_j {tj} is not a multiple of the width {width}"
    if n % tj:
        return f"tile_j {tj} does not divide N={n} (j_i is vectorized)"
    if ti > m or tk >= k:
        return "a tile larger than its extent"
    if config["cache_write"] and ti * tj > 4096:
        return "cache_write footprint over 4096 elements"
    statements = ti * tj // width
    if config["unroll_tile"] and statements > MAX_UNROLLED:
        return f"unrolled tile of {statements} vector statements"
    if uk > 1 and tk and k % tk:
        return f"unroll_k needs a constant k_i (tile_k {tk} does not divide K={k})"
    if uk > 1 and config["unroll_tile"] and statements * uk > MAX_BODY:
        return f"unrolled body of {statements * uk} vector statements"
    if config["parallel"] != "none" and config["parallel"] not in _outer(config):
        return f"no loop {config['parallel']}"
    if config["init"] and tk:
        return "init in the tile needs k unsplit (k_o would zero the tile again)"
    return ""


def apply(s: Schedule, kernel: str, config: Config, task: Task) -> None:
    m, k, _ = _dims(task)
    ti, tj, tk = int(config["tile_i"]), int(config["tile_j"]), int(config["tile_k"])
    width = int(config["width"])
    s.split(kernel, "i", ti)
    s.split(kernel, "j", tj)
    inner_k = "k"
    if tk:
        s.split(kernel, "k", tk)
        inner_k = "k_i"
    outer = _outer(config)
    s.reorder(kernel, *outer, inner_k, "i_i", "j_i")
    tile = outer[-1]
    if config["init"]:
        s.compute_at(kernel, "i_init", tile)
    if config["parallel"] != "none":
        s.parallel(kernel, str(config["parallel"]))
    k_exact = not tk or k % tk == 0
    exact = m % ti == 0 and k_exact
    if config["cache_write"]:
        s.cache_write(kernel, tile)
    if config["pack"] != "none":
        at = outer.index("i_o")
        pack_at = outer[at - 1] if at else tile
        s.cache_read(kernel, pack_at, str(config["pack"]))
        if k_exact:
            s.vectorize(kernel, f"{pack_at}_cr_i1", width)
    s.vectorize(kernel, "j_i", width)
    copy_in = f"{tile}_cw_i1" in s.loops(kernel)  # none when the init is inside
    if config["cache_write"] and exact:
        if copy_in:
            s.vectorize(kernel, f"{tile}_cw_i1", width)
        s.vectorize(kernel, f"{tile}_wb_i1", width)
    if config["unroll_tile"]:
        s.unroll(kernel, "j_i", 0)
        if m % ti == 0:
            s.unroll(kernel, "i_i", 0)
        if config["cache_write"] and exact:
            if copy_in:
                s.unroll(kernel, f"{tile}_cw_i0", 0)
            s.unroll(kernel, f"{tile}_wb_i0", 0)
    if int(config["unroll_k"]) > 1:
        s.unroll(kernel, inner_k, int(config["unroll_k"]))


def features(config: Config, task: Task) -> list[float]:
    """Hand-made features: tile sizes (log2), the order, flags, the register
    pressure of the tile and the bytes of the blocks each loop level reuses."""
    m, k, n = _dims(task)
    ti, tj, tk = int(config["tile_i"]), int(config["tile_j"]), int(config["tile_k"])
    tk_eff = tk or k
    width = int(config["width"])
    cw, ut = float(bool(config["cache_write"])), float(bool(config["unroll_tile"]))
    vectors = ti * tj / width
    order = canonical(config, task)["order"]
    return [
        math.log2(ti),
        math.log2(tj),
        math.log2(tk_eff),
        math.log2(width),
        cw,
        ut,
        math.log2(int(config["unroll_k"])),
        *(float(order == o) for o in ORDERS),
        float(config["pack"] != "none"),
        float(bool(config["init"])),
        float(config["parallel"] == "i_o"),
        float(config["parallel"] == "j_o"),
        float(m % ti == 0),
        float(k % tk_eff == 0),
        math.log2(vectors),
        cw * ut * float(vectors <= 28),
        math.log2(ti * tk_eff * 4),  # x panel bytes
        math.log2(tk_eff * tj * 4),  # w panel bytes
        math.log2(tk_eff * n * 4),  # w block bytes across j
        float(str(order).index("i") < str(order).index("j")),
    ]


def graph(task: Task) -> Any:
    from qidao.frontend.builder import Graph

    m, k, n = _dims(task)
    g = Graph("main")
    x = g.input("x", (m, k))
    w = g.input("w", (k, n))
    g.output(x @ w)
    return g


def reference(inputs: Sequence[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    x, w = inputs
    return np.asarray(x.astype(np.float64) @ w.astype(np.float64))


def flops(task: Task) -> float:
    m, k, n = _dims(task)
    return 2.0 * m * k * n


def matches(ops: str, shapes: tuple[tuple[int, ...], ...], dtype: str) -> bool:
    return (
        ops == "tg.matmul"
        and dtype == "f32"
        and len(shapes) == 3
        and all(len(s) == 2 for s in shapes)
    )


MATMUL = Template(
    kind="matmul",
    knobs=KNOBS,
    matches=matches,
    apply=apply,
    violation=violation,
    canonical=canonical,
    features=features,
    graph=graph,
    reference=reference,
    flops=flops,
    small={
        "tile_i": (2, 4, 8),
        "tile_j": (16, 32, 64),
        "width": (8, 16),
        "cache_write": (False, True),
        "unroll_tile": (False, True),
    },
    recipe={
        "tile_i": 8,
        "tile_j": 32,
        "width": 16,
        "order": "jik",
        "cache_write": True,
        "unroll_tile": True,
        "pack": "w",
        "init": True,
        "parallel": "j_o",
    },
)
