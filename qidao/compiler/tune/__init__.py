"""Autotuning: search a kernel's schedule space, measure trials in worker
processes, keep the best in JSON-lines records that ``qidao.compile(model,
records=PATH)`` applies.

==============  =================================================================
``task.py``       the workload of a kernel (kind, tg ops, shapes, dtype)
``space.py``      knobs, templates, the points of a task's space
``matmul.py``     the matmul template (register tile, cache blocking, packing)
``templates.py``  the templates by kind
``worker.py``     a trial worker process (compile, check against NumPy, time)
``runner.py``     the pool of worker processes, timeouts, crashes
``cost_model.py`` gradient-boosted trees in NumPy
``search.py``     exhaustive, random and model-guided evolutionary search
``records.py``    the JSON-lines records and the lookup at compile time
``tuner.py``      one tuning run: search + trials + records + progress bar
``gpu_*.py``      the GPU (``target="cuda"``): ``gpu_templates.py`` (by kind),
                  ``gpu_matmul.py``, ``gpu_rows.py``, ``gpu_elementwise.py``,
                  ``gpu_space.py`` (what they share), ``gpu_worker.py`` (a trial:
                  CUDA events, or the emulator), ``gpu_device.py`` (the record key)
==============  =================================================================

``qidao tune`` and the comparison of searches are tools: ``qidao/tools/tune.py``,
``qidao/tools/tune_report.py``.
"""

from qidao.compiler.tune.records import Record, load_records, records_schedule
from qidao.compiler.tune.task import Task, named_task
from qidao.compiler.tune.tuner import Measurement, TuneResult, tune_task

__all__ = [
    "Measurement",
    "Record",
    "Task",
    "TuneResult",
    "load_records",
    "named_task",
    "records_schedule",
    "tune_task",
]
