"""Kernel passes: the tg graph becomes a host program calling one kernel per fusion
group, each a named affine loop nest over memrefs (convert-tg-to-affine), and the
host's buffers are planned (plan-memory)."""
