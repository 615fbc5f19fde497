"""Graph passes: tg -> tg, on whole tensors (fold-constants, simplify, layout,
materialize-padding, fuse). xDSL's ``cse`` and ``dce`` act here too, because tg ops
carry the ``Pure`` trait."""
