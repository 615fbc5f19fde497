"""The CPU JIT engine: LLVM IR text -> optimized native code for the host CPU.

Knows only LLVM IR text (no IR classes). One target machine built for the host CPU
(``get_host_cpu_name()`` + ``get_host_cpu_features()``) drives both the optimization
pipeline (llvmlite's new pass manager, O``opt_level``, loop and SLP vectorization on)
and MCJIT code generation, so the vectorizer sees the host's vector width (AVX-512 on
a CPU that has it). Every defined function also gets ``target-cpu``/``target-features``
attributes naming the host and, on an AVX-512 host, ``prefer-vector-width`` and
``min-legal-vector-width`` of 512: the CPU schedules (``reduce.py``'s accumulator
blocks, the row and conv kernels) are written for 16-lane registers, and LLVM's
tuning for some AVX-512 CPUs (Intel's "rocketlake", "icelake-server") prefers 256-bit
vectors, which would split every such vector in two and vectorize plain loops 8
wide. Measured on a rocketlake host, one thread, qidao vs PyTorch eager: gemm512
1.03x with the attributes, 0.97x without; conv3x3 1.61x vs 1.54x; the rest within
noise (``qidao bench``, December 2026).

    jit = jit_compile(ir_text)
    address = jit.function_address("main")   # valid while ``jit`` is alive

A ``JitModule`` owns its execution engine: keep it referenced as long as any function
address taken from it may be called (``NativeFunction`` does this).

Several parts of one program (``qidao/compiler/targets/cpu/lower.py`` splits a big
model over processes) can each be optimized and compiled to an object on their own
(``compile_object``, in the worker that lowered the part) and loaded together
(``JitModule.from_objects``): MCJIT links the objects' calls to each other when it
finalizes. ``pack_objects`` keeps such a set as one blob (the compile cache's
``code.o``); ``unpack_objects`` reads it back and refuses a damaged one.

Parallel loops call libgomp (``GOMP_parallel``, ``omp_get_thread_num``, ...). When the
IR names one of its entry points, ``load_openmp_runtime`` first loads ``libgomp.so.1``
into the process (once): the system's, or else the copy bundled in PyTorch's ``lib``
folder. If torch already loaded its libgomp, the loader returns that same library, so
the process keeps one OpenMP runtime and one thread pool. The JIT binds
``GOMP_parallel`` to a guard that runs the loops serially in a forked child, whose
copy of the pool has no threads (``_install_fork_guard``).

Buffers: compiled programs allocate their intermediate buffers with ``aligned_alloc``
on every call and free them before returning. glibc serves a block of more than
128 KiB with a fresh ``mmap`` and trims freed memory at the top of the heap back to
the kernel, so every call of a model with large activations page-faults its
buffers in again (Winograd's 1.8 MB transform buffers: 7 ms a call instead of
1 ms, on a loaded 2-core machine). The first JIT compile therefore raises glibc's
mmap threshold to its maximum (32 MiB) and its trim threshold to 1 GiB
(``mallopt``), the way an arena allocator keeps its memory: freed buffers stay in
the process and the next call reuses them without faults. ``QIDAO_MALLOPT=off``
leaves glibc's settings alone; other C libraries are left alone.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import threading
import weakref
from collections.abc import Mapping, Sequence

import llvmlite.binding as llvm
from llvmlite.binding.ffi import ObjectRef
from llvmlite.binding.newpassmanagers import NewPassManager

from qidao.errors import QidaoError

_init_lock = threading.RLock()  # load_openmp_runtime JIT-compiles its guard
_symbols_lock = threading.Lock()
_initialized = False


class JitError(QidaoError, RuntimeError):
    """LLVM rejected the IR or could not compile it."""


class OpenMPRuntimeError(JitError):
    """The IR calls libgomp, and no libgomp.so.1 could be loaded."""


_OPENMP_SYMBOLS = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads")
_openmp_library: str | None = None
_openmp_handles: list[ctypes.CDLL] = []
_DLOPEN_MODE = os.RTLD_GLOBAL | getattr(os, "RTLD_NODELETE", 0)


def _torch_lib_dir() -> str | None:
    """PyTorch's bundled library folder, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(next(iter(spec.submodule_search_locations)), "lib")


