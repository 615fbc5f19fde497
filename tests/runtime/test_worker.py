"""The one worker harness (``qidao/runtime/worker.py``): a worker process answers
requests; an error, a crash and a hang each come back as what they are."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from qidao.runtime.worker import THREAD_VARS, Worker, pinned_env, run_once

WORKER = textwrap.dedent(
    """
    import os, sys, time
    from qidao.runtime.worker import serve

    def handle(request):
        print("noise on stdout")  # must not reach the protocol
        what = request["what"]
        if what == "boom":
            raise ValueError("a bad request")
        if what == "crash":
            print("dying now", file=sys.stderr)
            os._exit(7)
        if what == "hang":
            time.sleep(60)
        if what == "wrong":
            return {"status": "wrong", "error": "1 != 2"}
        return {"echo": request["value"], "omp": os.environ.get("OMP_NUM_THREADS")}

    serve(handle, warm=lambda: print("warming up"))
    """
)


@pytest.fixture
def module_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "echo_worker.py").write_text(WORKER)
    env = pinned_env(3)
    root = str(Path(__file__).parents[2])
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), root])
    return env


def test_answers_errors_crashes_and_hangs(module_env: dict[str, str]) -> None:
    with Worker("echo_worker", env=module_env) as worker:
        answer = worker.ask({"what": "echo", "value": [1, 2]}, timeout=30)
        assert answer.ok and answer.data["echo"] == [1, 2]
        assert answer.data["omp"] == "3"  # the pinned environment
        error = worker.ask({"what": "boom"}, timeout=30)
        assert error.status == "error" and error.error == "ValueError: a bad request"
        wrong = worker.ask({"what": "wrong"}, timeout=30)
        assert (wrong.status, wrong.error) == ("wrong", "1 != 2")
        assert worker.alive()  # an exception does not end the worker
        crash = worker.ask({"what": "crash"}, timeout=30)
        assert crash.status == "crash"
        assert crash.error == "the worker died (exit code 7): dying now"
    with Worker("echo_worker", env=module_env) as worker:
        hang = worker.ask({"what": "hang"}, timeout=0.5)
        assert (hang.status, hang.error) == ("timeout", "no answer within 0.5 s")
        assert not worker.alive()


def test_run_once_pins_the_threads(
    module_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", module_env["PYTHONPATH"])
    answer = run_once("echo_worker", {"what": "echo", "value": 5}, threads=2)
    assert answer.ok and answer.data["echo"] == 5 and answer.data["omp"] == "2"


def test_pinned_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    env = pinned_env(4)
    assert all(env[var] == "4" for var in THREAD_VARS)
    assert env["OPENBLAS_CORETYPE"] == "Haswell"
    assert "OPENBLAS_CORETYPE" not in pinned_env(4, numpy=True)
