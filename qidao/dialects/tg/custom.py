"""``tg.custom``: a user-defined operator, carried in the IR with its meaning.

A custom op (``qidao.custom_op`` in the frontend) is a name, a forward written with
tg ops and, optionally, a vector-Jacobian product written with tg ops. ``tg.custom``
holds all three, so nothing below the frontend needs the Python registry: the IR
prints, parses and verifies on its own.

- ``op_name``: the user's name, ``"namespace::name"`` (``"demo::swish"``), the one
  an ONNX node (domain ``demo``, op type ``swish``) or a ``torch.library`` op has;
- ``body``: the forward. Its block arguments are the operands; it ends in
  ``tg.custom_yield`` of the results;
- ``grad``: the vjp, or empty (no block) when the op has none. Its block arguments
  are the operands, then the results, then one gradient per result (the results'
  shapes and element types, row-major); it yields one gradient per operand, of the
  operand's shape and element type.

The ``autodiff`` pass differentiates a ``tg.custom`` by copying its ``grad`` ops
(``qidao/dialects/tg/grad/custom.py``); ``expand-custom`` then replaces each op by
its body, so the passes below see ordinary tg ops. ``numpy_eval`` runs the body.

``tg.custom_yield`` ends both regions. It is not ``tg.yield``: that one may only sit
in a ``tg.fused`` (its ``HasParent``), and ``fused.py`` cannot name this op without
an import cycle.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.base import TgOp
from qidao.dialects.tg.types import element_of, shape_of, tensor_type

OP_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*::[A-Za-z_][A-Za-z0-9_]*$")
"""A custom op's name: ``namespace::name`` (the namespace may hold dots, as ONNX
domains such as ``com.example`` do)."""


def _types(types: Sequence[Attribute]) -> str:
    return ", ".join(str(t) for t in types)


def gradient_type(t: Attribute) -> Attribute:
    """The type of the gradient of a value of type ``t``: its shape and element
    type, row-major (what the autodiff pass hands a vjp rule)."""
    return tensor_type(shape_of(t), element_of(t))


@irdl_op_definition
class CustomOp(TgOp):
    """A user-defined op: its forward (``body``) and its vjp (``grad``, may be empty).

    ```mlir
    %y = tg.custom "demo::swish" %x : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>):
      %s = tg.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
      %r = tg.mul %a, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      tg.custom_yield %r : tensor<4xf32>
    } grad {
    ^bb0(%a: tensor<4xf32>, %r: tensor<4xf32>, %dr: tensor<4xf32>):
      %s = tg.sigmoid %a : tensor<4xf32> -> tensor<4xf32>
      %one = tg.constant dense<1.000000e+00> : tensor<f32>
      %t = tg.sub %one, %s : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
      %u = tg.mul %r, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %d = tg.add %s, %u : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %da = tg.mul %dr, %d : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      tg.custom_yield %da : tensor<4xf32>
    }
    ```

    Without a vjp the grad region is empty: ``... -> tensor<4xf32> {...} grad {}``.
    """

    name = "tg.custom"
    op_name = prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    grad = region_def()
    traits = traits_def(Pure(), IsolatedFromAbove())
    assembly_format = (
        "$op_name $inputs attr-dict `:` `(` type($inputs) `)` `->` type($outputs) "
        "$body `grad` $grad"
    )

    def __init__(
        self,
        op_name: str,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        grad: Region | None = None,
    ) -> None:
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={"op_name": StringAttr(op_name)},
            regions=[body, Region() if grad is None else grad],
        )

    @property
    def label(self) -> str:
        """How messages name the op: ``tg.custom 'demo::swish'``."""
        return f"tg.custom '{self.op_name.data}'"

    def has_vjp(self) -> bool:
        return bool(self.grad.blocks)

    def verify_(self) -> None:
        self.verify_tensors()
        if not OP_NAME.match(self.op_name.data):
            raise VerifyException(
                f"{self.label}: the name must be 'namespace::name' (letters, digits, "
                "'_'; dots in the namespace)"
            )
        in_types = [i.type for i in self.inputs]
        out_types = [r.type for r in self.results]
        self._verify_region(self.body.block, "body", in_types, out_types, exact=True)
        if len(self.grad.blocks) > 1:
            raise VerifyException(
                f"{self.label}: the grad region must have one block or none, it has "
                f"{len(self.grad.blocks)}"
            )
        if self.grad.blocks:
            grad_args = [*in_types, *out_types, *(gradient_type(t) for t in out_types)]
            self._verify_region(
                self.grad.block, "grad", grad_args, in_types, exact=False
            )

    def _verify_region(
        self,
        block: Block,
        region: str,
        arg_types: Sequence[Attribute],
        yield_types: Sequence[Attribute],
        exact: bool,
    ) -> None:
        """Block arguments of ``arg_types``; a ``tg.custom_yield`` of ``yield_types``
        (``exact``: the types themselves, else their shapes and element types)."""
        got_args = [a.type for a in block.args]
        if got_args != list(arg_types):
            raise VerifyException(
                f"{self.label}: the {region} arguments ({_types(got_args)}) must be "
                f"({_types(arg_types)})"
            )
        last = block.last_op
        if not isinstance(last, CustomYieldOp):
            raise VerifyException(
                f"{self.label}: the {region} must end with tg.custom_yield"
            )
        yielded = [v.type for v in last.values]
        if exact:
            same = yielded == list(yield_types)
        else:
            same = len(yielded) == len(yield_types) and all(
                shape_of(a) == shape_of(b) and element_of(a) == element_of(b)
                for a, b in zip(yielded, yield_types, strict=True)
            )
        if not same:
            what = "results" if region == "body" else "operands (one gradient each)"
            raise VerifyException(
                f"{self.label}: the {region} yields ({_types(yielded)}) but the op's "
                f"{what} are ({_types(yield_types)})"
            )


@irdl_op_definition
class CustomYieldOp(TgOp):
    """Ends a ``tg.custom`` region: the results of ``body``, the operand gradients
    of ``grad``.

    ```mlir
    %y = tg.custom "demo::double" %x : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%a: tensor<4xf32>):
      %r = tg.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      tg.custom_yield %r : tensor<4xf32>
    } grad {
    }
    ```

    Its parent must be a ``tg.custom``: checked in ``verify_`` rather than by the
    ``HasParent`` trait, so that the example above is a whole op (the op-registry
    test wraps an op with ``HasParent`` in a ``tg.fused``).
    """

    name = "tg.custom_yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), Pure())
    assembly_format = "$values attr-dict `:` type($values)"

    def __init__(self, *values: SSAValue) -> None:
        super().__init__(operands=[values])

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is not None and not isinstance(parent, CustomOp):
            raise VerifyException(
                f"tg.custom_yield must end a tg.custom region, not one of {parent.name}"
            )
