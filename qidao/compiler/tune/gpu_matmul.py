"""The GPU matmul template: the default schedule's register tile, its five numbers
searched.

The default GPU schedule of a matmul (``targets/cuda/defaults.py``,
``schedule_matmul``) puts the zeroing nest on the grid (``schedule_loops``) and
register-tiles the product with the first of five ``MatmulTile``s that fits, else a
thread per element of C. A point of this template is one ``MatmulTile(ty, tx, tm,
tn, bk)`` applied with the same ``register_tile`` (or ``thread_per_element``, one
more point)::

    knobs   schedule  register_tile | thread_per_element
            ty, tx    8, 16          threads of a block: ty x tx
            tm, tn    2, 4, 8        a thread's tile of C in registers
            bk        8, 16, 32      the k step (A's and B's tiles in __shared__)

    matmul 32x16 @ 16x64, ty=8 tx=8 tm=2 tn=4 bk=8
    ==> split i by 2, j by 4, i_o by 8, j_o by 8; bind i_o_o, j_o_o, i_o_i, j_o_i;
        cache_write j_o_i; split k by 8; cache_read x, w; unroll the tile
        (a 16 x 32 tile of C per block of 64 threads: 2 x 2 blocks)

A point is valid when the block's tile (``ty*tm x tx*tn``) divides M and N, ``bk``
divides K, the block has at most 1024 threads, its grid fits ``blockIdx.y`` and its
``__shared__`` tiles (``(ty*tm + tx*tn) * bk`` floats) fit in 48 KiB; the space
holds 216 tiles before those constraints. The recipe is the 64 x 64 tile (16 x 16
threads, 4 x 4 each, k by 16), the default's for matmul 1024.
"""

from __future__ import annotations

from typing import Any

from qidao.compiler.schedule import Schedule
from qidao.compiler.targets.cuda.defaults import (
    MatmulTile,
    register_tile,
    schedule_loops,
    thread_per_element,
)
from qidao.compiler.targets.cuda.loop_reading import band
from qidao.compiler.tune.gpu_space import each_nest, log2, step
from qidao.compiler.tune.matmul import MATMUL
from qidao.compiler.tune.space import Config, Knob, Template
from qidao.compiler.tune.task import Task
from qidao.passes.schedule.bind import MAX_GRID_DIM

SHARED_BYTES = 48 * 1024
"""``__shared__`` memory a block may use without opting in (every GPU since sm_20)."""
MAX_BLOCK_THREADS = 1024

KNOBS = (
    Knob("schedule", ("register_tile", "thread_per_element"), "the product nest"),
    Knob("ty", (8, 16), "threads of a block along i"),
    Knob("tx", (8, 16), "threads of a block along j"),
    Knob("tm", (2, 4, 8), "rows of C a thread keeps in registers"),
    Knob("tn", (2, 4, 8), "columns of C a thread keeps in registers"),
    Knob("bk", (8, 16, 32), "the k step: A's and B's tiles staged in __shared__"),
)
TILE_KNOBS = ("ty", "tx", "tm", "tn", "bk")


def _dims(task: Task) -> tuple[int, int, int]:
    (m, k), (_, n) = task.shapes[0], task.shapes[1]
    return m, k, n


def tile(config: Config) -> MatmulTile:
    """The point's ``MatmulTile``."""
    ty, tx, tm, tn, bk = (int(config[name]) for name in TILE_KNOBS)
    return MatmulTile(ty, tx, tm, tn, bk)


def canonical(config: Config, task: Task) -> Config:
    """A thread per element has no tile: every tile knob at its first value."""
    if config["schedule"] != "thread_per_element":
        return dict(config)
    return {**config, **{k.name: k.values[0] for k in KNOBS if k.name in TILE_KNOBS}}


def violation(config: Config, task: Task) -> str:
    if config["schedule"] == "thread_per_element":
        return ""
    m, k, n = _dims(task)
    t = tile(config)
    if m % t.rows or n % t.cols:
        return f"the {t.rows}x{t.cols} tile does not divide C ({m}x{n})"
    if k % t.bk:
        return f"bk={t.bk} does not divide K={k}"
    if t.ty * t.tx > MAX_BLOCK_THREADS:
        return f"{t.ty * t.tx} threads a block, over {MAX_BLOCK_THREADS}"
    if m // t.rows > MAX_GRID_DIM["y"]:
        return f"{m // t.rows} blocks along i, over the blockIdx.y limit"
    shared = (t.rows + t.cols) * t.bk * 4
    if shared > SHARED_BYTES:
        return f"{shared} bytes of __shared__ tiles, over {SHARED_BYTES}"
    return ""


def apply(s: Schedule, kernel: str, config: Config, task: Task) -> None:
    """The zeroing nest as the default does it; the product nest (the one with
    ``i``) register-tiled by the point's tile, or a thread per element of C."""

    def nest(top: str) -> None:
        if "i" not in band(s, kernel, top):
            step(schedule_loops, s, kernel, top)
        elif config["schedule"] == "thread_per_element":
            step(thread_per_element, s, kernel)
        else:
            step(register_tile, s, kernel, tile(config))

    each_nest(s, kernel, nest)


def features(config: Config, task: Task) -> list[float]:
    """log2 of each tile number, of the block's tile and threads, of the grid,
    of the registers a thread accumulates in and of the ``__shared__`` bytes."""
    m, _, n = _dims(task)
    t = tile(config)
    per_element = float(config["schedule"] == "thread_per_element")
    return [
        per_element,
        log2(t.ty),
        log2(t.tx),
        log2(t.tm),
        log2(t.tn),
        log2(t.bk),
        log2(t.rows * t.cols),
        log2(t.ty * t.tx),
        log2((m // t.rows) * (n // t.cols)),
        log2(t.tm * t.tn),
        log2((t.rows + t.cols) * t.bk * 4),
        float(t.rows == t.cols),
    ]


def _config(t: MatmulTile) -> dict[str, Any]:
    knobs = {"ty": t.ty, "tx": t.tx, "tm": t.tm, "tn": t.tn, "bk": t.bk}
    return {"schedule": "register_tile", **knobs}


GPU_MATMUL = Template(
    kind="matmul",
    knobs=KNOBS,
    matches=MATMUL.matches,
    apply=apply,
    violation=violation,
    canonical=canonical,
    features=features,
    graph=MATMUL.graph,
    reference=MATMUL.reference,
    flops=MATMUL.flops,
    small={"ty": (8, 16), "tx": (8, 16), "tm": (2, 4), "tn": (2, 4), "bk": (8, 16)},
    recipe=_config(MatmulTile(16, 16, 4, 4, 16)),
)
"""The GPU matmul template (``gpu_templates.GPU_TEMPLATES["matmul"]``)."""
