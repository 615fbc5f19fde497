"""Temporary: time softmax default variants on the device (deleted after)."""
import dataclasses, os, sys, time
import numpy as np
from qidao.compiler.cuda import compile_cuda
from qidao.compiler.cuda import defaults as D
from qidao.compiler.cuda.workloads import softmax
from qidao.runtime.cuda import event_times

def run(label, w, nbytes):
    try:
        rng = np.random.default_rng(0)
        ins = w.inputs(rng); want = w.reference(*ins)
        c = compile_cuda(w.build(), schedule=w.schedule)
        f = c.load(); f.upload(*ins); f.launch(); err = w.check(f.download(), want)
        ts = event_times(f.launch, 0.15, 100); f.device.synchronize(); f.close()
        us = float(np.median(ts)) * 1e6
        print(f"{label:40} {us:9.1f} us {nbytes/us/1e3:7.1f} GB/s err {err:.1e}", flush=True)
    except Exception as e:
        print(f"{label:40} FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)

for rows, cols in ((4096, 1024), (16384, 1024)):
    nb = 2 * 4 * rows * cols
    for r in (1, 2, 4, 8, 16, 32):
        D.ROW_THREADS = (r,)
        run(f"softmax{rows} {r} rows/block", dataclasses.replace(softmax(rows, cols), schedule="default"), nb)
    for r in (1, 32):
        D.ROW_THREADS = (r,)
        def sched(s, r=r):
            D.default_gpu_schedule(s)
            for loop in ("r_max", "r_sum", "r_norm"):
                s.unroll("main_k0_softmax", loop, 4)
        run(f"softmax{rows} {r} rows/block, unroll 4", dataclasses.replace(softmax(rows, cols), schedule=sched), nb)
