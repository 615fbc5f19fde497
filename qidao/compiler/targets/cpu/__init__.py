"""The CPU target: LLVM IR from the llvm dialect (``emit.py``), JIT-compiled for the
host by llvmlite (``qidao.runtime.cpu``), default schedules per kernel kind
(``defaults/``), and the compiled object (``compiled.py``).

Its stages below ``schedule`` (``scf``, ``cf``, ``llvm-dialect``, then the text
stages ``llvm``, ``llvm-opt``, ``asm``) are ``PIPELINES["cpu"]`` in
``qidao.compiler.pipeline``. Its own options: ``opt_level`` (LLVM's, 0-3),
``records`` (a ``qidao tune`` file whose best traces win over ``schedule=``) and
``profile`` (time every kernel: ``Compiled.profile``).

The files: ``target.py`` (what the driver asks of a target), ``emit.py``,
``defaults/``, ``compiled.py``.
"""
