"""Call a JIT-compiled entry function on NumPy arrays, checking every argument first.

Entry ABI (bare pointers, see ``qidao.passes.cpu.convert_to_llvm``):
``void entry(ptr in0, ..., ptr inN, ptr out0, ..., ptr outM)``, each pointer the first
element of a C-contiguous buffer of exactly the spec's shape and dtype.

``NativeFunction.__call__(*inputs)`` takes exactly one ``numpy.ndarray`` per input
spec (no implicit conversion: Python numbers, lists and 0-d scalars must be wrapped
with ``np.asarray(..., dtype=...)`` by the caller, so nothing is silently copied or
retyped) and checks count, type, dtype and shape, raising ``ArgumentError`` before
any native call. Non-contiguous inputs (``a.T``, ``a[::2]``) are copied with
``np.ascontiguousarray``. Outputs are fresh arrays, returned as a list: small ones
``np.empty`` (NumPy's 16-byte alignment: the generated code uses unaligned vector
loads, so this is correct), those of ``ALIGNED_OUTPUT_BYTES`` or more 64-byte
aligned (a ``<16 x float>`` store then never straddles two cache lines, which
otherwise made the same kernel's time jump from call to call); a big output reuses
the array the previous call returned when nothing references it any more
(``POOLED_OUTPUT_BYTES``).

Fast path: ``ndarray_entry_ir(entry, n)`` is a small LLVM function,
``@"<entry>.ndarray"``, that takes the ndarray *objects* (ctypes ``py_object``), loads
each one's data pointer from NumPy's ``PyArrayObject`` (``PyArray_DATA``: the field
right after the object header) and calls the entry. It saves the ~140 ns per array
that Python needs to find a buffer's address. Its field offset is checked against
``ndarray.ctypes.data`` when this module loads; where it does not hold (an unusual
Python build) no trampoline is emitted and calls take the pointer path.

``NativeFunction.raw(*arrays)`` passes inputs and preallocated outputs straight to the
native function without any check: for benchmarking only. ``NativeFunction.cfunc``
is the bare ctypes function on integer addresses: the floor a call can cost.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qidao.runtime.cpu import JitModule
from qidao.runtime.errors import ArgumentError

_c_char = ctypes.c_char
_addressof = ctypes.addressof
TRAMPOLINE_SUFFIX = ".ndarray"
POOLED_OUTPUT_BYTES = 1 << 20
"""Outputs at least this big come from a one-array pool per output: the array handed
out by the previous call is reused when no reference to it (or to a view of it) is
left, which the caller cannot observe. Smaller outputs are always ``np.empty``."""


def numpy_dtype(name: str) -> np.dtype[Any]:
    """NumPy's dtype named ``name``; bfloat16, the float8s and the 4- and 2-bit
    integers are ``ml_dtypes``', imported on first use (it takes about 0.6 s)."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes  # noqa: F401  (registers them with NumPy)

        return np.dtype(name)


ALIGNED_OUTPUT_BYTES = 4096
"""Outputs at least this big are 64-byte aligned (see the module docstring)."""


def empty_aligned(
    shape: tuple[int, ...], dtype: np.dtype[Any], alignment: int = 64
) -> np.ndarray[Any, Any]:
    """An uninitialized C-contiguous array whose data starts on ``alignment`` bytes."""
    nbytes = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(nbytes + alignment, np.uint8)
    skip = -raw.ctypes.data % alignment
    return raw[skip : skip + nbytes].view(dtype).reshape(shape)


def _ndarray_data_offset() -> int | None:
    """Byte offset of the data pointer in a ``PyArrayObject``, if it is the usual
    one (right after a 16-byte object header) for every array tried."""
    offset = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
    probes: list[np.ndarray[Any, Any]] = [
        np.zeros(3, np.float32),
        np.ones((2, 2))[:, ::2],
        np.arange(5),
    ]
    for array in probes:
        stored = ctypes.c_void_p.from_address(id(array) + offset).value
        if stored != array.ctypes.data:
            return None
    return offset


NDARRAY_DATA_OFFSET = _ndarray_data_offset()


def ndarray_entry_ir(entry: str, n_args: int) -> str:
    """LLVM IR of ``@"<entry>.ndarray"(ptr obj0, ...)``, which reads each ndarray's
    data pointer and calls ``@entry``; empty when the layout check failed."""
    if NDARRAY_DATA_OFFSET is None:
        return ""
    params = ", ".join(f"ptr %o{i}" for i in range(n_args))
    body = []
    for i in range(n_args):
        body.append(f"  %f{i} = getelementptr i8, ptr %o{i}, i64 {NDARRAY_DATA_OFFSET}")
        body.append(f"  %d{i} = load ptr, ptr %f{i}")
    args = ", ".join(f"ptr %d{i}" for i in range(n_args))
    return "\n".join(
        [
            f'define void @"{entry}{TRAMPOLINE_SUFFIX}"({params}) {{',
            *body,
            f'  call void @"{entry}"({args})',
            "  ret void",
            "}",
            "",
        ]
    )


