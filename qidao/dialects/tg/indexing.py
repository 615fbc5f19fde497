"""Indexing ops: ``tg.concat``, ``tg.slice`` and ``tg.gather`` (constant indices).

- ``tg.concat`` joins N tensors along one axis into a new row-major tensor (a copy).
- ``tg.slice`` takes ``start:stop:step`` of every dimension (steps >= 1). It is a
  **view**, like PyTorch's basic slicing: the result type keeps the storage and
  multiplies the strides by the steps, and the start moves the layout's offset,
  ``tensor<2x2xf32, strided<[4, 2], offset: 1>>``. The strided layout already carries
  an offset through every other view (``transpose``, ``view``, ``broadcast``), the
  memref types below spell it the same way, and the back ends (LLVM and CUDA) add it
  to every address, so a slice costs nothing until a kernel reads it. An empty result
  (a dimension of size 0) is plain row-major: it has no element to place.
- ``tg.gather`` picks entries of one axis by a list of constant indices,
  ``np.take(x, indices, axis)``, into a new row-major tensor (a copy). Indices may be
  negative (counting from the end, as in NumPy); one outside ``[-size, size)`` is a
  verifier error. Indices of any shape are a 1-D gather and a reshape, which the
  frontends build. Indices that are runtime values (token ids) take ``tg.take``
  instead (``dynamic_indexing.py``), whose kernel loads each index.

Like the layout ops, these work on any element type.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, DenseArrayBase, IntegerAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp, i64_array, ints, normalize_axis, tensor
from qidao.dialects.tg.layout import num_elements
from qidao.dialects.tg.types import (
    fmt_shape,
    offset_of,
    shape_of,
    strides_of,
    tensor_type,
)


@irdl_op_definition
class ConcatOp(TgOp):
    """Join tensors along ``axis``: every other dimension must match, the result's
    ``axis`` is the sum of theirs (``np.concatenate``). The result is row-major.

    ```mlir
    %c = tg.concat %a, %b axis = 1 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<2x7xf32>
    ```
    """

    name = "tg.concat"
    inputs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$inputs `axis` `=` $axis attr-dict `:` `(` type($inputs) `)` `->` "
        "type($result)"
    )

    def __init__(self, inputs: Sequence[SSAValue], axis: int) -> None:
        t = self.infer([tensor(v) for v in inputs], axis)
        super().__init__(
            operands=[list(inputs)],
            result_types=[t],
            properties={"axis": IntegerAttr(axis, 64)},
        )

    @staticmethod
    def infer(inputs: Sequence[TensorType[Attribute]], axis: int) -> Attribute:
        """The row-major result type, or an error naming the operand that does not
        fit."""
        if not inputs:
            raise VerifyException("tg.concat expects at least one operand, got none")
        first = inputs[0]
        rank = len(first.get_shape())
        if rank == 0:
            raise VerifyException(
                f"tg.concat expects tensors of rank >= 1, but operand #0 is {first}"
            )
        a = normalize_axis(axis, rank, "tg.concat")
        shape = list(shape_of(first))
        for k, t in enumerate(inputs[1:], start=1):
            other = shape_of(t)
            if t.get_element_type() != first.get_element_type():
                raise VerifyException(
                    f"tg.concat expects operands of one element type, but operand "
                    f"#{k} is {t} and operand #0 is {first}"
                )
            if len(other) != rank or any(
                d != e
                for i, (d, e) in enumerate(zip(other, shape, strict=True))
                if i != a
            ):
                raise VerifyException(
                    f"tg.concat: operand #{k} {t} must have the shape of operand #0 "
                    f"{first} in every dimension but axis {a}"
                )
            shape[a] += other[a]
        return tensor_type(shape, first.get_element_type())

    def normalized_axis(self) -> int:
        rank = len(tensor(self.inputs[0]).get_shape()) if self.inputs else 0
        return normalize_axis(self.axis.value.data, rank, self.name)

    def verify_(self) -> None:
        self.verify_tensors()
        types = [tensor(v) for v in self.inputs]
        self.expect_result_type(self.infer(types, self.axis.value.data))


@irdl_op_definition
class SliceOp(TgOp):
    """``x[start[0]:stop[0]:step[0], ...]``: a strided view, no data moves.

    One ``start``, ``stop`` and ``step`` per dimension, with
    ``0 <= start <= stop <= size`` and ``step >= 1``; the result has
    ``ceil((stop - start) / step)`` entries in the dimension. (``Graph.slice`` takes
    Python's negative and out-of-range bounds and normalizes them.) The result's
    strides are the input's times the steps, its offset the input's plus the start.

    ```mlir
    %s = tg.slice %x start = [0, 1] stop = [2, 4] step = [1, 2] : tensor<2x4xf32> -> tensor<2x2xf32, strided<[4, 2], offset: 1>>
    ```
    """

    name = "tg.slice"
    input = operand_def(TensorType)
    start = prop_def(DenseArrayBase.constr(I64))
    stop = prop_def(DenseArrayBase.constr(I64))
    step = prop_def(DenseArrayBase.constr(I64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `start` `=` $start `stop` `=` $stop `step` `=` $step attr-dict `:` "
        "type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        start: Sequence[int],
        stop: Sequence[int],
        step: Sequence[int] | None = None,
    ) -> None:
        steps = tuple(step) if step is not None else (1,) * len(start)
        t = self.infer(tensor(input), tuple(start), tuple(stop), steps)
        super().__init__(
            operands=[input],
            result_types=[t],
            properties={
                "start": i64_array(start),
                "stop": i64_array(stop),
                "step": i64_array(steps),
            },
        )

    @staticmethod
    def infer(
        input: TensorType[Attribute],
        start: tuple[int, ...],
        stop: tuple[int, ...],
        step: tuple[int, ...],
    ) -> Attribute:
        """The strided view type, or an error naming the dimension that is wrong."""
        shape = shape_of(input)
        for what, values in (("start", start), ("stop", stop), ("step", step)):
            if len(values) != len(shape):
                raise VerifyException(
                    f"tg.slice: {what} must have one value per dimension of the input "
                    f"{input} ({len(shape)}), got {fmt_shape(values)}"
                )
        sizes = []
        for d, (size, lo, hi, st) in enumerate(
            zip(shape, start, stop, step, strict=True)
        ):
            if st < 1:
                raise VerifyException(
                    f"tg.slice: step must be >= 1, got {st} in dimension {d} "
                    f"(steps {fmt_shape(step)})"
                )
            if not 0 <= lo <= hi <= size:
                raise VerifyException(
                    f"tg.slice: dimension {d} of the input {input} needs "
                    f"0 <= start <= stop <= {size}, got start {lo} and stop {hi}"
                )
            sizes.append(-(-(hi - lo) // st))
        element = input.get_element_type()
        if num_elements(sizes) == 0:
            return tensor_type(sizes, element)
        strides = strides_of(input)
        offset = offset_of(input) + sum(
            s * lo for s, lo in zip(strides, start, strict=True)
        )
        new_strides = [s * st for s, st in zip(strides, step, strict=True)]
        return tensor_type(sizes, element, new_strides, offset)

    def bounds(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """``(start, stop, step)`` of every dimension."""
        return ints(self.start), ints(self.stop), ints(self.step)

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_result_type(self.infer(tensor(self.input), *self.bounds()))


@irdl_op_definition
class GatherOp(TgOp):
    """``np.take(x, indices, axis)`` with constant 1-D ``indices``: result entry
    ``j`` of ``axis`` is input entry ``indices[j]`` (negative ones count from the
    end). The result is row-major; an index may repeat or go backwards.

    ```mlir
    %g = tg.gather %x axis = 1 indices = [2, 0, -1] : tensor<2x3xf32> -> tensor<2x3xf32>
    ```
    """

    name = "tg.gather"
    input = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    indices = prop_def(DenseArrayBase.constr(I64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `axis` `=` $axis `indices` `=` $indices attr-dict `:` type($input) "
        "`->` type($result)"
    )

    def __init__(self, input: SSAValue, axis: int, indices: Sequence[int]) -> None:
        t = tensor(input)
        a = _gather_axis(t, axis)
        normalized = _normalize_indices(t, a, tuple(int(i) for i in indices))
        super().__init__(
            operands=[input],
            result_types=[self.infer(t, a, normalized)],
            properties={"axis": IntegerAttr(a, 64), "indices": i64_array(normalized)},
        )

    @staticmethod
    def infer(
        input: TensorType[Attribute], axis: int, indices: tuple[int, ...]
    ) -> Attribute:
        a = _gather_axis(input, axis)
        _normalize_indices(input, a, indices)
        shape = list(shape_of(input))
        shape[a] = len(indices)
        return tensor_type(shape, input.get_element_type())

    def normalized_axis(self) -> int:
        return _gather_axis(tensor(self.input), self.axis.value.data)

    def normalized_indices(self) -> tuple[int, ...]:
        """The indices in ``[0, size)`` of the gathered axis."""
        t = tensor(self.input)
        return _normalize_indices(t, self.normalized_axis(), ints(self.indices))

    def verify_(self) -> None:
        self.verify_tensors()
        self.expect_result_type(
            self.infer(tensor(self.input), self.axis.value.data, ints(self.indices))
        )


def _gather_axis(input: TensorType[Attribute], axis: int) -> int:
    rank = len(input.get_shape())
    if rank == 0:
        raise VerifyException(f"tg.gather expects a tensor of rank >= 1, got {input}")
    return normalize_axis(axis, rank, "tg.gather")


def _normalize_indices(
    input: TensorType[Attribute], axis: int, indices: tuple[int, ...]
) -> tuple[int, ...]:
    """Indices in ``[0, size)``, or an error naming the index and the bound."""
    size = shape_of(input)[axis]
    for k, index in enumerate(indices):
        if not -size <= index < size:
            raise VerifyException(
                f"tg.gather: index {index} (#{k}) is out of range for axis {axis} of "
                f"size {size} of the input {input} (valid: {-size} to {size - 1})"
            )
    return tuple(i % size for i in indices)
