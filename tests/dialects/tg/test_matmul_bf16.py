"""``tg.matmul_bf16`` (``qidao/dialects/tg/matmul_bf16.py``) in Python: the panel
packing (``pack_bf16``, ``unpack_bf16``, ``panel_width``) against NumPy, the
reference (and the NumPy evaluator) against a float32 ``matmul`` of the widened
operands, plain and packed, batched, and the verifier's errors (the same rules
as ``tests/filecheck/dialects/tg/matmul_bf16_invalid.mlir``, through the
constructor and ``verify``)."""

from __future__ import annotations

import re
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import BFloat16Type, Float16Type, StringAttr, f32
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.utils.exceptions import VerifyException

from qidao.dialects.tg.matmul_bf16 import (
    BF16_PANELS,
    MatmulBf16Op,
    matmul_bf16_reference,
    pack_bf16,
    panel_width,
    unpack_bf16,
)
from qidao.dialects.tg.numpy_eval import evaluate
from qidao.dialects.tg.types import shape_of, tensor_type

Array = np.ndarray[Any, Any]
BF16 = BFloat16Type()
RNG = np.random.default_rng(7)


def bf16(*shape: int) -> Array:
    return RNG.standard_normal(shape).astype(ml_dtypes.bfloat16)


def values(*types: tuple[tuple[int, ...], Attribute]) -> list[SSAValue]:
    """Block arguments of the tensor types ``(shape, element)``."""
    block = Block(arg_types=[tensor_type(shape, element) for shape, element in types])
    return list(block.args)


