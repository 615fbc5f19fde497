"""The cases of ``qidao fuzz``: each is a kind and a seed, built and run here, inside a
worker process (``qidao/fuzz/run.py`` runs the workers and survives their crashes
and hangs).

A case returns ``("ok", "")`` when qidao gave the right answer (matching ONNX Runtime
or NumPy) or ``("wrong", what)`` when it gave a wrong one; an exception it raises is
classified by :func:`classify`: a ``QidaoError`` (or a missing file) is a clear
refusal, anything else a *raw* error (a bug: an internal error reached the user).

==========  =========================================================================
kind        the case
==========  =========================================================================
graph       a random ONNX graph (a chain of elementwise ops, reductions, softmax,
            transposes and matmuls on random shapes, inputs with special values:
            +-0, +-inf, NaN, huge and tiny) compiled and compared with ONNX Runtime
checks      a Gather, GatherElements, integer Div or Mod of random shapes, dtypes and
            values (some indices outside the axis, some zero divisors) compiled with
            ``checks=True``: it raises ``CheckError`` exactly where ONNX Runtime
            raises, and matches ONNX Runtime elsewhere
schedule    a small matmul or elementwise kernel with a random sequence of schedule
            primitives and arguments (legal or not): each refused primitive must be a
            ``ScheduleError``; the result must match NumPy
mlir        a valid tg ``.mlir`` file with random mutations (bytes flipped, lines
            dropped or repeated, truncation): a clear error, or a model that runs
onnx        a valid ``.onnx`` file with random byte mutations, the same
records     a records file with a damaged line (wrong types, missing fields, garbage
            traces): a ``RecordsError``
cli         random ``qidao`` command lines (commands, options, values, missing and
            garbage files): an exit status, never a traceback
cache       a model compiled into a cache folder of its own, its entry tampered
            with (bytes flipped, files cut, swapped, forged, replaced by symlinks,
            FIFOs or folders; junk beside it; folders and the key made unsafe or
            symlinked): NumPy's answer, a hit only when nothing that matters
            changed, and ``qidao cache info``/``clear`` touch nothing outside the
            cache (``qidao/fuzz/cache.py``)
training    a training step (SGD or Adam, checks and update-in-place on or off)
            against PyTorch over good steps, bad inputs and hyper-parameter
            assignments: PyTorch's weights and states after each step, and
            every refusal a ``QidaoError`` that changes nothing
            (``qidao/fuzz/training.py``)
==========  =========================================================================
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from qidao.fuzz.cache import cache_case
from qidao.fuzz.training import training_case

KINDS: tuple[str, ...] = (
    "graph",
    "checks",
    "schedule",
    "mlir",
    "onnx",
    "records",
    "cli",
    "cache",
    "training",
)

SPECIAL = np.array(
    [0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-30, 3.0],
    np.float32,
)

Result = tuple[str, str]


def run_case(kind: str, seed: int) -> Result:
    """Build and run case ``(kind, seed)``; ``(status, detail)``."""
    if kind not in CASES:
        raise ValueError(f"unknown fuzz kind {kind!r}; the kinds are {KINDS}")
    rng = np.random.default_rng([seed, KINDS.index(kind) if kind in KINDS else 99])
    with tempfile.TemporaryDirectory(prefix="qidao-fuzz-") as folder:
        try:
            return CASES[kind](rng, Path(folder))
        except Exception as err:
            return classify(err)


def classify(err: BaseException) -> Result:
    """A clear refusal (``refused``) or a raw error (``raw``), with its message."""
    from qidao.errors import QidaoError

    text = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    if isinstance(err, QidaoError | FileNotFoundError):
        return "refused", text[:300]
    return "raw", text[:300]


# --- graph: random ONNX graphs against ONNX Runtime --------------------------------

UNARY = (
    "Relu",
    "Abs",
    "Neg",
    "Exp",
    "Log",
    "Sqrt",
    "Tanh",
    "Sigmoid",
    "Floor",
    "Ceil",
    "Reciprocal",
    "Sin",
    "Cos",
    "Erf",
    "Sign",
)
BINARY = ("Add", "Sub", "Mul", "Div", "Max", "Min")
REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin")


def _values(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    data = np.asarray(rng.standard_normal(shape) * 3, dtype=np.float32)
    mask = rng.random(shape) < 0.3
    data[mask] = rng.choice(SPECIAL, size=int(mask.sum()))
    return data


def _graph_model(rng: np.random.Generator) -> tuple[Any, dict[str, Any]]:
    from onnx import TensorProto, helper, numpy_helper

    rank = int(rng.integers(1, 4))
    shape = [int(d) for d in rng.integers(1, 8, size=rank)]
    nodes: list[Any] = []
    inits: list[Any] = []
    current, current_shape = "x", list(shape)
    for k in range(int(rng.integers(1, 7))):
        out = f"t{k}"
        choice = rng.random()
        if choice < 0.45:
            nodes.append(helper.make_node(str(rng.choice(UNARY)), [current], [out]))
        elif choice < 0.75:
            other = f"c{k}"
            # a constant of the same shape, or one that broadcasts (trailing dims)
            cshape = current_shape[int(rng.integers(0, len(current_shape) + 1)) :]
            inits.append(numpy_helper.from_array(_values(rng, tuple(cshape)), other))
            operands = [current, other] if rng.random() < 0.5 else [other, current]
            nodes.append(helper.make_node(str(rng.choice(BINARY)), operands, [out]))
        elif choice < 0.85 and len(current_shape) >= 1:
            axis = int(rng.integers(0, len(current_shape)))
            keep = int(rng.integers(0, 2))
            axes = f"a{k}"
            inits.append(numpy_helper.from_array(np.array([axis], np.int64), axes))
            op = str(rng.choice(REDUCE))
            nodes.append(helper.make_node(op, [current, axes], [out], keepdims=keep))
            current_shape = (
                [1 if i == axis else d for i, d in enumerate(current_shape)]
                if keep
                else [d for i, d in enumerate(current_shape) if i != axis]
            )
            if not current_shape:  # a scalar: back to rank 1
                shape_name = f"s{k}"
                inits.append(
                    numpy_helper.from_array(np.array([1], np.int64), shape_name)
                )
                nodes.append(
                    helper.make_node("Reshape", [out, shape_name], [out + "r"])
                )
                out, current_shape = out + "r", [1]
        elif choice < 0.92:
            axis = int(rng.integers(-len(current_shape), len(current_shape)))
            nodes.append(helper.make_node("Softmax", [current], [out], axis=axis))
        else:
            perm = [int(p) for p in rng.permutation(len(current_shape))]
            nodes.append(helper.make_node("Transpose", [current], [out], perm=perm))
            current_shape = [current_shape[p] for p in perm]
        current = out
    nodes.append(helper.make_node("Identity", [current], ["y"]))
    graph = helper.make_graph(
        nodes,
        "fuzz",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model, {"x": _values(rng, tuple(shape))}


def _close(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any]) -> str:
    """Empty when ``got`` matches ``want`` (NaN where NaN, infinities of the same
    sign, finite values to rtol 1e-3 and atol 1e-4 of the largest magnitude), else
    what differs."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    with np.errstate(all="ignore"):
        return _differences(got, want)


