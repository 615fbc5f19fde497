"""The compiler driver: from a model to a compiled, callable program.

================  ==============================================================
``compile.py``    ``qidao.compile``: check the options, load the model, run the
                  target's stages, let the target build the result
``options.py``    the options every target takes, checked before any work
``pipeline.py``   the pipeline as data (each target's stages and their passes)
                  and the one stage loop every target runs
``context.py``    the xDSL context with every dialect, passes by name
``models.py``     what ``qidao.compile`` accepts, turned into a tg module
``schedule.py``   the ``Schedule`` API: primitives on a module's named loops
``trace.py``      a schedule's trace, printed and parsed as Python or a pipeline
``defaults.py``   what every target's default schedules share
``host.py``       what is read off the host program (signature, kernels, stats)
``compiled.py``   what every compiled model offers (``ir``, ``stats``, a call)
``targets/``      one folder per target (``cpu/``, ``cuda/``), built the same way
``tune/``         the autotuner and its records
================  ==============================================================
"""
