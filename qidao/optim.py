"""``qidao.optim``: the optimizers of a compiled training step (``SGD``, ``Adam``;
defined in ``qidao.compiler.optim``, where the formulas are). Each checks its
settings when it is made; afterwards only ``lr`` may change."""

from qidao.compiler.optim import SGD, Adam, Optimizer

__all__ = ["SGD", "Adam", "Optimizer"]