def _differences(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any]) -> str:
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    bad = _bad(got, want)
    if not bad.any():
        return ""
    i = tuple(int(v) for v in np.argwhere(bad)[0])
    return f"{int(bad.sum())} element(s) differ, first at {i}: {got[i]} vs {want[i]}"


def _bad(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any]) -> Any:
    """Where ``got`` does not match ``want`` (see :func:`_close`), of the same
    shape."""
    nan = np.isnan(got) != np.isnan(want)
    finite = np.isfinite(want)
    inf = ~finite & ~np.isnan(want) & (got != want)
    scale = float(np.max(np.abs(want[finite]), initial=1.0))
    off = finite & ~(np.abs(got - want) <= 1e-3 * np.abs(want) + 1e-4 * scale)
    return nan | inf | off


def _graph_case(rng: np.random.Generator, folder: Path) -> Result:
    import onnxruntime as ort

    import qidao

    model, inputs = _graph_model(rng)
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        with np.errstate(all="ignore"):
            (want,) = session.run(None, inputs)
    except Exception:
        return "ok", "skipped: ONNX Runtime rejects the graph"
    with np.errstate(all="ignore"):
        (got,) = qidao.compile(model)(*inputs.values())
    diff = _close(got, want)
    ops = "-".join(n.op_type for n in model.graph.node)
    if diff:  # the spec's reference decides where ONNX Runtime differs from it
        from onnx.reference import ReferenceEvaluator

        with np.errstate(all="ignore"):
            outputs: Any = ReferenceEvaluator(model).run(None, inputs)
        reference = np.asarray(outputs[0])
        if not _close(got, reference):
            return (
                "ok",
                f"{ops}: differs from ONNX Runtime ({diff}) as ONNX's reference",
            )
        # each element as ONNX Runtime or as the reference, wherever it agrees
        with np.errstate(all="ignore"):
            as_reference = ~_bad(np.asarray(got, np.float64), reference)
        either = np.where(as_reference, reference, want)
        if _only_where_ill_conditioned(model, inputs, got, either):
            return "ok", (
                f"{ops}: differs from ONNX Runtime ({diff}) as ONNX's reference, "
                "or where a sine or cosine of |x| >= 2^24 decides the answer "
                "(ill-conditioned)"
            )
    return ("wrong", f"{ops}: {diff}") if diff else ("ok", ops)


