"""``qidao.distributed``: ``torchrun`` starts 2 and 4 processes on this machine
(gloo, loopback), each trains ``DistributedDataParallel(model)`` compiled with
``torch.compile(backend="qidao")`` on its slice of every global batch; the losses
of 50 steps match one process of eager PyTorch on the whole batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from qidao.distributed import World, world_from_environment
from qidao.errors import ArgumentError

torch = pytest.importorskip("torch")

WORKER = Path(__file__).resolve().parent / "_distributed_train.py"


def test_the_world_comes_from_torchruns_variables() -> None:
    env = {"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}
    env |= {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}
    assert world_from_environment(env) == World(1, 4, 1, "gloo")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT not set; start the processes"),
        ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x' is not a whole number"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, r"RANK=2 is not in \[0, WORLD_SIZE=2\)"),
    ],
)
def test_a_bad_environment_says_what_is_wrong(
    env: dict[str, str], message: str
) -> None:
    full = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"} if env else {}
    with pytest.raises(ArgumentError, match=message):
        world_from_environment(full | env)


def test_an_unknown_backend_is_refused() -> None:
    env = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "h", "MASTER_PORT": "1"}
    with pytest.raises(ArgumentError, match="backend must be one of gloo, nccl"):
        world_from_environment(env, backend="mpi")


@pytest.fixture(scope="module")
def reference() -> dict[str, list[float]]:
    """One process, eager PyTorch, the whole global batch each step."""
    sys.path.insert(0, str(WORKER.parent))
    try:
        import _distributed_train as worker
    finally:
        sys.path.remove(str(WORKER.parent))
    return {
        name: worker.train(name, make(0)) for name, (make, _) in worker.MODELS.items()
    }


@pytest.mark.parametrize("processes", [2, 4])
def test_ddp_under_torch_compile_matches_one_process(
    processes: int, reference: dict[str, list[float]], tmp_path: Path
) -> None:
    out = tmp_path / "losses.json"
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += [f"--nproc-per-node={processes}", str(WORKER), str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-20000:] + done.stderr[-20000:]
    got = json.loads(out.read_text())
    assert got["world"] == processes
    for name, losses in reference.items():
        assert len(got["losses"][name]) == len(losses) == 50
        # the ranks' gradients are averaged in another order than one process
        # sums them: the last bits differ, and grow a little over 50 steps
        torch.testing.assert_close(
            torch.tensor(got["losses"][name]),
            torch.tensor(losses),
            rtol=1e-5,
            atol=0.0,
            msg=lambda m, name=name: f"{name}: {m}",
        )
        assert sum(losses[-5:]) < 0.8 * sum(losses[:5])  # it trained
