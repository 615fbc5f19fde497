"""Graph passes: tg -> tg, on whole tensors (insert-checks, fold-constants, simplify,
lift-conv1d, layout, select-conv-algo, materialize-padding, sink-reshape, fuse,
collapse-matmul-batch). xDSL's ``cse`` and ``dce`` act
here too, because tg ops carry the ``Pure`` trait."""