def dtype_mismatch(got: np.dtype[Any], expected: str) -> str:
    """How an input's dtype ``got`` differs from ``expected`` (for an error that
    follows "got "): a big-endian float32 is named as such, not as "float32"."""
    if got.newbyteorder("=") == numpy_dtype(expected):
        return (
            f"dtype {got.name} in non-native byte order ('{got.str}'); convert it "
            f"with x.astype('{expected}')"
        )
    return f"dtype {got.name}"


@dataclass(frozen=True)
class TensorSpec:
    """A function argument: its name, static shape and NumPy dtype name."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", numpy_dtype(self.dtype).name)

    def describe(self) -> str:
        return f"ndarray of shape {self.shape} and dtype {self.dtype}"


def _data_address(array: np.ndarray[Any, Any]) -> int:
    """The address of ``array``'s first byte (fast path: the buffer protocol)."""
    try:
        return _addressof(_c_char.from_buffer(array))  # type: ignore[arg-type]
    except (TypeError, ValueError):  # read-only or empty buffer
        return int(array.ctypes.data)


class NativeFunction:
    """A native entry function with checked NumPy calling."""

    def __init__(
        self,
        jit: JitModule,
        entry: str,
        inputs: Sequence[TensorSpec],
        outputs: Sequence[TensorSpec],
        use_trampoline: bool = True,
    ) -> None:
        self.jit = jit  # keeps the machine code alive
        self.entry = entry
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        n_args = len(self.inputs) + len(self.outputs)
        prototype = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n_args))
        self.cfunc = prototype(jit.function_address(entry))
        self._cfunc = self.cfunc
        self.convention = "pointer"
        if use_trampoline and jit.has_function(entry + TRAMPOLINE_SUFFIX):
            by_object = ctypes.CFUNCTYPE(None, *([ctypes.py_object] * n_args))
            self._cfunc = by_object(jit.function_address(entry + TRAMPOLINE_SUFFIX))
            self.convention = "ndarray"
        names = ", ".join(repr(s.name) for s in self.inputs)
        self._count_message = (
            f"{entry}() takes {len(self.inputs)} input(s) ({names})"
            if self.inputs
            else f"{entry}() takes no inputs"
        )
        self._call = self._make_caller()

    def _bad(self, i: int, spec: TensorSpec, what: str) -> ArgumentError:
        return ArgumentError(
            f"{self.entry}(): input '{spec.name}' (#{i}): expected "
            f"{spec.describe()}, got {what}"
        )

    def __call__(self, *arrays: Any) -> list[np.ndarray[Any, Any]]:
        return self._call(*arrays)  # type: ignore[no-any-return]

    def _check_slow(self, i: int, array: Any) -> np.ndarray[Any, Any]:
        """Input ``i`` failed a fast check: raise the precise error, or return the
        C-contiguous, aligned, writeable copy the native code can take."""
        spec = self.inputs[i]
        if isinstance(array, np.generic):  # a NumPy scalar: a 0-d array, checked below
            array = np.asarray(array)
        if not isinstance(array, np.ndarray):
            raise self._bad(i, spec, f"an object of type {type(array).__name__}")
        if array.dtype != numpy_dtype(spec.dtype):
            raise self._bad(i, spec, dtype_mismatch(array.dtype, spec.dtype))
        if array.shape != spec.shape:
            raise self._bad(i, spec, f"shape {array.shape}")
        flags = array.flags
        if (
            flags.c_contiguous
            and flags.aligned
            and (flags.writeable or self.convention == "ndarray")
        ):
            return array  # row-major after all (strides of size-1 dimensions differ)
        # Strided views are copied (never read through the wrong layout); read-only
        # arrays are copied when the buffer protocol must hand out their address.
        return np.array(array, order="C", copy=True)

    def _make_caller(self) -> Any:
        """Generate a Python caller specialised to this signature (like namedtuple):
        the checks are straight-line code, so a call costs little more than ctypes."""
        n_in = len(self.inputs)
        params = [f"a{i}" for i in range(n_in)]
        env: dict[str, Any] = {
            "ndarray": np.ndarray,
            "empty": np.empty,
            "empty_aligned": empty_aligned,
            "addressof": ctypes.addressof,
            "from_buffer": ctypes.c_char.from_buffer,
            "cfunc": self._cfunc,
            "slow": self._check_slow,
            "count_error": self._count_error,
        }
        lines = [
            "def call(*args):",
            f"    if len(args) != {n_in}: count_error(len(args))",
        ]
        if n_in:
            lines.append(f"    {', '.join(params)}{',' if n_in == 1 else ''} = args")
        addresses = []
        for i, spec in enumerate(self.inputs):
            dtype = numpy_dtype(spec.dtype)
            env[f"d{i}"] = dtype
            env[f"s{i}"] = spec.shape
            env[f"st{i}"] = np.empty(spec.shape, dtype).strides  # row-major strides
            a = f"a{i}"
            writeable = (
                "" if self.convention == "ndarray" else f" or not {a}.flags.writeable"
            )
            lines.append(
                f"    if type({a}) is not ndarray or {a}.dtype != d{i} or "
                f"{a}.shape != s{i} or {a}.strides != st{i}{writeable}: "
                f"{a} = slow({i}, {a})"
            )
            addresses.append(self._address_expr(a, spec))
        outs = []
        env["getrefcount"] = sys.getrefcount
        for j, spec in enumerate(self.outputs):
            dtype = numpy_dtype(spec.dtype)
            env[f"od{j}"] = dtype
            env[f"os{j}"] = spec.shape
            nbytes = int(np.prod(spec.shape)) * dtype.itemsize
            if nbytes < ALIGNED_OUTPUT_BYTES:
                lines.append(f"    o{j} = empty(os{j}, od{j})")
            elif nbytes < POOLED_OUTPUT_BYTES:
                lines.append(f"    o{j} = empty_aligned(os{j}, od{j})")
            else:
                # Reuse the array returned last time if nobody holds it any more
                # (3 references: the pool, the local and getrefcount's argument) nor
                # a view of it (a view's base is the aligned array's raw buffer,
                # held only by the array itself and getrefcount's argument), so a
                # big output is not a fresh mmap, page-faulted on every call.
                env[f"pool{j}"] = [None]
                lines += [
                    f"    o{j} = pool{j}[0]",
                    f"    if o{j} is None or getrefcount(o{j}) > 3 or "
                    f"getrefcount(o{j}.base) > 2 or not o{j}.flags.writeable:",
                    f"        o{j} = pool{j}[0] = empty_aligned(os{j}, od{j})",
                ]
            outs.append(f"o{j}")
            addresses.append(self._address_expr(f"o{j}", spec))
        lines.append(f"    cfunc({', '.join(addresses)})")
        lines.append(f"    return [{', '.join(outs)}]")
        exec("\n".join(lines), env)
        return env["call"]

    def _address_expr(self, name: str, spec: TensorSpec) -> str:
        if self.convention == "ndarray":
            return name
        if int(np.prod(spec.shape)) == 0:  # the buffer protocol refuses empty buffers
            return f"{name}.ctypes.data"
        return f"addressof(from_buffer({name}))"

    def _count_error(self, given: int) -> None:
        raise ArgumentError(f"{self._count_message}, got {given}")

    def call_into(
        self, inputs: Sequence[Any], given: Mapping[int, np.ndarray[Any, Any]]
    ) -> list[np.ndarray[Any, Any]]:
        """Call with the outputs at the positions of ``given`` written into those
        arrays (row-major, aligned, writeable, of the output's dtype and shape);
        the others are allocated. An input that is also given as an output must
        be passed as it is (no copy), or the call would update a copy."""
        if len(inputs) != len(self.inputs):
            self._count_error(len(inputs))
        checked = [self._check_slow(i, a) for i, a in enumerate(inputs)]
        for i, (a, c) in enumerate(zip(inputs, checked, strict=True)):
            if c is not a and any(o is a for o in given.values()):
                raise ArgumentError(
                    f"{self.entry}(): input '{self.inputs[i].name}' (#{i}) is also "
                    "an output written in place; it must be a row-major, aligned, "
                    f"writeable {self.inputs[i].describe()} array"
                )
        outs: list[np.ndarray[Any, Any]] = []
        for j, spec in enumerate(self.outputs):
            out = given.get(j)
            if out is None:
                out = empty_aligned(spec.shape, numpy_dtype(spec.dtype))
            elif (
                not isinstance(out, np.ndarray)
                or out.dtype != numpy_dtype(spec.dtype)
                or out.shape != spec.shape
                or not (out.flags.c_contiguous and out.flags.aligned)
                or not out.flags.writeable
            ):
                raise ArgumentError(
                    f"{self.entry}(): the array given for output '{spec.name}' (#{j}) "
                    f"must be a row-major, aligned, writeable {spec.describe()}"
                )
            outs.append(out)
        self.raw(*checked, *outs)
        return outs

    def raw(self, *arrays: np.ndarray[Any, Any]) -> None:
        """Unchecked call on C-contiguous inputs then preallocated outputs."""
        self.cfunc(*[_data_address(a) for a in arrays])

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}: {s.shape} {s.dtype}" for s in self.inputs)
        outs = ", ".join(f"{s.name}: {s.shape} {s.dtype}" for s in self.outputs)
        return f"NativeFunction({self.entry}({ins}) -> ({outs}))"