def load_openmp_runtime() -> str:
    """Load libgomp into the process once; return the name or path it came from.

    Tries ``libgomp.so.1`` (the dynamic loader's search, which also finds a copy
    already loaded by torch), then ``<torch>/lib/libgomp.so.1``. Raises
    ``OpenMPRuntimeError`` saying how to get one when neither loads.
    """
    global _openmp_library
    _initialize()
    with _init_lock:
        if _openmp_library is not None:
            return _openmp_library
        candidates = ["libgomp.so.1"]
        torch_lib = _torch_lib_dir()
        if torch_lib is not None:
            candidates.append(os.path.join(torch_lib, "libgomp.so.1"))
        failures: list[str] = []
        for candidate in candidates:
            try:
                # RTLD_NODELETE: never unmapped, not even by the dlclose that LLVM's
                # static destructors run at exit while libgomp's workers still spin
                # in its code (that crashed the process at exit)
                handle = ctypes.CDLL(candidate, mode=_DLOPEN_MODE)
                llvm.load_library_permanently(candidate)
            except (OSError, RuntimeError) as err:
                failures.append(f"{candidate}: {err}")
                continue
            if all(llvm.address_of_symbol(s) for s in _OPENMP_SYMBOLS):
                _openmp_handles.append(handle)
                _openmp_library = candidate
                _install_fork_guard(handle)
                return candidate
            failures.append(f"{candidate}: loaded, but it lacks {_OPENMP_SYMBOLS}")
        raise OpenMPRuntimeError(
            "this model has parallel loops, which run on libgomp (GCC's OpenMP "
            "runtime), and no libgomp.so.1 could be loaded ("
            + "; ".join(failures)
            + "). Install it (Debian/Ubuntu: apt-get install libgomp1) or install "
            "PyTorch, which bundles one; or compile without parallel loops."
        )


_FORK_GUARD_IR = """
@qidao_after_fork = global i32 0
@qidao_gomp_parallel = global ptr null

define void @qidao_gomp_parallel_guard(ptr %fn, ptr %data, i32 %threads, i32 %flags) {
entry:
  %forked = load volatile i32, ptr @qidao_after_fork
  %alone = icmp ne i32 %forked, 0
  br i1 %alone, label %serial, label %team
serial:
  call void %fn(ptr %data)
  ret void
team:
  %gomp = load ptr, ptr @qidao_gomp_parallel
  call void %gomp(ptr %fn, ptr %data, i32 %threads, i32 %flags)
  ret void
}
"""
"""``GOMP_parallel`` as the JIT-compiled code sees it (:func:`_install_fork_guard`)."""

_fork_guard: list[JitModule] = []


def _install_fork_guard(handle: ctypes.CDLL) -> None:
    """Keep parallel loops working in a child process after ``fork``.

    libgomp's thread pool does not survive ``fork``: the child inherits the pool's
    bookkeeping but not its threads, and its first parallel region waits for them
    forever (a ``DataLoader`` with workers, any ``multiprocessing`` fork, after a
    parallel kernel ran). So the JIT binds ``GOMP_parallel`` to a small guard
    (symbols added with ``llvm.add_symbol`` come before loaded libraries): in the
    process that loaded libgomp it calls libgomp's ``GOMP_parallel``; in a forked
    child (``os.register_at_fork`` sets its flag) it runs the outlined loop body
    once on the calling thread, where ``omp_get_thread_num()`` is 0 and
    ``omp_get_num_threads()`` is 1, so that one call covers every iteration: the
    child's parallel loops run serially, with the same results."""
    guard = JitModule(_FORK_GUARD_IR, opt_level=2)
    _fork_guard.append(guard)
    gomp = ctypes.cast(handle.GOMP_parallel, ctypes.c_void_p).value
    ctypes.c_void_p.from_address(
        guard.global_address("qidao_gomp_parallel")
    ).value = gomp
    flag = ctypes.c_int32.from_address(guard.global_address("qidao_after_fork"))

    def after_fork_in_child() -> None:
        flag.value = 1

    os.register_at_fork(after_in_child=after_fork_in_child)
    with _symbols_lock:
        llvm.add_symbol(
            "GOMP_parallel", guard.function_address("qidao_gomp_parallel_guard")
        )


def running_serially_after_fork() -> bool:
    """Whether this process is a fork of one that loaded libgomp, so that its
    parallel loops run on one thread (:func:`_install_fork_guard`)."""
    if not _fork_guard:
        return False
    flag = _fork_guard[0].global_address("qidao_after_fork")
    return bool(ctypes.c_int32.from_address(flag).value)


def uses_openmp(llvm_ir: str) -> bool:
    """Whether ``llvm_ir`` calls libgomp (then the runtime must be loaded first)."""
    return _uses_openmp(llvm_ir)


