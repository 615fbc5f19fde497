"""The loop library of the schedule primitives, public to every level below tg and
to the compiler's default schedules and tuner: finding kernels and named loops,
their bounds and trip counts, rebuilding and substituting loops (``nest.py``), the
errors a primitive raises (``errors.py``), the box of a buffer a loop body
touches (``footprint.py``), and an affine index as a linear form, value ->
coefficient (``linear.py``)."""
