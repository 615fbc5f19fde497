"""Reading a command's ``--inputs`` file."""

from __future__ import annotations

from typing import Any

import numpy as np


def load_inputs(path: str, names: list[str]) -> list[np.ndarray[Any, Any]]:
    """The arrays of ``--inputs``: an ``.npz`` with one array per input name, or an
    ``.npy`` for a model of one input; anything else is a ``ValueError`` naming the
    file and what it lacks."""
    import zipfile

    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise ValueError(
            f"--inputs {path}: cannot read it as .npz or .npy ({err})"
        ) from None
    if isinstance(data, np.ndarray):
        if len(names) != 1:
            raise ValueError(
                f"--inputs {path}: an .npy holds one array and the model takes "
                f"{len(names)} inputs ({', '.join(names)}); save them in one .npz "
                "(np.savez(path, name=array, ...))"
            )
        return [data]
    missing = [name for name in names if name not in data.files]
    if missing:
        raise ValueError(
            f"--inputs {path} lacks input(s) {', '.join(missing)}; it has "
            f"{', '.join(data.files) or 'no arrays'}"
        )
    try:
        return [data[name] for name in names]
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise ValueError(f"--inputs {path}: cannot read an array ({err})") from None