def _uses_openmp(llvm_ir: str) -> bool:
    return any(f"@{s}(" in llvm_ir or f'@"{s}"(' in llvm_ir for s in _OPENMP_SYMBOLS)


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -3, -4
"""glibc's ``mallopt`` parameters (``malloc.h``)."""
MMAP_THRESHOLD = 32 << 20
"""glibc's largest mmap threshold on 64-bit machines."""
TRIM_THRESHOLD = 1 << 30


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds (module docstring); False when the C
    library is not glibc or ``QIDAO_MALLOPT=off``."""
    if os.environ.get("QIDAO_MALLOPT", "").lower() == "off":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


def keep_large_buffers() -> bool:
    """Serve even buffers above glibc's largest mmap threshold (32 MiB) from the
    heap (``M_MMAP_MAX`` = 0), so that freed ones stay in the process too. A model
    compiled for a symbolic dimension's capacity has such buffers (BERT's attention
    scores at 2048 tokens: 64 MiB a layer) and touches only the part a call's size
    needs; mmapped afresh on every call, each call page-faulted that part in again:
    BERT (4 layers, hidden 256) at 128 of 2048 tokens took 7.1 ms a call, 4.4 ms
    with this (one thread). False where ``keep_freed_memory`` is off."""
    if not keep_freed_memory():
        return False
    libc = ctypes.CDLL("libc.so.6")
    libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int] * 2, ctypes.c_int
    return bool(libc.mallopt(M_MMAP_MAX, 0))


def return_freed_memory() -> bool:
    """Give the memory the process freed back to the system (glibc's
    ``malloc_trim``): ``keep_freed_memory`` keeps it for the next call's buffers,
    which is right for buffers and wrong for what a compile freed (LLVM's and the
    IR's, tens of MiB) in a process that keeps running. False where the C library
    is not glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return bool(trim(0))


def _initialize() -> None:
    global _initialized
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            keep_freed_memory()
            _initialized = True


def host_cpu() -> tuple[str, str]:
    """The host CPU name and its feature string (``+avx2,+avx512f,...``)."""
    _initialize()
    return str(llvm.get_host_cpu_name()), str(llvm.get_host_cpu_features().flatten())


def host_has(feature: str) -> bool:
    """Whether the host CPU has ``feature`` (LLVM's name: ``avx512vnni``)."""
    return f"+{feature}" in host_cpu()[1].split(",")


def _target_machine(opt_level: int) -> llvm.TargetMachine:
    cpu, features = host_cpu()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=cpu, features=features, opt=opt_level, jit=True
    )


# a definition's header; llvmlite's IR builder puts its "{" on the next line
_DEFINE = re.compile(r"^(define [^\n]*\))([^\n{]*)\n?\{", re.MULTILINE)


def _with_host_attributes(ir_text: str, cpu: str, features: str) -> str:
    """Give every defined function ``"target-cpu"``/``"target-features"`` attributes,
    and on an AVX-512 host the 512-bit vector width (see the module docstring)."""
    width = ""
    if "+avx512f" in features.split(","):
        width = ' "prefer-vector-width"="512" "min-legal-vector-width"="512"'
    group = (
        f'attributes #9999 = {{ "target-cpu"="{cpu}" "target-features"="{features}"'
        f"{width} }}"
    )

    def add(match: re.Match[str]) -> str:
        if "#" in match.group(2):
            return match.group(0)
        return f"{match.group(1)}{match.group(2)} #9999 {{"

    text, count = _DEFINE.subn(add, ir_text)
    if count == 0 or "#9999" not in text:
        return ir_text
    return f"{text}\n{group}\n"


def _parse(
    text: str, cpu: str, features: str, layout: str, context: object = None
) -> llvm.ModuleRef:
    try:
        module = llvm.parse_assembly(
            _with_host_attributes(text, cpu, features), context=context
        )
    except RuntimeError as err:
        raise JitError(f"LLVM rejected the IR: {err}") from err
    _verify(module, "the IR")
    module.triple = llvm.get_process_triple()
    module.data_layout = layout
    return module


def _verify(module: llvm.ModuleRef, what: str) -> None:
    """Raise ``JitError`` if ``module`` does not verify, freeing it first (no
    module may outlive its context, see :class:`_Native`)."""
    try:
        module.verify()
    except RuntimeError as err:
        module.close()
        raise JitError(f"LLVM rejected {what}: {err}") from err


