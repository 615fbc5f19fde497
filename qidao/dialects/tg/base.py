"""Shared pieces of tg op definitions: operand checks and the op families.

Every tg op takes and returns tensors (value semantics, static shapes). Result types
are inferred by the op's constructor and checked again by its verifier, so a builder
never spells a result type and a hand-written ``.mlir`` file can never lie about one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, IntegerType, TensorType, f16, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.types import (
    fmt_shape,
    is_float,
    is_storage_only,
    kind_of,
    kinds_text,
    numel,
    verify_tensor_type,
)


class TgOp(IRDLOperation):
    """Base of every tg op: operands and results are verified tg tensors."""

    KERNEL_KIND: ClassVar[str] = "elementwise"
    """The kind of kernel the op makes, which picks its default schedule
    (``qidao.compiler.defaults.kind_of``): ``matmul``, ``conv2d``, ``pool`` and
    ``other`` (nothing to schedule) when the op leads its kernel, ``rows`` (a
    reduction along the last axis: any such op makes a fused kernel ``rows``), else
    ``elementwise``."""

    FUSION: ClassVar[str] = "boundary"
    """What the op is to the ``fuse`` pass (``qidao/passes/graph/fuse.py``):
    ``elementwise`` (joins an elementwise chain, a matmul/conv2d epilogue or a row
    group), ``reduction`` (a :class:`~qidao.dialects.tg.reduce.ReduceOp` that seeds
    and joins a row group when it reduces trailing axes), ``anchor`` (heads a group
    with its elementwise epilogue: matmul, conv2d), else ``boundary`` (a kernel of
    its own). The pass adds the rules that depend on an op's operands and place
    (shapes, element types, uses, an ``update`` attribute, being inside a
    ``tg.fused`` already)."""

    FREE: ClassVar[bool] = False
    """True when the op computes nothing: a constant, or a view whose result is its
    input's memory read another way. It costs no FLOPs, and checkpointing and the
    optimizer read through it (``qidao/dialects/tg/cost.py``)."""

    STORAGE: ClassVar[bool] = False
    """True when the op takes and gives the storage-only element types (bf16, the
    float8s, f4E2M1FN, i4, ui4, i2, ui2: ``types.STORAGE_ONLY``) as they are:
    ``tg.cast``, ``tg.constant``, the views and ``tg.fused``. Every other op refuses
    them (:meth:`verify_tensors`); a frontend casts to the compute type and back."""

    def flops(self) -> int:
        """The floating-point (or integer) operations of one run
        (``qidao.dialects.tg.cost.flops``): none for a ``FREE`` op, else one per
        element of its largest operand or result (an elementwise op per output, a
        reduction per input element). An op that does more per element overrides
        this (matmul, conv2d, a ``tg.fused`` body)."""
        return 0 if self.FREE else per_element_flops(self)

    def verify_tensors(self) -> None:
        for i, operand in enumerate(self.operands):
            verify_tensor_type(operand.type, f"{self.name} operand #{i}")
            self._expect_computable(operand.type, f"operand #{i}")
        for i, result in enumerate(self.results):
            verify_tensor_type(result.type, f"{self.name} result #{i}")
            self._expect_computable(result.type, f"result #{i}")

    def _expect_computable(self, t: Attribute, what: str) -> None:
        """A storage-only element type only where the op is ``STORAGE``."""
        if self.STORAGE or not isinstance(t, TensorType):
            return
        element = t.get_element_type()
        if is_storage_only(element):
            raise VerifyException(
                f"{self.name} does not compute on {element} ({what} is {t}): it is a "
                "storage-only element type; tg.cast it to f32 (a small integer to "
                "i8 or ui8) first"
            )

    def expect_result_type(self, expected: Attribute) -> None:
        """The result type must equal the one the op's rules give."""
        got = self.results[0].type
        if got != expected:
            operands = ", ".join(str(o.type) for o in self.operands)
            raise VerifyException(
                f"{self.name} on ({operands}) must produce {expected}, but its result "
                f"type is {got}"
            )

    def expect_float(self) -> None:
        """Every operand is f32 or f64: the ops that accumulate or keep running
        state do not compute f16 (a frontend casts to f32 around them)."""
        for i, operand in enumerate(self.operands):
            if not is_float(operand.type):
                raise VerifyException(
                    f"{self.name} expects float tensors, but operand #{i} is "
                    f"{operand.type}"
                )
            if tensor(operand).get_element_type() == f16:
                raise VerifyException(
                    f"{self.name} expects f32 or f64 tensors, but operand #{i} is "
                    f"{operand.type} (f16 goes through tg.cast to f32 and back)"
                )

    def expect_kinds(self, kinds: frozenset[str]) -> None:
        """Every operand has an element type of ``kinds`` (see ``types.py``)."""
        for i, operand in enumerate(self.operands):
            t = operand.type
            if not isinstance(t, TensorType):
                continue
            if kind_of(t.get_element_type()) not in kinds:
                raise VerifyException(
                    f"{self.name} expects {kinds_text(kinds)} tensors, but operand "
                    f"#{i} is {t}"
                )

    def expect_same_element_type(self) -> None:
        types = [o.type for o in self.operands]
        elements = {t.get_element_type() for t in types if isinstance(t, TensorType)}
        if len(elements) > 1:
            listed = ", ".join(str(t) for t in types)
            raise VerifyException(
                f"{self.name} expects operands of one element type, got ({listed})"
            )


def per_element_flops(op: Operation) -> int:
    """One operation per element of ``op``'s largest operand or result."""
    return max((numel(v.type) for v in (*op.operands, *op.results)), default=0)


def tensor(value: SSAValue, what: str = "operand") -> TensorType[Attribute]:
    t = value.type
    if not isinstance(t, TensorType):
        raise VerifyException(f"{what} must be a tensor, got {t}")
    return t


def i64_array(values: Sequence[int]) -> DenseArrayBase[IntegerType]:
    return DenseArrayBase.from_list(i64, list(values))


def ints(attr: DenseArrayBase[IntegerType]) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def normalize_axis(axis: int, rank: int, op: str) -> int:
    """A non-negative axis, or a verifier error naming the op and the rank."""
    if not -rank <= axis < max(rank, 1):
        raise VerifyException(
            f"{op}: axis {axis} is out of range for a tensor of rank {rank}"
        )
    return axis % rank if rank else 0


def axis_of(op: str, input: TensorType[Attribute], axis: int) -> int:
    """``axis`` of ``input`` (a tensor of rank >= 1) made non-negative, or a
    verifier error naming the op: the axis of a gather, scan or sort."""
    rank = len(input.get_shape())
    if rank == 0:
        raise VerifyException(f"{op} expects an input of rank >= 1, got {input}")
    return normalize_axis(axis, rank, op)


def expect_length(op: str, what: str, values: Sequence[int], length: int) -> None:
    if len(values) != length:
        raise VerifyException(
            f"{op}: {what} must have {length} values, got {fmt_shape(values)}"
        )