@pytest.mark.parametrize(("k", "n", "w"), [(2, 16, 16), (8, 64, 32), (6, 48, 16)])
def test_pack_is_pairs_of_rows_in_column_panels(k: int, n: int, w: int) -> None:
    b = bf16(k, n)
    packed = pack_bf16(b, w)
    assert packed.shape == (n // w, k // 2, w, 2)
    assert packed.dtype == b.dtype and packed.flags.c_contiguous
    for kk in range(k):
        for nn in range(n):
            assert packed[nn // w, kk // 2, nn % w, kk % 2] == b[kk, nn]
    # one pair of rows of 16 columns is 32 consecutive bfloat16s (a 64-byte load)
    flat = packed.reshape(-1)
    np.testing.assert_array_equal(flat[:32:2], b[0, :16])
    np.testing.assert_array_equal(flat[1:32:2], b[1, :16])
    back = unpack_bf16(packed)
    assert back.shape == (k, n)
    np.testing.assert_array_equal(back, b)


@pytest.mark.parametrize("seed", range(5))
def test_pack_unpack_round_trip_random(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = 2 * int(rng.integers(1, 40))
    n = 16 * int(rng.integers(1, 9))
    b = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    for w in {16, panel_width(n)}:
        packed = pack_bf16(b, w)
        # bit for bit, through the bits too
        assert (unpack_bf16(packed).view(np.uint16) == b.view(np.uint16)).all()
        assert sorted(packed.reshape(-1).view(np.uint16)) == sorted(
            b.reshape(-1).view(np.uint16)
        )


def test_pack_refuses_odd_k_and_ragged_n() -> None:
    with pytest.raises(ValueError, match="K = 3 must be even and N = 32"):
        pack_bf16(bf16(3, 32), 32)
    with pytest.raises(
        ValueError, match="K = 4 must be even and N = 48 a multiple of 32"
    ):
        pack_bf16(bf16(4, 48), 32)


@pytest.mark.parametrize(
    ("n", "w"), [(16, 16), (32, 32), (48, 16), (64, 32), (80, 16), (96, 32)]
)
def test_panel_width_is_32_where_it_divides_n(n: int, w: int) -> None:
    assert panel_width(n) == w


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((4, 8), (8, 16)),
        ((3, 5, 6), (6, 7)),
        ((2, 1, 3, 4), (3, 4, 5)),
        ((1, 2), (2, 1)),
    ],
)
def test_reference_is_the_float32_matmul_of_the_widened_values(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> None:
    a, b = bf16(*a_shape), bf16(*b_shape)
    (x, y) = values((a_shape, BF16), (b_shape, BF16))
    op = MatmulBf16Op(x, y)
    op.verify()
    want = np.matmul(a.astype(np.float32), b.astype(np.float32))
    assert shape_of(op.result.type) == want.shape
    got = matmul_bf16_reference(op, a, b)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    (evaluated,) = evaluate(op, [a, b])
    np.testing.assert_array_equal(evaluated, want)


def test_products_are_exact_in_float32() -> None:
    """Each product of two bfloat16s is exact in float32: one term's product is
    the float64 product."""
    a, b = bf16(16, 2), bf16(2, 16)
    a[:, 1] = 0
    (x, y) = values(((16, 2), BF16), ((2, 16), BF16))
    got = matmul_bf16_reference(MatmulBf16Op(x, y), a, b)
    want = a[:, :1].astype(np.float64) * b[:1, :].astype(np.float64)
    np.testing.assert_array_equal(got.astype(np.float64), want)


@pytest.mark.parametrize(("m", "k", "n", "batch"), [(5, 8, 64, ()), (3, 6, 48, (2,))])
def test_reference_unpacks_a_packed_rhs(
    m: int, k: int, n: int, batch: tuple[int, ...]
) -> None:
    a, b = bf16(*batch, m, k), bf16(k, n)
    packed = pack_bf16(b, panel_width(n))
    (x, p) = values(((*batch, m, k), BF16), (packed.shape, BF16))
    op = MatmulBf16Op(x, p, BF16_PANELS)
    op.verify()
    assert op.packed and op.panel() == panel_width(n)
    assert shape_of(op.result.type) == (*batch, m, n)
    assert op.contraction() == k and op.flops() == 2 * int(np.prod(batch)) * m * n * k
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_array_equal(matmul_bf16_reference(op, a, packed), want)
    (evaluated,) = evaluate(op, [a, packed])
    np.testing.assert_array_equal(evaluated, want)


@pytest.mark.parametrize(
    ("a", "b", "layout", "message"),
    [
        (
            ((4, 8), f32),
            ((8, 16), BF16),
            "",
            "tg.matmul_bf16 expects bf16 operands, but the lhs is tensor<4x8xf32>",
        ),
        (
            ((4, 8), BF16),
            ((8, 16), Float16Type()),
            "",
            "tg.matmul_bf16 expects bf16 operands, but the rhs is tensor<8x16xf16>",
        ),
        (
            ((4, 8), BF16),
            ((6, 16), BF16),
            "",
            "tg.matmul_bf16: contraction sizes differ: lhs [4, 8] has K = 8 but the "
            "rhs has K = 6",
        ),
        (
            ((4, 8), BF16),
            ((2, 3, 32, 2), BF16),
            BF16_PANELS,
            "tg.matmul_bf16: contraction sizes differ: lhs [4, 8] has K = 8 but the "
            "rhs has K = 6",
        ),
        (
            ((8,), BF16),
            ((8, 16), BF16),
            "",
            "tg.matmul_bf16 expects a lhs of rank >= 2, got [8]",
        ),
        (
            ((2, 4, 8), BF16),
            ((3, 8, 16), BF16),
            "",
            "tg.matmul_bf16: batch dimensions [2] and [3] are not broadcastable",
        ),
        (
            ((4, 8), BF16),
            ((1, 2, 32, 4), BF16),
            BF16_PANELS,
            'tg.matmul_bf16 with rhs_layout = "vnni_panels" expects a rhs of shape '
            "[N/w, K/2, w, 2] with w a multiple of 16, got [1, 2, 32, 4]",
        ),
        (
            ((4, 8), BF16),
            ((2, 4, 8, 2), BF16),
            BF16_PANELS,
            "with w a multiple of 16, got [2, 4, 8, 2]",
        ),
        (
            ((4, 8), BF16),
            ((4, 16, 2), BF16),
            BF16_PANELS,
            "with w a multiple of 16, got [4, 16, 2]",
        ),
    ],
    ids=[
        "float_lhs",
        "half_rhs",
        "contraction",
        "packed_contraction",
        "vector_lhs",
        "batch",
        "panels_group",
        "panels_narrow",
        "panels_rank",
    ],
)
def test_constructor_errors(
    a: tuple[tuple[int, ...], Attribute],
    b: tuple[tuple[int, ...], Attribute],
    layout: str,
    message: str,
) -> None:
    x, y = values(a, b)
    with pytest.raises(VerifyException, match=re.escape(message)):
        MatmulBf16Op(x, y, layout)


def test_verify_rejects_an_unknown_layout() -> None:
    x, p = values(((4, 8), BF16), ((1, 4, 16, 2), BF16))
    op = MatmulBf16Op(x, p, BF16_PANELS)
    op.rhs_layout = StringAttr("vnni")
    message = (
        'tg.matmul_bf16: rhs_layout must be "vnni_panels" or omitted (K x N, the '
        'default), got "vnni"'
    )
    with pytest.raises(VerifyException, match=re.escape(message)):
        op.verify()


@pytest.mark.parametrize(
    ("shape", "element"), [((4, 16), BF16), ((4, 32), f32), ((16,), f32)]
)
def test_verify_rejects_a_wrong_result_type(
    shape: tuple[int, ...], element: Attribute
) -> None:
    x, y = values(((4, 8), BF16), ((8, 16), BF16))
    wrong = tensor_type(shape, element)
    op = MatmulBf16Op.create(operands=[x, y], result_types=[wrong])
    message = (
        "tg.matmul_bf16 on (tensor<4x8xbf16>, tensor<8x16xbf16>) must produce "
        f"tensor<4x16xf32>, but its result type is {wrong}"
    )
    with pytest.raises(VerifyException, match=re.escape(message)):
        op.verify()
