"""The pipeline as data: an ordered list of named stages, each a list of passes.

``qidao compile --emit=<stage>`` and ``Compiled.ir(stage)`` take their stage names from
``STAGES``; an unknown name is rejected before any work is done.

| stage          | what the IR is                                   | made by            |
|----------------|--------------------------------------------------|--------------------|
| ``input``      | the tg graph as imported                         | a frontend         |
| ``tg``         | the tg graph after graph passes                  | fold-constants, simplify, cse, layout, materialize-padding, dce, fuse |
| ``affine``     | host function + one named loop nest per kernel   | convert-tg-to-affine, plan-memory |
| ``schedule``   | the same after the user's ``schedule=``          | split, reorder, ... (``qidao/compiler/schedule.py``) |
| ``scf``        | structured loops (scf.for) over index math; parallel loops outlined | expand-math, lower-affine, convert-parallel-to-gomp |
| ``cf``         | basic blocks and branches                        | convert-scf-to-cf  |
| ``llvm-dialect`` | xDSL's llvm dialect, bare-pointer memrefs      | convert-to-llvm, reconcile-unrealized-casts, dce |
| ``llvm``       | LLVM IR text, as handed to the JIT               | emit-llvm          |
| ``llvm-opt``   | LLVM IR after LLVM's -O3 for the host CPU        | llvmlite           |
| ``asm``        | host machine code (AT&T syntax)                  | llvmlite           |
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    name: str
    passes: tuple[str, ...]
    summary: str


STAGES: tuple[Stage, ...] = (
    Stage("input", (), "the tg graph as imported"),
    Stage(
        "tg",
        (
            "fold-constants",
            "simplify",
            "cse",
            "layout",
            "materialize-padding",
            "dce",
            "fuse",
        ),
        "the tg graph after graph passes",
    ),
    Stage(
        "affine",
        ("convert-tg-to-affine", "plan-memory"),
        "one named affine loop nest per kernel, buffers planned",
    ),
    Stage(
        "schedule",
        (),
        "the kernels' loops after the schedule= given to qidao.compile (if any)",
    ),
    Stage(
        "scf",
        ("expand-math", "lower-affine", "convert-parallel-to-gomp"),
        "scf.for loops over index arithmetic; exp/log/tanh as vectorizable polynomials; "
        "parallel loops outlined and started with GOMP_parallel",
    ),
    Stage("cf", ("convert-scf-to-cf",), "basic blocks and branches"),
    Stage(
        "llvm-dialect",
        ("convert-to-llvm", "reconcile-unrealized-casts", "dce"),
        "the llvm dialect, memrefs as bare pointers",
    ),
)
"""The IR stages, in order; each runs its passes on the previous stage's IR."""

TEXT_STAGES: tuple[Stage, ...] = (
    Stage("llvm", (), "LLVM IR text, as handed to the JIT"),
    Stage("llvm-opt", (), "LLVM IR after -O3 for the host CPU"),
    Stage("asm", (), "host machine code"),
)
"""Stages past the IR: text made by code generation and by LLVM."""

STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES + TEXT_STAGES)


def check_stage(name: str) -> str:
    """``name`` if it is a stage, else a ValueError listing the stages."""
    if name not in STAGE_NAMES:
        raise ValueError(
            f"unknown stage '{name}'; the stages are: {', '.join(STAGE_NAMES)}"
        )
    return name
