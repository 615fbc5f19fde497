"""A GGUF file read with the ``gguf`` package (llama.cpp's own reader): metadata,
tensors as their encoded bytes, the tokenizer's vocabulary.

GGUF (llama.cpp's format) holds in one file a model's hyper-parameters
(``llama.block_count``, ``llama.attention.head_count``, ...), its tokenizer
(``tokenizer.ggml.tokens``, ``scores``, ``token_type``, the special ids) and its
tensors, each in an encoding: float32, float16, bfloat16, or blocks of quantized
integers with their scales (``Q8_0``, ``Q4_0``, the k-quants ``Q4_K``/``Q6_K`` that
``Q4_K_M`` files mix; :mod:`qidao.dialects.tg.block_quant`).

:func:`read_gguf` memory-maps the file: a :class:`GgufTensor`'s ``raw`` is a view
of its bytes in the file, one row of the weight per row of ``raw``, never a float
copy; :meth:`GgufTensor.dequantize` makes one where a float reference is wanted.
Everything that is checked (the magic and version, each tensor's encoding, that
its bytes lie in the file, the keys an architecture needs) is checked here, with
an error that names the file, the tensor or key, and what was expected:
:class:`GgufError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from qidao.dialects.tg.block_quant import Encoding, by_ggml_type, dequantize, row_bytes
from qidao.errors import QidaoError


class GgufError(QidaoError, ValueError):
    """A GGUF file qidao cannot read: not GGUF, truncated, a tensor in an
    encoding qidao has no kernel for, a key its architecture needs missing."""


@dataclass(frozen=True)
class GgufTensor:
    """One tensor of a GGUF file.

    ``shape`` is in NumPy's order (rows first: GGML's ``ne`` reversed), so a
    linear layer's weight is ``[out_features, in_features]`` as in PyTorch.
    ``raw`` is its encoded bytes, ``[*shape[:-1], row_bytes]`` ``uint8``, a view of
    the memory-mapped file."""

    name: str
    shape: tuple[int, ...]
    encoding: Encoding
    raw: npt.NDArray[np.uint8] = field(repr=False)

    @property
    def nbytes(self) -> int:
        """The bytes the tensor takes in the file (and in memory)."""
        return int(self.raw.nbytes)

    def dequantize(self) -> npt.NDArray[np.float32]:
        """A float32 copy of the tensor (a reference: qidao's kernels read
        ``raw``)."""
        return dequantize(self.raw, self.encoding, self.shape[-1]).reshape(self.shape)

    def rows(self, indices: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """Rows ``indices`` of a 2-D tensor decoded to float32 (an embedding's
        lookup: only those rows are read)."""
        picked = self.raw[np.asarray(indices, dtype=np.int64)]
        return dequantize(picked, self.encoding, self.shape[-1])


@dataclass(frozen=True)
class GgufTokenizer:
    """The vocabulary a GGUF file carries (``tokenizer.ggml.*``): ``model`` is the
    tokenizer's kind (``llama``: SentencePiece, ``gpt2``: byte-level BPE)."""

    model: str
    tokens: tuple[str, ...]
    scores: tuple[float, ...] | None = None
    token_types: tuple[int, ...] | None = None
    bos_id: int | None = None
    eos_id: int | None = None


@dataclass(frozen=True)
class GgufFile:
    """A read GGUF file: its metadata (every key, values as Python scalars,
    strings and lists), tensors by name, tokenizer where it has one."""

    path: Path
    version: int
    architecture: str
    metadata: dict[str, Any] = field(repr=False)
    tensors: dict[str, GgufTensor] = field(repr=False)
    tokenizer: GgufTokenizer | None = field(repr=False)

    @property
    def file_bytes(self) -> int:
        """The file's size."""
        return self.path.stat().st_size

    def hparam(self, key: str) -> Any:
        """The architecture's hyper-parameter ``key`` (``block_count`` reads
        ``llama.block_count``); a :class:`GgufError` naming it where it is missing."""
        full = f"{self.architecture}.{key}"
        if full not in self.metadata:
            raise GgufError(
                f"{self.path.name}: the {self.architecture} model has no '{full}' "
                "in its metadata"
            )
        return self.metadata[full]

    def tensor(self, name: str) -> GgufTensor:
        """The tensor ``name``; a :class:`GgufError` naming it where it is missing."""
        if name not in self.tensors:
            raise GgufError(f"{self.path.name}: no tensor '{name}'")
        return self.tensors[name]


def read_gguf(path: str | Path) -> GgufFile:
    """Read the GGUF file at ``path`` (memory-mapped; tensors stay encoded)."""
    import gguf

    path = Path(path)
    if not path.is_file():
        raise GgufError(f"{path}: no such file")
    try:
        reader = gguf.GGUFReader(path, "r")
    except Exception as err:  # the reader's own check: magic, version, sizes
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise GgufError(f"{path.name}: not a readable GGUF file ({first})") from err
    metadata = {name: _value(f) for name, f in reader.fields.items()}
    architecture = metadata.get("general.architecture")
    if not isinstance(architecture, str):
        raise GgufError(f"{path.name}: no 'general.architecture' in its metadata")
    tensors = {t.name: _tensor(path, t) for t in reader.tensors}
    return GgufFile(
        path=path,
        version=int(metadata.get("GGUF.version", 0)),
        architecture=architecture,
        metadata=metadata,
        tensors=tensors,
        tokenizer=_tokenizer(metadata),
    )


def _value(f: Any) -> Any:
    """A metadata field's value: a scalar, a string, or a list of either."""
    import gguf

    if not f.types:
        return None
    value = f.contents()
    if f.types[0] == gguf.GGUFValueType.ARRAY:
        return list(value)
    return value


def _tensor(path: Path, t: Any) -> GgufTensor:
    """A reader tensor as a :class:`GgufTensor`, its encoding and size checked."""
    try:
        encoding = by_ggml_type(int(t.tensor_type))
    except ValueError as err:
        raise GgufError(f"{path.name}: tensor '{t.name}': {err}") from err
    shape = tuple(int(d) for d in reversed(t.shape.tolist()))
    try:
        width = row_bytes(encoding, shape[-1])
    except ValueError as err:
        raise GgufError(f"{path.name}: tensor '{t.name}' {list(shape)}: {err}") from err
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    data = np.asarray(t.data)
    if data.nbytes != rows * width:
        raise GgufError(
            f"{path.name}: tensor '{t.name}' {list(shape)} {encoding.name} needs "
            f"{rows * width} bytes, the file has {data.nbytes} for it (truncated?)"
        )
    raw = data.reshape(-1).view(np.uint8).reshape(*shape[:-1], width)
    return GgufTensor(t.name, shape, encoding, raw)


def _tokenizer(metadata: dict[str, Any]) -> GgufTokenizer | None:
    """The ``tokenizer.ggml.*`` keys, where the file has a vocabulary."""
    tokens = metadata.get("tokenizer.ggml.tokens")
    if tokens is None:
        return None
    scores = metadata.get("tokenizer.ggml.scores")
    types = metadata.get("tokenizer.ggml.token_type")
    bos = metadata.get("tokenizer.ggml.bos_token_id")
    eos = metadata.get("tokenizer.ggml.eos_token_id")
    return GgufTokenizer(
        model=str(metadata.get("tokenizer.ggml.model", "")),
        tokens=tuple(str(t) for t in tokens),
        scores=None if scores is None else tuple(float(s) for s in scores),
        token_types=None if types is None else tuple(int(k) for k in types),
        bos_id=None if bos is None else int(bos),
        eos_id=None if eos is None else int(eos),
    )
