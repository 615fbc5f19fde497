"""``qidao.distributed``: qidao on more than one process, on ``torch.distributed``.

qidao brings no transport of its own: the processes are ``torch.distributed``'s (gloo
on CPUs, NCCL where GPUs are), started by ``torchrun`` or by a program of one's own.
:func:`init` joins the group that ``torchrun`` describes in the environment::

    # torchrun --nproc-per-node 2 train.py
    import torch, qidao.distributed
    world = qidao.distributed.init()          # gloo here: rank, size from torchrun
    model = torch.nn.parallel.DistributedDataParallel(make_model())
    step = torch.compile(model, backend="qidao")
    ...                                       # loss.backward() all-reduces the grads
    qidao.distributed.shutdown()

``DistributedDataParallel`` then works as it does under Inductor: its hooks
all-reduce each gradient bucket during the backward, and qidao compiles the forward
and backward graphs that dynamo hands it (``tests/test_distributed.py`` trains an
MLP and a CNN on 2 and 4 processes and matches one process on the global batch).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from qidao.errors import ArgumentError

TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
"""What ``torchrun`` sets in each process it starts, and :func:`init` reads."""

BACKENDS = ("gloo", "nccl")
"""The ``torch.distributed`` backends qidao runs on: gloo on CPUs, NCCL on GPUs."""


@dataclass(frozen=True)
class World:
    """This process's place in the group."""

    rank: int
    """This process, 0 .. size - 1."""
    size: int
    """The processes in the group."""
    local_rank: int
    """This process among those on its machine (``LOCAL_RANK``; its GPU)."""
    backend: str
    """``gloo`` or ``nccl``."""


def world_from_environment(
    environ: Mapping[str, str] | None = None, backend: str = "gloo"
) -> World:
    """The :class:`World` that ``torchrun``'s variables describe; an error that
    names each missing or malformed one."""
    env = os.environ if environ is None else environ
    missing = [name for name in TORCHRUN_VARIABLES if not env.get(name)]
    if missing:
        raise ArgumentError(
            f"qidao.distributed.init: {', '.join(missing)} not set; start the "
            "processes with torchrun (torchrun --nproc-per-node N script.py), which "
            f"sets {', '.join(TORCHRUN_VARIABLES)} in each, or set them yourself"
        )
    if backend not in BACKENDS:
        raise ArgumentError(
            f"qidao.distributed.init: backend must be one of {', '.join(BACKENDS)}, "
            f"got {backend!r}"
        )
    values = {}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        text = env.get(name, "0" if name == "LOCAL_RANK" else "")
        if not text.isdigit():
            raise ArgumentError(
                f"qidao.distributed.init: {name}={text!r} is not a whole number"
            )
        values[name] = int(text)
    rank, size = values["RANK"], values["WORLD_SIZE"]
    if size < 1 or rank >= size:
        raise ArgumentError(
            f"qidao.distributed.init: RANK={rank} is not in [0, WORLD_SIZE={size})"
        )
    return World(rank, size, values["LOCAL_RANK"], backend)


def init(backend: str = "gloo", timeout_s: float = 300.0) -> World:
    """Join the process group that ``torchrun`` describes (``RANK``,
    ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``) on ``backend``; the group
    stays up until :func:`shutdown`. Joining twice is an error."""
    import datetime

    import torch.distributed as dist

    world = world_from_environment(backend=backend)
    if dist.is_initialized():
        raise ArgumentError(
            "qidao.distributed.init: this process is already in a process group; "
            "call qidao.distributed.shutdown() first"
        )
    dist.init_process_group(
        backend,
        rank=world.rank,
        world_size=world.size,
        timeout=datetime.timedelta(seconds=timeout_s),
    )
    return world


def shutdown() -> None:
    """Leave the process group (nothing when there is none)."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