PERIOD_LIMIT = 2.0**24
"""From here on one float32 ulp is 2 or more: a sine or cosine of such an argument
is decided by the argument's last bit, so a one-ulp difference anywhere before it
(a correctly rounded ``sin`` against NumPy's, which is not always) changes the
answer entirely. No implementation is wrong there; such an element proves
nothing."""


def _only_where_ill_conditioned(
    model: Any, inputs: dict[str, Any], got: Any, want: Any
) -> bool:
    """Whether every element where ``got`` and ``want`` differ depends on a ``Sin``
    or ``Cos`` of a finite argument of magnitude :data:`PERIOD_LIMIT` or more.

    ONNX's reference evaluates the graph three times with those sines and cosines
    replaced: by NaN, by 0.25 and by -0.25. An element depends on them if it is NaN
    the first time and a number at least once otherwise (every op here propagates
    NaN; a NaN of the inputs' own is NaN all three times)."""
    runs = [_with_periodic_replaced(model, inputs, v) for v in (np.nan, 0.25, -0.25)]
    if any(r is None or r.shape != np.shape(want) for r in runs):
        return False
    tainted, plus, minus = (np.asarray(r, np.float64) for r in runs)
    depends = np.isnan(tainted) & ~(np.isnan(plus) & np.isnan(minus))
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    with np.errstate(all="ignore"):
        keep = ~depends
        return not _differences(np.where(keep, got, 0.0), np.where(keep, want, 0.0))


def _with_periodic_replaced(
    model: Any, inputs: dict[str, Any], value: float
) -> np.ndarray[Any, Any] | None:
    """The graph's output in ONNX's reference with each element of a ``Sin`` or
    ``Cos`` whose argument is finite and at least :data:`PERIOD_LIMIT` in magnitude
    replaced by ``value``; None if the graph has no ``Sin`` or ``Cos``."""
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    changed = type(model)()
    changed.CopyFrom(model)
    nodes = []
    for node in changed.graph.node:
        nodes.append(node)
        if node.op_type not in ("Sin", "Cos"):
            continue
        x, y = node.input[0], node.output[0]
        node.output[0] = f"{y}_raw"
        nodes += [
            helper.make_node("Abs", [x], [f"{y}_abs"]),
            helper.make_node("Less", [f"{y}_abs", f"{y}_limit"], [f"{y}_small"]),
            helper.make_node("IsInf", [x], [f"{y}_inf"]),
            helper.make_node("IsNaN", [x], [f"{y}_nan"]),
            helper.make_node("Or", [f"{y}_small", f"{y}_inf"], [f"{y}_some"]),
            helper.make_node("Or", [f"{y}_some", f"{y}_nan"], [f"{y}_kept"]),
            helper.make_node("Where", [f"{y}_kept", f"{y}_raw", f"{y}_value"], [y]),
        ]
        changed.graph.initializer.extend(
            [
                helper.make_tensor(f"{y}_limit", TensorProto.FLOAT, [], [PERIOD_LIMIT]),
                helper.make_tensor(f"{y}_value", TensorProto.FLOAT, [], [value]),
            ]
        )
    if len(nodes) == len(changed.graph.node):
        return None
    del changed.graph.node[:]
    changed.graph.node.extend(nodes)
    with np.errstate(all="ignore"):
        (output,) = ReferenceEvaluator(changed).run(None, inputs)
    return np.asarray(output)


# --- schedule: random primitives on a small kernel -------------------------------

PRIMITIVES = ("split", "reorder", "unroll", "vectorize", "parallel", "tile", "peel")


def _argument(rng: np.random.Generator) -> Any:
    return rng.choice(
        np.array([0, -1, 1, 2, 3, 4, 7, 8, 16, 33, 1 << 20, True, "x"], dtype=object)
    )


