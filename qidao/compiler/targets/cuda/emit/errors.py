"""The one error of the CUDA emitter (every module of ``emit/`` raises it)."""

from qidao.errors import UnsupportedError


class CudaEmitError(UnsupportedError, ValueError):
    """The module cannot be emitted as CUDA C: names the kernel, the op, the reason."""
