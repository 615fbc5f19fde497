"""The runtime: what runs a compiled program, knowing no IR classes.

``cpu.py`` (the llvmlite JIT engine), ``executor.py`` (the checked NumPy-in,
NumPy-out call of a JIT-compiled entry), ``cuda.py`` (the CUDA launcher and its CPU
emulator), ``profile.py`` (the per-kernel timers), ``errors.py`` (``ArgumentError``).
Every argument is checked here before native code runs.
"""