def _optimize(module: llvm.ModuleRef, tm: llvm.TargetMachine, opt_level: int) -> None:
    """LLVM's O``opt_level`` pipeline, vectorizers and unrolling on, for ``tm``.

    Every object is closed when done (see :func:`_close_pass_manager`). A fresh
    pass builder per run is needed: llvmlite's run registers callbacks that point
    into its own stack frame on the builder's instrumentation, so a builder used
    twice would call into a dead frame. That instrumentation object is
    allocated by llvmlite (``LLVMPY_CreatePassBuilder``) and deleted by nobody:
    about 1.5 KiB of native memory per run stays in the process, which Python
    cannot reach (``tests/runtime/test_cpu_memory.py`` bounds it)."""
    if opt_level > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pto.loop_unrolling = True
        pto.loop_interleaving = True
        pass_builder = llvm.create_pass_builder(tm, pto)
        manager = pass_builder.getModulePassManager()
        try:
            manager.run(module, pass_builder)
        finally:
            _close_pass_manager(manager)
            pass_builder.close()
            pto.close()


def _close_pass_manager(manager: llvm.ModulePassManager) -> None:
    """Free a pass manager and its passes (with what they keep from their run:
    GVN's value tables, Reassociate's rank maps, ...: 86 KiB for a small model).

    llvmlite (0.44 to 0.50 at least) never frees them: ``ModulePassManager``
    derives from ``ObjectRef`` before ``NewPassManager``, so its ``close()`` finds
    ``ObjectRef._dispose``, which does nothing, instead of ``NewPassManager``'s,
    which deletes the native object. Here the right one is called, unless a later
    llvmlite fixed the order (then ``close()`` does it)."""
    if type(manager)._dispose is ObjectRef._dispose:
        NewPassManager._dispose(manager)
        manager.detach()
    else:
        manager.close()


def compile_object(text: str, opt_level: int = 3) -> bytes:
    """One part of a program (LLVM IR text), optimized as :class:`JitModule`
    optimizes a whole one and compiled to an ELF object for this CPU, in an LLVM
    context of its own. Calls to functions other parts define stay external:
    :meth:`JitModule.from_objects` links them."""
    _initialize()
    cpu, features = host_cpu()
    tm = _target_machine(opt_level)
    module = _parse(text, cpu, features, str(tm.target_data), llvm.create_context())
    _optimize(module, tm, opt_level)
    return bytes(tm.emit_object(module))


_OBJECTS_MAGIC = b"QIDAO-OBJECTS-1\n"


def pack_objects(codes: Sequence[bytes]) -> bytes:
    """Several objects as one blob (one object: itself, unchanged)."""
    if len(codes) == 1:
        return codes[0]
    sizes = b"".join(len(code).to_bytes(8, "little") for code in codes)
    return _OBJECTS_MAGIC + len(codes).to_bytes(4, "little") + sizes + b"".join(codes)


def unpack_objects(blob: bytes) -> list[bytes]:
    """The objects :func:`pack_objects` packed; raises :class:`JitError` when the
    blob is cut short or its sizes do not add up."""
    if not blob.startswith(_OBJECTS_MAGIC):
        return [blob]
    start = len(_OBJECTS_MAGIC)
    count = int.from_bytes(blob[start : start + 4], "little")
    start += 4
    if start + 8 * count > len(blob):  # a count no blob of this length can hold
        raise JitError("the packed object code is damaged (its sizes do not add up)")
    sizes = [
        int.from_bytes(blob[start + 8 * i : start + 8 * i + 8], "little")
        for i in range(count)
    ]
    start += 8 * count
    if count < 2 or start + sum(sizes) != len(blob):
        raise JitError("the packed object code is damaged (its sizes do not add up)")
    codes = []
    for size in sizes:
        codes.append(blob[start : start + size])
        start += size
    return codes


