"""The JIT names the host on every function it compiles, and AVX-512's width.

The CPU schedules are written for the host's widest registers; LLVM's tuning for some
AVX-512 CPUs prefers 256-bit vectors. The engine therefore gives every defined function
``target-cpu``/``target-features`` and, with AVX-512, a 512-bit preferred width. These
tests check that the attributes reach the optimized module whatever the layout of the
IR text (llvmlite's IR builder puts a function's ``{`` on a line of its own: the
attributes were once silently dropped there).
"""

from __future__ import annotations

import re

from qidao.runtime.cpu import _with_host_attributes, host_cpu, jit_compile

NEXT_LINE = """
define void @"f"(ptr noalias %"a")
{
entry:
  ret void
}
"""
SAME_LINE = "define void @f(ptr %a) {\nentry:\n  ret void\n}\n"
WITH_GROUP = (
    "define void @f(ptr %a) #0 {\nentry:\n  ret void\n}\nattributes #0 = { nounwind }\n"
)


def _attributes(text: str) -> str:
    """The attribute group the definition of @f names."""
    match = re.search(r"define [^\n]*#(\d+) *\{", text)
    assert match, text
    group = re.search(rf"^attributes #{match.group(1)} = \{{([^\n]*)\}}", text, re.M)
    assert group, text
    return group.group(1)


def test_a_header_with_its_brace_on_the_next_line_gets_the_attributes() -> None:
    text = _with_host_attributes(NEXT_LINE, "znver4", "+avx2,+avx512f")
    attributes = _attributes(text)
    assert '"target-cpu"="znver4"' in attributes
    assert '"target-features"="+avx2,+avx512f"' in attributes
    assert '"prefer-vector-width"="512"' in attributes


def test_a_header_with_its_brace_on_the_same_line_gets_the_attributes() -> None:
    attributes = _attributes(_with_host_attributes(SAME_LINE, "x", "+avx2"))
    assert '"target-cpu"="x"' in attributes


def test_without_avx512_no_vector_width_is_forced() -> None:
    attributes = _attributes(_with_host_attributes(NEXT_LINE, "x", "+avx2,-avx512f"))
    assert "vector-width" not in attributes


def test_a_function_with_its_own_attribute_group_is_left_alone() -> None:
    assert _with_host_attributes(WITH_GROUP, "x", "+avx512f") == WITH_GROUP


def test_the_optimized_module_names_the_host() -> None:
    cpu, features = host_cpu()
    attributes = _attributes(jit_compile(NEXT_LINE).optimized_ir())
    assert f'"target-cpu"="{cpu}"' in attributes
    wide = '"prefer-vector-width"="512"' in attributes
    assert wide == ("+avx512f" in features.split(","))
