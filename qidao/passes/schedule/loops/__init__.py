"""The loop library of the schedule primitives, public to every level below tg and
to the compiler's default schedules and tuner: finding kernels and named loops,
their bounds and trip counts, rebuilding and substituting loops (``nest.py``), the
errors a primitive raises (``errors.py``), the box of a buffer a loop body
touches (``footprint.py``), an affine index as a linear form, value ->
coefficient (``linear.py``), the accumulations a loop carries
(``reductions.py``), what a GPU binding is on a loop (``gpu.py``) and the rules
of a nest whose block's threads share loops (``block.py``)."""