class _Native:
    """The LLVM objects of one :class:`JitModule`, freed in order when it is
    collected: the engine (with the modules and target machine it owns), the
    modules it does not own, then the LLVM context they all live in.

    Each JitModule parses its IR into a context of its own: LLVM keeps every
    constant, type and metadata string a context ever saw until the context is
    destroyed, so in llvmlite's global context each compile's constants (a
    model's small weights, its index tables) stayed in the process for good
    (37 KiB for one 256-float table). The order matters: a context destroyed
    before its modules, or an engine's modules, is a crash; Python's garbage
    collector calls the ``__del__`` of objects found unreachable together in an
    arbitrary order, so the order is kept here, by a ``weakref.finalize`` that
    holds these objects and not the JitModule. Every module parsed into the
    context is ``adopt``-ed, so that none (one held by a traceback, say)
    outlives the context. At interpreter exit nothing is freed (code of a module
    may still run on a daemon thread)."""

    def __init__(self) -> None:
        self.context = llvm.create_context()
        self.engine: llvm.ExecutionEngine | None = None
        self.modules: list[llvm.ModuleRef] = []

    @classmethod
    def of(cls, owner: object) -> _Native:
        native = cls()
        finalizer = weakref.finalize(owner, native.release)
        finalizer.atexit = False
        return native

    def adopt(self, module: llvm.ModuleRef) -> llvm.ModuleRef:
        """``module`` (parsed into ``context``), to be freed before the context
        if it is still alive then (not linked into another, not the engine's)."""
        self.modules.append(module)
        return module

    def release(self) -> None:
        if self.engine is not None:
            self.engine.close()  # frees its modules, closes their ModuleRefs
        for module in self.modules:
            module.close()  # a no-op for the closed ones
        self.context.close()