def _schedule_case(rng: np.random.Generator, folder: Path) -> Result:
    import qidao
    from qidao.frontend.builder import Graph

    m, k, n = (int(v) for v in rng.integers(1, 40, size=3))
    g = Graph("main")
    x = g.input("x", (m, k))
    matmul = rng.random() < 0.6
    if matmul:
        w = g.input("w", (k, n))
        g.output(g.relu(x @ w))
    else:
        g.output(g.tanh(x * 2.0) + 1.0)
    applied: list[str] = []

    def schedule(s: Any) -> None:
        kernel = next(iter(s.kernels()))
        for _ in range(int(rng.integers(1, 6))):
            loops = s.loops(kernel)
            method = str(rng.choice(PRIMITIVES))
            loop = str(rng.choice(loops))
            if method == "reorder":
                args: list[Any] = [str(v) for v in rng.permutation(loops)[:3]]
            elif method == "tile":
                args = [loop, str(rng.choice(loops)), _argument(rng), _argument(rng)]
            elif method in ("parallel", "peel"):
                args = [loop]
            else:
                args = [loop, _argument(rng)]
            try:
                getattr(s, method)(kernel, *args)
                applied.append(f"{method}{tuple(args)}")
            except qidao.QidaoError:
                pass  # a clear refusal; the schedule goes on

    threads = int(rng.integers(1, 3))
    compiled = qidao.compile(g, schedule=schedule, threads=threads)
    xs = rng.standard_normal((m, k)).astype(np.float32)
    if matmul:
        ws = rng.standard_normal((k, n)).astype(np.float32)
        (got,) = compiled(xs, ws)
        want = np.maximum(xs @ ws, 0)
    else:
        (got,) = compiled(xs)
        want = np.tanh(xs * 2.0) + 1.0
    diff = _close(got, want)
    what = f"{m}x{k}x{n} {'; '.join(applied)}"
    return ("wrong", f"{what}: {diff}") if diff else ("ok", what)


# --- mutated files -----------------------------------------------------------------


def _mutate(rng: np.random.Generator, data: bytes, lines: bool) -> bytes:
    out = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        choice = rng.random()
        if lines and choice < 0.3:
            parts = bytes(out).split(b"\n")
            i = int(rng.integers(0, len(parts)))
            if rng.random() < 0.5:
                del parts[i]
            else:
                parts.insert(i, parts[i])
            out = bytearray(b"\n".join(parts))
        elif choice < 0.6 and out:
            i = int(rng.integers(0, len(out)))
            out[i] = int(rng.integers(0, 256))
        elif choice < 0.8 and out:
            out = out[: int(rng.integers(0, len(out)))]
        else:
            i = int(rng.integers(0, len(out) + 1))
            out[i:i] = bytes(int(b) for b in rng.integers(0, 256, size=4))
    return bytes(out)


def _small_graph() -> Any:
    from qidao.frontend.builder import Graph

    g = Graph("main")
    x = g.input("x", (3, 5))
    w = g.constant(np.arange(10, dtype=np.float32).reshape(5, 2) / 10)
    g.output(g.softmax(g.relu(x @ w) + 1.0, -1))
    return g


def _run_random(
    compiled: Any, rng: np.random.Generator, onnx_path: Path | None = None
) -> Result:
    """Call a model that compiled on random inputs of its specs: it must run. A
    model compiled at its first call (dynamic dimensions, integer inputs) has no
    specs yet: its ONNX graph inputs say the dtypes, a dynamic dimension is 2."""
    from qidao.frontend.onnx.specialize import NotCompiledYetError

    try:
        specs = [(s.shape, s.dtype) for s in compiled.inputs]
    except NotCompiledYetError:
        if onnx_path is None:
            raise
        specs = _declared_inputs(onnx_path)
    inputs = [_random_input(rng, shape, dtype) for shape, dtype in specs]
    compiled(*inputs)
    return "ok", "compiled and ran"


