"""``qidao.frontend.onnx.staged``: models with ``NonZero`` of a runtime tensor,
compiled in stages cut at the node, against ONNX Runtime.

The stage before the cut runs the bounded ``NonZero`` (positions and count), the
host cuts the positions, and the rest compiles per count. Each case compares
every output (values, shapes and dtypes) with ONNX Runtime over inputs with
different counts, none and all entries included.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import qidao
from qidao.frontend.errors import DataDependentShapeError, OnnxImportError
from qidao.frontend.onnx.specialize import Specialized
from qidao.frontend.onnx.staged import Staged

T = TensorProto


def _model(
    nodes: list[Any],
    inputs: list[Any],
    outputs: list[Any],
    initializers: list[Any] = (),  # type: ignore[assignment]
) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def _out(name: str, elem_type: int, shape: list[Any]) -> Any:
    return helper.make_tensor_value_info(name, elem_type, shape)


def _check(
    model: onnx.ModelProto, *arrays: np.ndarray[Any, Any], compiled: Any = None
) -> list[Any]:
    """qidao's outputs equal ONNX Runtime's (value, shape, dtype); ``compiled``:
    ``qidao.compile(model)`` made once for several calls (else a fresh one)."""
    if compiled is None:
        compiled = qidao.compile(model)
    names = [i.name for i in model.graph.input]
    expected = ort.InferenceSession(model.SerializeToString()).run(
        None, dict(zip(names, arrays, strict=True))
    )
    got = compiled(*arrays)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)
    return got


X = helper.make_tensor_value_info("x", T.FLOAT, [3, 4])


def _masked_sum_model() -> onnx.ModelProto:
    """``x > 0.5`` -> NonZero -> Transpose -> GatherND of ``x * x`` -> ReduceSum,
    with an output from before the cut (``sq``) and the cut's shape."""
    half = numpy_helper.from_array(np.array(0.5, np.float32), "half")
    return _model(
        [
            helper.make_node("Greater", ["x", "half"], ["m"]),
            helper.make_node("Mul", ["x", "x"], ["sq"]),
            helper.make_node("NonZero", ["m"], ["nz"]),
            helper.make_node("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
            helper.make_node("GatherND", ["sq", "nzt"], ["vals"]),
            helper.make_node("ReduceSum", ["vals"], ["s"], keepdims=0),
            helper.make_node("Shape", ["nz"], ["shape"]),
        ],
        [X],
        [
            _out("vals", T.FLOAT, [None]),
            _out("s", T.FLOAT, []),
            _out("sq", T.FLOAT, [3, 4]),
            _out("shape", T.INT64, [2]),
        ],
        [half],
    )


@pytest.mark.parametrize(
    ("dtype", "elem_type"),
    [(np.float32, T.FLOAT), (np.int64, T.INT64), (np.bool_, T.BOOL)],
)
def test_nonzero_alone_matches_ort(dtype: Any, elem_type: int) -> None:
    model = _model(
        [helper.make_node("NonZero", ["x"], ["nz"])],
        [helper.make_tensor_value_info("x", elem_type, [2, 3, 2])],
        [_out("nz", T.INT64, [3, None])],
    )
    rng = np.random.default_rng(0)
    compiled = qidao.compile(model)  # one program, each count of its own
    for fill in ("random", "none", "all"):
        x = rng.integers(0, 2, (2, 3, 2)).astype(dtype)
        x = np.zeros_like(x) if fill == "none" else x
        x = np.ones_like(x) if fill == "all" else x
        _check(model, x, compiled=compiled)


def test_the_rest_compiles_once_per_count_and_is_cached() -> None:
    model = _masked_sum_model()
    compiled = qidao.compile(model)
    assert isinstance(compiled, Specialized)
    rng = np.random.default_rng(1)
    inputs = [rng.random((3, 4)).astype(np.float32) for _ in range(3)]
    inputs += [np.zeros((3, 4), np.float32), inputs[0]]  # count 0; a count again
    counts = set()
    for x in inputs:
        _check(model, x)  # a fresh compile each time
        got = compiled(x)
        np.testing.assert_allclose(got[0], (x * x)[x > 0.5], rtol=1e-6)
        counts.add(int((x > 0.5).sum()))
    staged = compiled.latest
    assert isinstance(staged, Staged) and staged.rest is not None
    assert staged.rest.compiles == len(counts)  # per count, cached
    assert compiled.compiles == 1  # the stage before: once
    assert staged.stats["cut"] == "NonZero node '#2'"
    assert len(staged.stats["stages"]) == 2
    text = compiled.ir("tg")
    assert "tg.nonzero_indices" in text and "// stage 2" in text
    assert "tg.gather_nd" in text.split("// stage 2")[1]
    assert [s.name for s in compiled.outputs] == ["vals", "s", "sq", "shape"]


def test_a_weight_read_after_the_cut_stays_a_constant() -> None:
    """A tensor the rest reads that folds before the cut (a transposed weight)
    becomes a constant of the rest, not a runtime output of the stage before."""
    w = numpy_helper.from_array(np.arange(8, dtype=np.float32).reshape(4, 2), "w")
    model = _model(
        [
            helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
            helper.make_node("NonZero", ["x"], ["nz"]),
            helper.make_node("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
            helper.make_node("Cast", ["nzt"], ["nzf"], to=T.FLOAT),
            helper.make_node("MatMul", ["nzf", "wt"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", T.FLOAT, [2, 4])],
        [_out("y", T.FLOAT, [None, 4])],
        [w],
    )
    _check(model, np.array([[0, 1, 0, 2], [3, 0, 0, 0]], np.float32))
    staged = qidao.compile(model)
    staged(np.ones((2, 4), np.float32))
    assert isinstance(staged.latest, Staged)
    assert "wt" in staged.latest.constants
    assert "wt" not in staged.latest.first_outputs


def test_two_cuts_run_three_programs() -> None:
    """A NonZero after another is cut in the rest the same way."""
    model = _model(
        [
            helper.make_node("NonZero", ["x"], ["nz"]),
            helper.make_node("ReduceSum", ["nz"], ["s"], keepdims=0),
            helper.make_node("Cast", ["nz"], ["nzf"], to=T.FLOAT),
            helper.make_node("NonZero", ["nzf"], ["nz2"]),
            helper.make_node("Shape", ["nz2"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", T.FLOAT, [5])],
        [_out("y", T.INT64, [2]), _out("s", T.INT64, [])],
    )
    _check(model, np.array([0, 2, 0, 3, 1], np.float32))
    _check(model, np.array([0, 0, 0, 0, 0], np.float32))
    compiled = qidao.compile(model)
    compiled(np.array([1, 2, 0, 3, 1], np.float32))
    assert isinstance(compiled.latest, Staged)
    rest = compiled.latest.rest
    assert rest is not None and isinstance(rest.latest, Staged)


def test_a_nonzero_of_a_constant_folds_and_compiles_ahead() -> None:
    c = numpy_helper.from_array(np.array([0, 3, 0, 4], np.float32), "c")
    model = _model(
        [
            helper.make_node("NonZero", ["c"], ["nz"]),
            helper.make_node("Cast", ["nz"], ["nzf"], to=T.FLOAT),
            helper.make_node("ReduceSum", ["nzf"], ["r"], keepdims=0),
            helper.make_node("Add", ["x", "r"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", T.FLOAT, [2])],
        [_out("y", T.FLOAT, [2])],
        [c],
    )
    assert not isinstance(qidao.compile(model), Specialized)
    _check(model, np.array([1, 2], np.float32))


def test_nonzero_inside_an_if_branch_is_refused_by_name() -> None:
    branch = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["inner"])],
        "then",
        [],
        [_out("inner", T.INT64, [2, None])],
    )
    model = _model(
        [
            helper.make_node(
                "If", ["cond"], ["y"], then_branch=branch, else_branch=branch
            )
        ],
        [X, helper.make_tensor_value_info("cond", T.BOOL, [])],
        [_out("y", T.INT64, [2, None])],
    )
    compiled = qidao.compile(model)
    with pytest.raises(OnnxImportError, match="inside an If/Loop/Scan body"):
        compiled(np.ones((3, 4), np.float32), np.array(True))


def test_nonzero_of_a_scalar_is_refused() -> None:
    model = _model(
        [helper.make_node("NonZero", ["x"], ["nz"])],
        [helper.make_tensor_value_info("x", T.FLOAT, [])],
        [_out("nz", T.INT64, [0, None])],
    )
    with pytest.raises(OnnxImportError, match="NonZero of a scalar"):
        qidao.compile(model)(np.array(1.0, np.float32))


def test_the_error_without_staging_names_the_node() -> None:
    """``import_onnx`` alone (no staging) says why it cannot go on."""
    from qidao.frontend.onnx import import_onnx

    with pytest.raises(
        DataDependentShapeError, match=r"NonZero node '#2'.*size is data"
    ):
        import_onnx(_masked_sum_model())


def test_gradients_need_one_static_program() -> None:
    with pytest.raises(qidao.UnsupportedError, match="grad="):
        qidao.compile(_masked_sum_model(), grad=["x"])


@pytest.mark.parametrize("axis", [0, -1, None])
def test_compress_by_a_runtime_condition_matches_ort(axis: int | None) -> None:
    length = {0: 3, -1: 3, None: 10}[axis]  # shorter than the axis for -1 (4)
    attrs = {} if axis is None else {"axis": axis}
    model = _model(
        [
            helper.make_node("Compress", ["x", "c"], ["picked"], **attrs),
            helper.make_node("Neg", ["picked"], ["y"]),
        ],
        [X, helper.make_tensor_value_info("c", T.BOOL, [length])],
        [_out("y", T.FLOAT, [None] * (1 if axis is None else 2))],
    )
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    compiled = qidao.compile(model)  # one program, each count of its own
    for c in (rng.integers(0, 2, length), np.zeros(length), np.ones(length)):
        _check(model, x, c.astype(bool), compiled=compiled)


def test_compress_by_a_constant_condition_compiles_ahead() -> None:
    c = numpy_helper.from_array(np.array([True, False, True]), "c")
    model = _model(
        [helper.make_node("Compress", ["x", "c"], ["y"], axis=0)],
        [X],
        [_out("y", T.FLOAT, [2, 4])],
        [c],
    )
    assert not isinstance(qidao.compile(model), Specialized)
    _check(model, np.arange(12, dtype=np.float32).reshape(3, 4))


def test_compress_with_a_condition_longer_than_the_axis_is_refused() -> None:
    model = _model(
        [helper.make_node("Compress", ["x", "c"], ["y"], axis=0)],
        [X, helper.make_tensor_value_info("c", T.BOOL, [5])],
        [_out("y", T.FLOAT, [None, 4])],
    )
    with pytest.raises(OnnxImportError, match="5 entries, more than the 3"):
        qidao.compile(model)(np.ones((3, 4), np.float32), np.ones(5, bool))


def _unique_model(shape: list[int], elem_type: int, **attrs: Any) -> onnx.ModelProto:
    rank = len(shape)
    y_rank = 1 if "axis" not in attrs else rank
    return _model(
        [
            helper.make_node(
                "Unique", ["x"], ["y", "indices", "inverse", "counts"], **attrs
            ),
            helper.make_node("Shape", ["y"], ["y_shape"]),
        ],
        [helper.make_tensor_value_info("x", elem_type, shape)],
        [
            _out("y", elem_type, [None] * y_rank),
            _out("indices", T.INT64, [None]),
            _out("inverse", T.INT64, [None]),
            _out("counts", T.INT64, [None]),
            _out("y_shape", T.INT64, [y_rank]),
        ],
    )


@pytest.mark.parametrize("sort", [1, 0])
@pytest.mark.parametrize(
    ("shape", "axis"), [([10], None), ([3, 4], None), ([5, 3], 0), ([2, 6], -1)]
)
def test_unique_of_a_runtime_tensor_matches_ort(
    shape: list[int], axis: int | None, sort: int
) -> None:
    attrs: dict[str, int] = {"sorted": sort}
    if axis is not None:
        attrs["axis"] = axis
    doubled = list(shape)
    if axis is not None:  # every slice twice: equal slices to merge
        doubled[axis] *= 2
    model = _unique_model(doubled, T.FLOAT, **attrs)
    compiled = qidao.compile(model)  # one program, each count of its own
    rng = np.random.default_rng(3)
    for high in (3, 1, 100):  # repeats; one value; (almost) all distinct
        x = rng.integers(0, high, shape).astype(np.float32)
        if axis is not None:
            x = np.concatenate([x, x], axis=axis)
        _check(model, x, compiled=compiled)


def test_unique_of_integers_counts_each_value_once() -> None:
    model = _unique_model([8], T.INT64)
    x = np.array([5, -1, 5, 7, -1, 5, 0, 7], np.int64)
    y, indices, inverse, counts, _ = _check(model, x)
    np.testing.assert_array_equal(y, [-1, 0, 5, 7])
    np.testing.assert_array_equal(indices, [1, 6, 0, 3])  # first occurrences
    np.testing.assert_array_equal(y[inverse], x)
    np.testing.assert_array_equal(counts, [2, 1, 3, 2])


@pytest.mark.parametrize("sort", [1, 0])
def test_unique_of_a_constant_folds_and_compiles_ahead(sort: int) -> None:
    """The folder against ONNX Runtime (ONNX's reference evaluator sorts even
    with ``sorted = 0``; the conformance case and ONNX Runtime do not)."""
    c = numpy_helper.from_array(np.array([[3, 1], [1, 2], [3, 1]], np.int64), "c")
    model = _model(
        [
            helper.make_node(
                "Unique", ["c"], ["u", "i", "inv", "n"], axis=0, sorted=sort
            ),
            helper.make_node("Cast", ["u"], ["uf"], to=T.FLOAT),
            helper.make_node("Add", ["x", "uf"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", T.FLOAT, [2, 2])],
        [
            _out("y", T.FLOAT, [2, 2]),
            _out("i", T.INT64, [2]),
            _out("inv", T.INT64, [3]),
            _out("n", T.INT64, [2]),
        ],
        [c],
    )
    assert not isinstance(qidao.compile(model), Specialized)
    _check(model, np.zeros((2, 2), np.float32))


def _nms_model(
    batches: int, classes: int, boxes: int, center: int, given: tuple[str, ...]
) -> onnx.ModelProto:
    """NonMaxSuppression with its thresholds as graph inputs (``given``) or
    initializers (max 3, IoU 0.4, score 0.2)."""
    values = {
        "max": numpy_helper.from_array(np.array([3], np.int64), "max"),
        "iou": numpy_helper.from_array(np.array([0.4], np.float32), "iou"),
        "score": numpy_helper.from_array(np.array([0.2], np.float32), "score"),
    }
    types = {"max": T.INT64, "iou": T.FLOAT, "score": T.FLOAT}
    return _model(
        [
            helper.make_node(
                "NonMaxSuppression",
                ["boxes", "scores", "max", "iou", "score"],
                ["selected"],
                center_point_box=center,
            )
        ],
        [
            helper.make_tensor_value_info("boxes", T.FLOAT, [batches, boxes, 4]),
            helper.make_tensor_value_info("scores", T.FLOAT, [batches, classes, boxes]),
            *(helper.make_tensor_value_info(n, types[n], [1]) for n in given),
        ],
        [_out("selected", T.INT64, [None, 3])],
        [t for n, t in values.items() if n not in given],
    )


@pytest.mark.parametrize("center", [0, 1])
def test_nms_matches_ort(center: int) -> None:
    rng = np.random.default_rng(4)
    model = _nms_model(2, 3, 12, center, ())
    compiled = qidao.compile(model)  # one program, each count of its own
    for _ in range(3):
        boxes = rng.uniform(0, 10, (2, 12, 4)).astype(np.float32)
        if center:
            boxes[..., 2:] = rng.uniform(0.5, 6, (2, 12, 2))
        scores = rng.uniform(0, 1, (2, 3, 12)).astype(np.float32)
        scores[0, 0, 3] = scores[0, 0, 5]  # a tie: the lower index first
        boxes[1, 4] = boxes[1, 7]  # identical boxes
        boxes[0, 2, 2] = boxes[0, 2, 0]  # a box of no area
        _check(model, boxes, scores, compiled=compiled)


def test_nms_thresholds_as_inputs_are_bound_per_value() -> None:
    """Thresholds given at the call are bound (a specialization per value);
    every one of them changes which boxes are kept."""
    model = _nms_model(1, 2, 8, 0, ("max", "iou", "score"))
    rng = np.random.default_rng(5)
    boxes = rng.uniform(0, 10, (1, 8, 4)).astype(np.float32)
    scores = rng.uniform(0, 1, (1, 2, 8)).astype(np.float32)
    for limit, iou, score in ((2, 0.5, 0.0), (8, 0.1, 0.5), (0, 0.5, 0.0)):
        _check(
            model,
            boxes,
            scores,
            np.array([limit], np.int64),
            np.array([iou], np.float32),
            np.array([score], np.float32),
        )
