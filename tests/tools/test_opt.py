"""``qidao-opt`` on user errors (issue 12, R9): one line on stderr naming the error,
exit 2 for a bad command line and 1 for input or a schedule a pass refuses, the
traceback only with ``--debug``."""

from __future__ import annotations

from pathlib import Path

import pytest

from qidao.tools.opt import main

KERNEL = """\
func.func private @k(%x: memref<8xf32>) attributes {qd.kernel = "t"} {
  affine.for %i = 0 to 8 {
    %v = affine.load %x[%i] : memref<8xf32>
    affine.store %v, %x[%i] : memref<8xf32>
  } {qd.loop = "i"}
  func.return
}
"""


@pytest.mark.parametrize(
    ("pipeline", "status", "message"),
    [
        ("nope", 2, "ValueError: Unrecognized passes: ['nope']"),
        ('split{kernel="k" loop="i"}', 2, 'split requires argument "factor"'),
        (
            'split{kernel="k" loop="i" factor=0}',
            1,
            "InvalidArgumentError: split: loop 'i' in kernel 'k': factor must be at "
            "least 1, got 0",
        ),
        (
            'split{kernel="k" loop="zz" factor=2}',
            1,
            "LoopNotFoundError: split: loop 'zz' in kernel 'k': no such loop",
        ),
    ],
)
def test_a_user_error_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pipeline: str,
    status: int,
    message: str,
) -> None:
    path = tmp_path / "k.mlir"
    path.write_text(KERNEL)
    with pytest.raises(SystemExit) as exit_info:
        main([str(path), "-p", pipeline])
    assert exit_info.value.code == status
    err = capsys.readouterr().err
    assert err.startswith("qidao-opt: error: ") and message in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_missing_and_binary_files_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "binary.mlir"
    binary.write_bytes(b"\xff\xfe")
    for path in (tmp_path / "missing.mlir", binary):
        with pytest.raises(SystemExit) as exit_info:
            main([str(path)])
        assert exit_info.value.code == 1
        err = capsys.readouterr().err
        assert err.startswith("qidao-opt: error: ") and err.count("\n") == 1


def test_debug_shows_the_error_itself(tmp_path: Path) -> None:
    path = tmp_path / "k.mlir"
    path.write_text(KERNEL)
    with pytest.raises(ValueError, match="Unrecognized passes"):
        main([str(path), "-p", "nope", "--debug"])