def _declared_inputs(path: Path) -> list[tuple[tuple[int, ...], Any]]:
    """The shape and dtype of each graph input of an ONNX file (a dynamic
    dimension: 2)."""
    import onnx
    from onnx import helper

    graph = onnx.load(path, load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    specs = []
    for value in graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dims = tuple(
            d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 2
            for d in tensor.shape.dim
        )
        specs.append((dims, helper.tensor_dtype_to_np_dtype(tensor.elem_type)))
    return specs


def _random_input(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: Any
) -> np.ndarray[Any, Any]:
    if np.dtype(dtype).kind in "iub":
        return rng.integers(0, 2, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _mlir_case(rng: np.random.Generator, folder: Path) -> Result:
    import qidao

    text = qidao.compile(_small_graph()).ir("input").encode()
    path = folder / "mutated.mlir"
    path.write_bytes(_mutate(rng, text, lines=True))
    return _run_random(qidao.compile(path), rng)


def _onnx_bytes() -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.arange(10, dtype=np.float32).reshape(5, 2), "w")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("Softmax", ["r"], ["y"], axis=-1),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return bytes(model.SerializeToString())


def _onnx_case(rng: np.random.Generator, folder: Path) -> Result:
    import qidao

    path = folder / "mutated.onnx"
    path.write_bytes(_mutate(rng, _onnx_bytes(), lines=False))
    return _run_random(qidao.compile(path), rng, onnx_path=path)


# --- records -----------------------------------------------------------------------

GARBAGE: tuple[Any, ...] = (
    None,
    True,
    -1,
    1e308,
    "x",
    "",
    [],
    [1, 2],
    {},
    {"kind": "matmul"},
    "s.split(",
    "not a schedule",
)


def _records_case(rng: np.random.Generator, folder: Path) -> Result:
    import qidao
    from qidao.compiler.tune.records import Record
    from qidao.compiler.tune.task import Task
    from qidao.frontend.builder import Graph

    g = Graph("main")
    x, w = g.input("x", (4, 8)), g.input("w", (8, 4))
    g.output(x @ w)
    task = Task("matmul", "tg.matmul", ((4, 8), (8, 4), (4, 4)))
    record = Record(
        task, 1, {}, 's.split("main_k0_matmul", "i", 2)\n', "main_k0_matmul", "ok"
    )
    data = json.loads(record.to_json())
    for _ in range(int(rng.integers(1, 3))):
        key = str(rng.choice(sorted(data)))
        if rng.random() < 0.2:
            del data[key]
        else:
            data[key] = GARBAGE[int(rng.integers(0, len(GARBAGE)))]
    path = folder / "records.jsonl"
    path.write_text(record.to_json() + "\n" + json.dumps(data) + "\n")
    compiled = qidao.compile(g, records=path, threads=1)
    xs, ws = np.ones((4, 8), np.float32), np.ones((8, 4), np.float32)
    diff = _close(compiled(xs, ws)[0], xs @ ws)
    return ("wrong", diff) if diff else ("ok", "the damaged line was not needed")


# --- the command line --------------------------------------------------------------

COMMANDS = ("compile", "run", "cache")
WORDS = (
    "--emit",
    "tg",
    "affine",
    "llvm",
    "nope",
    "--stats",
    "--mode",
    "eager",
    "--inputs",
    "--save",
    "--seed",
    "-3",
    "--algo",
    "winograd",
    "--target",
    "cuda",
    "--no-fuse",
    "info",
    "book",
    "chain",
    "matmul2x3x4",
    "matmul0x1x1",
    "{missing}",
    "{garbage}",
    "{npz}",
    "",
)


def _cli_case(rng: np.random.Generator, folder: Path) -> Result:
    """``python -m qidao`` with random arguments, in a process of its own: its exit
    status and its stderr, which must hold no traceback."""
    garbage = folder / "garbage.onnx"
    garbage.write_bytes(bytes(int(b) for b in rng.integers(0, 256, size=64)))
    npz = folder / "in.npz"
    np.savez(npz, x=np.ones((1, 1), np.float32))
    names = {
        "{missing}": str(folder / "missing.onnx"),
        "{garbage}": str(garbage),
        "{npz}": str(npz),
    }
    words = [str(rng.choice(WORDS)) for _ in range(int(rng.integers(0, 5)))]
    argv = [str(rng.choice(COMMANDS)), *(names.get(w, w) for w in words)]
    if argv[0] == "cache" and "clear" in argv:  # never clear the user's cache
        argv.remove("clear")
    done = subprocess.run(
        [sys.executable, "-m", "qidao", *argv],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=folder,  # `run --save NAME` writes NAME.npz here, not in the caller's
    )
    line = f"qidao {' '.join(argv)} -> {done.returncode}"
    if "Traceback" in done.stderr:
        return "raw", f"{line}: {done.stderr.strip().splitlines()[-1][:200]}"
    if done.returncode < 0:
        return "crash", f"{line}: killed by signal {-done.returncode}"
    return "ok", line


# --- checks: gathers and integer divisions with checks=True against ONNX Runtime -----

INT_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _checks_model(rng: np.random.Generator) -> tuple[Any, dict[str, Any], str]:
    """A Gather, GatherElements, Div or Mod on random shapes and values, some out of
    the op's domain (indices outside the axis, zero divisors)."""
    from onnx import TensorProto, helper

    op = str(rng.choice(["Gather", "GatherElements", "Div", "Mod"]))
    rank = int(rng.integers(1, 4))
    shape = [int(d) for d in rng.integers(1, 6, size=rank)]
    if op in ("Div", "Mod"):
        dtype = np.dtype(str(rng.choice(INT_TYPES)))
        low = 0 if dtype.kind == "u" else -100
        a = rng.integers(low, 100, size=shape).astype(dtype)
        b = rng.integers(low, 100, size=shape).astype(dtype)
        zeros = rng.random(shape) < float(rng.choice([0.0, 0.05, 0.5]))
        b[zeros] = 0
        b[(b == 0) & ~zeros] = 1
        inputs = {"a": a, "b": b}
        out_type = helper.np_dtype_to_tensor_dtype(dtype)
        node = helper.make_node(op, ["a", "b"], ["y"], name="n")
    else:
        axis = int(rng.integers(-rank, rank))
        n = shape[axis]
        ishape = (
            [int(d) for d in rng.integers(0, 4, size=int(rng.integers(0, 3)))]
            if op == "Gather"
            else [int(rng.integers(1, d + 1)) for d in shape]
        )
        spread = int(rng.choice([n, 2 * n, 1000]))
        indices = rng.integers(-spread, spread, size=ishape)
        inside = rng.random(ishape) < float(rng.choice([1.0, 0.9]))
        indices = np.where(inside, np.clip(indices, -n, n - 1), indices)
        x = rng.standard_normal(shape).astype(np.float32)
        inputs = {"x": x, "i": indices.astype(str(rng.choice(["int32", "int64"])))}
        out_type = TensorProto.FLOAT
        node = helper.make_node(op, ["x", "i"], ["y"], name="n", axis=axis)
    infos = [
        helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape
        )
        for name, v in inputs.items()
    ]
    graph = helper.make_graph(
        [node], "fuzz", infos, [helper.make_tensor_value_info("y", out_type, None)]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model, inputs, op


def _checks_case(rng: np.random.Generator, folder: Path) -> Result:
    import onnxruntime as ort

    import qidao

    model, inputs, op = _checks_model(rng)
    quiet = ort.SessionOptions()
    quiet.log_severity_level = 4  # its error is compared, not logged
    session = ort.InferenceSession(
        model.SerializeToString(), quiet, providers=["CPUExecutionProvider"]
    )
    try:
        (want,) = session.run(None, inputs)
        theirs = ""
    except Exception as err:  # ORT's own error: qidao must raise too
        want, theirs = None, str(err).splitlines()[0][:120]
    mode = str(rng.choice(["graph", "eager"]))
    compiled = qidao.compile(model, checks=True, mode=mode)
    try:
        (got,) = compiled(*inputs.values())
    except qidao.CheckError as err:
        if want is None:
            return "ok", f"{op}: both raise ({err})"[:300]
        return "wrong", f"{op} ({mode}): CheckError '{err}', ONNX Runtime returns"
    if want is not None:
        diff = _close(got, want)
        return ("wrong", f"{op} ({mode}): {diff}") if diff else ("ok", op)
    return "wrong", f"{op} ({mode}): no CheckError, ONNX Runtime raises: {theirs}"


# --- the harness's own checks ------------------------------------------------------


def _crash(rng: np.random.Generator, folder: Path) -> Result:
    import ctypes

    ctypes.string_at(0)  # a segmentation fault, as a native bug would give
    return "ok", ""  # pragma: no cover


def _hang(rng: np.random.Generator, folder: Path) -> Result:
    import time

    time.sleep(3600)
    return "ok", ""  # pragma: no cover


def _raw(rng: np.random.Generator, folder: Path) -> Result:
    table: dict[str, Result] = {}
    return table["no such key"]  # a KeyError, as a raw internal error


CASES: dict[str, Callable[[np.random.Generator, Path], Result]] = {
    "graph": _graph_case,
    "checks": _checks_case,
    "schedule": _schedule_case,
    "mlir": _mlir_case,
    "onnx": _onnx_case,
    "records": _records_case,
    "cli": _cli_case,
    "cache": cache_case,
    "training": training_case,
    "selftest-crash": _crash,
    "selftest-hang": _hang,
    "selftest-raw": _raw,
}
"""Every kind; the ``selftest-`` ones check that the harness records a crash, a
hang and a raw error."""