class JitModule:
    """One compiled LLVM module; function addresses stay valid while it lives.

    ``object_code`` is the machine code MCJIT made (an ELF relocatable object), when
    asked for with ``keep_object=True``; :meth:`from_object` loads such code again
    without LLVM optimizing or generating anything (the compile cache,
    ``qidao.compiler.cache``)."""

    object_code: bytes | None = None
    _texts: list[str] | None = None
    """The parts' texts of a module loaded from their objects (``from_objects``)."""
    _linked_ir: str | None = None
    _opt_level: int = 3

    def __init__(
        self,
        llvm_ir: str | Sequence[str],
        opt_level: int = 3,
        runtime_ir: str | None = None,
        symbols: Mapping[str, int] | None = None,
        keep_object: bool = False,
    ) -> None:
        """``llvm_ir``: one module's text, or several (linked into the first
        before anything is optimized; ``linked_ir`` is then the linked text).
        ``runtime_ir``: a module of helpers the first one declares and calls (the
        profile timers), linked in the same way. ``symbols``: the address of each
        ``external`` global the IR declares (its weights); the memory must outlive
        this module."""
        _initialize()
        texts = [llvm_ir] if isinstance(llvm_ir, str) else list(llvm_ir)
        if any(_uses_openmp(text) for text in texts):
            load_openmp_runtime()
        cpu, features = host_cpu()
        self.source_ir: str | None = "\n".join(texts)
        self._native = _Native.of(self)
        context = self._native.context
        self._tm = self._ir_tm = _target_machine(opt_level)
        layout = str(self._tm.target_data)
        module = self._native.adopt(_parse(texts[0], cpu, features, layout, context))
        for text in texts[1:]:
            part = self._native.adopt(_parse(text, cpu, features, layout, context))
            module.link_in(part)
        self._opt_level = opt_level
        self._linked_ir = str(module) if len(texts) > 1 else None
        if runtime_ir is not None:
            try:
                runtime = llvm.parse_assembly(runtime_ir, context=context)
            except RuntimeError as err:
                raise JitError(f"LLVM rejected the runtime IR: {err}") from err
            _verify(self._native.adopt(runtime), "the runtime IR")
            runtime.triple = module.triple
            runtime.data_layout = module.data_layout
            module.link_in(runtime)  # one module: one object
        _optimize(module, self._tm, opt_level)
        self._module: llvm.ModuleRef | None = module
        self._engine = self._native.engine = llvm.create_mcjit_compiler(
            module, self._tm
        )
        kept: list[bytes] = []  # not a method of self: the engine would keep it
        if keep_object:
            self._engine.set_object_cache(
                lambda module, code: kept.append(bytes(code)), lambda module: None
            )
        self._finalize(symbols)
        if kept:
            self.object_code = kept[0]

    def _finalize(self, symbols: Mapping[str, int] | None) -> None:
        with _symbols_lock:  # the symbol table is the process's: bind, then link
            for name, address in (symbols or {}).items():
                llvm.add_symbol(name, address)
            self._engine.finalize_object()
        self._engine.run_static_constructors()

    @classmethod
    def from_object(
        cls,
        code: bytes,
        symbols: Mapping[str, int] | None = None,
        uses_openmp: bool = False,
    ) -> JitModule:
        """Load machine code a :class:`JitModule` made with ``keep_object=True`` (or
        :meth:`from_objects`) on this CPU (the caller checks that), binding its
        ``external`` globals to ``symbols``. It has no IR: ``optimized_ir`` and
        ``assembly`` raise."""
        return cls.from_objects(unpack_objects(code), symbols, uses_openmp)

    @classmethod
    def from_objects(
        cls,
        codes: Sequence[bytes],
        symbols: Mapping[str, int] | None = None,
        uses_openmp: bool = False,
        texts: Sequence[str] | None = None,
        opt_level: int = 3,
    ) -> JitModule:
        """Load the objects of one program's parts (:func:`compile_object`) into
        one engine, which links their calls to each other, binding the
        ``external`` globals to ``symbols``. ``texts``, the parts' LLVM IR, make
        ``linked_ir``, ``optimized_ir`` and ``assembly`` when asked for (none:
        those raise)."""
        _initialize()
        if uses_openmp:
            load_openmp_runtime()
        self = cls.__new__(cls)
        self._texts = list(texts) if texts is not None else None
        self._opt_level = opt_level
        self.source_ir = "\n".join(self._texts) if self._texts is not None else None
        self.object_code = pack_objects(list(codes))
        self._native = _Native.of(self)
        self._tm = self._ir_tm = _target_machine(0)
        empty = self._native.adopt(
            llvm.parse_assembly("", context=self._native.context)
        )
        empty.triple = llvm.get_process_triple()
        empty.data_layout = str(self._tm.target_data)
        self._module = None
        self._engine = self._native.engine = llvm.create_mcjit_compiler(empty, self._tm)
        try:
            for code in codes:
                self._engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        except RuntimeError as err:
            raise JitError(f"LLVM could not load the object code: {err}") from err
        self._finalize(symbols)
        return self

    def function_address(self, name: str) -> int:
        """The native address of the function ``name``; raises if it is not defined."""
        address = int(self._engine.get_function_address(name))
        if address == 0:
            raise JitError(f"no function named '{name}' in the compiled module")
        return address

    def global_address(self, name: str) -> int:
        """The native address of the global variable ``name``."""
        address = int(self._engine.get_global_value_address(name))
        if address == 0:
            raise JitError(f"no global named '{name}' in the compiled module")
        return address

    def has_function(self, name: str) -> bool:
        return bool(self._engine.get_function_address(name))

    def optimized_ir(self) -> str:
        """The LLVM IR text after optimization."""
        return str(self._ir_module())

    def assembly(self) -> str:
        """The host assembly of the optimized module."""
        module = self._ir_module()
        return str(self._ir_tm.emit_assembly(module))

    @property
    def linked_ir(self) -> str | None:
        """The parts' LLVM IR linked into one module, before optimization (None
        for a module of one text, or loaded as machine code alone)."""
        if self._linked_ir is None and self._texts is not None and len(self._texts) > 1:
            module = self._linked(self._texts)
            self._linked_ir = str(module)
            module.close()  # its text is what is kept
        return self._linked_ir

    def _linked(self, texts: Sequence[str]) -> llvm.ModuleRef:
        cpu, features = host_cpu()
        layout = str(self._tm.target_data)
        context = self._native.context
        module = self._native.adopt(_parse(texts[0], cpu, features, layout, context))
        for text in texts[1:]:
            part = self._native.adopt(_parse(text, cpu, features, layout, context))
            module.link_in(part)
        return module

    def _ir_module(self) -> llvm.ModuleRef:
        if self._module is None and self._texts is not None:
            # compiled part by part: the same pipeline once more, on the whole
            module = self._linked(self._texts)
            tm = _target_machine(self._opt_level)
            _optimize(module, tm, self._opt_level)
            self._module, self._ir_tm = module, tm
        if self._module is None:
            raise JitError("this module was loaded as machine code: it has no IR")
        return self._module


CpuEngine = JitModule


def jit_compile(
    llvm_ir: str | Sequence[str],
    opt_level: int = 3,
    runtime_ir: str | None = None,
    symbols: Mapping[str, int] | None = None,
    keep_object: bool = False,
) -> JitModule:
    """Parse, optimize for the host CPU and JIT-compile ``llvm_ir`` (with
    ``runtime_ir``, a module of helpers it calls, linked in; ``symbols`` binds the
    ``external`` globals it declares to addresses; ``keep_object`` keeps the machine
    code in ``.object_code``)."""
    return JitModule(llvm_ir, opt_level, runtime_ir, symbols, keep_object)
