#!/usr/bin/env bash
# qidao's CUDA path on a real GPU, in one run of at most 8 minutes, with no
# network: every step has a timeout, cut to what is left of $QIDAO_CHECK_SECONDS
# (default 450: 8 minutes less 30 s for kill grace and the summary); an estimated
# 6 minutes on an H200 when everything compiles (not yet measured). The budget,
# in order: (a) at most 150 s; (b) at most 250 s, leaving 100 s of what is left
# for (d) and (c); (d) at most 70 s, leaving 30 s for (c); (c) what is left, at
# most 150 s. So with 280 s left after (a) (setup about 20 s): (b) 180 s, (d)
# 70 s, (c) 30 s; nothing runs past 450 s.
#   (a) pytest: with pytest-xdist (from .whl/extra/), every CUDA test file on 8
#       workers (tests/compiler/targets/cuda/, test_gpu_tune.py, and the bench's:
#       tests/tools/test_bench_cuda*.py, test_cuda_suites.py, test_cuda_ladder.py);
#       without it, serially, test_emit.py, test_defaults.py and the bench's:
#       nvcc, the emulator and the real-GPU tests (qidao.compile(target="cuda")
#       against NumPy, the hand-written and the default GPU schedules; the speed
#       targets' workloads at small sizes on the device against PyTorch there);
#       at most 150 s ($QIDAO_CHECK_TESTS, if set, replaces the list of files);
#   (b) qidao bench-cuda --suite targets: the speed targets' workloads at their
#       sizes, in order, each with the default GPU schedules, checked against
#       PyTorch on the device and then timed (CUDA events, medians; TF32 off but
#       on the tf32 row):
#       chain26 and copy26 (2^26 floats; the chain's GB/s as a fraction of the
#       copy bandwidth, cuMemcpyDtoD and torch's copy_, target >= 0.85),
#       softmax8192 and layernorm8192 (>= 1.0x PyTorch), matmul4096 FP32 (>= 0.9x
#       cuBLAS), TF32 and FP16 on tensor cores (tensor_cores="tf32"/"fp16",
#       >= 0.7x cuBLAS in the same precision), resnet50 (batch 32, 224x224) and
#       bert (BERT-base, sequence 128, batch 8) against PyTorch eager (>= 1.0x); a
#       model that does not compile for the GPU gets an error row with the
#       reason, and the run goes on; at most 250 s, and 100 s are kept for (d)
#       and (c) (--budget: the rows left past it are "skipped");
#   (d) qidao bench-cuda --suite ladder: the GPU ladder, matmul 4096 FP32 rung by
#       rung (naive at 128^3, bind, shared, register, tensor_cores in TF32,
#       tuned: "not run" here, no records), each checked against PyTorch and
#       beside cuBLAS in its precision, each row's schedule trace in the CSV, and
#       a PNG of TFLOP/s per rung with cuBLAS FP32/TF32 as lines; at most 70 s
#       (its --budget 15 s less), 30 s kept for (c); its log goes on targets.log;
#   (c) qidao bench-cuda: the older bench workloads (the default schedules at
#       matmul 1024/2048, softmax 4096, chain 2^24 first, then the hand-written
#       ones), with what is left of the 8 minutes.
# Writes into $OUT (default /tmp/out) 8 files (the most the device tool brings
# back): pytest.log (the versions first), targets.log (then the ladder's),
# targets.csv, targets.png, ladder.csv, ladder.png, bench.log, gpu_bench.csv. Wheels in
# .whl/ (xdsl, pycuda and what they need, for Python 3.12: scripts/gpu_wheels.sh
# makes them) are installed into /tmp/site first; the machine's python3 ($PYTHON
# to use another) brings numpy, torch, transformers, onnx, matplotlib and pytest.
# Exit status: 0 when every step passes (a target not met is no failure: the
# CSV's "meets" column says it; nor is a "not built" row); else the first failing
# step's status (1: a test or a row failed or was skipped; 2: the wheels did not
# install; 3: no CUDA device; 124: a step ran past its timeout).
# Without a GPU it still runs (a): the GPU tests skip with the reason, and (b)
# says "no CUDA device: <reason>" and exits 3 (then (d) and (c) do the same).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
SITE=${QIDAO_SITE:-/tmp/site}
PY=${PYTHON:-python3}
TOTAL=${QIDAO_CHECK_SECONDS:-450}  # 8 minutes, less 30 s: kill grace, last words
mkdir -p "$OUT"

left() { echo $((TOTAL - SECONDS)); }
# the smaller of a step's own limit ($1) and what is left of the whole, at least 5
cap() { local l w; l=$(left); w=$1; [ "$l" -lt "$w" ] && w=$l; echo $((w > 5 ? w : 5)); }

if compgen -G ".whl/*.whl" >/dev/null; then
    echo "== installing $(ls .whl/*.whl | wc -l) wheels from .whl/ into $SITE"
    timeout 60 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$SITE" .whl/*.whl || { echo "wheel install failed"; exit 2; }
fi
# optional: pytest-xdist (step (a) on 8 workers), matplotlib (the PNGs), transformers
# (the models' rows); without them those parts say what is missing and the rest runs
if compgen -G ".whl/extra/*.whl" >/dev/null; then
    echo "== installing $(ls .whl/extra/*.whl | wc -l) optional wheels from .whl/extra/"
    timeout 90 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$SITE" .whl/extra/*.whl \
        || echo "(optional wheels did not install: no xdist, plots or models)"
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

echo "== device"
timeout 10 nvidia-smi -L 2>&1 || echo "(nvidia-smi: none or failed)"
timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv 2>&1 || true
(timeout 10 nvcc --version 2>&1 | tail -2) || echo "(no nvcc)"
(g++ --version 2>&1 | head -1) || echo "(no g++: the emulator tests skip)"

echo "== versions"
timeout 40 "$PY" - <<'EOF' 2>&1 | tee "$OUT/pytest.log"
import importlib.metadata as md
import platform
import sys

print("python", sys.version.split()[0], sys.executable, "glibc", platform.libc_ver()[1])
for name in ("numpy", "llvmlite", "xdsl", "pycuda", "pytools", "onnx", "torch",
             "transformers", "matplotlib", "pytest"):
    try:
        print(f"{name:12} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name:12} (not installed)")
import qidao  # imports llvmlite (the CUDA path never calls it)
from qidao.runtime.cuda import cuda_unavailable_reason

print("qidao", qidao.__version__, "from", qidao.__file__)
reason = cuda_unavailable_reason()
print("pycuda + GPU:", "usable" if reason is None else f"NOT usable: {reason}")
if reason is None:
    import pycuda.autoprimaryctx as ctx
    import pycuda.driver as cuda

    dev = ctx.device
    free, total = cuda.mem_get_info()
    print(f"device {dev.name()}, compute capability {dev.compute_capability()}, "
          f"{total / 2**30:.1f} GiB ({free / 2**30:.1f} free)")
try:
    import torch

    print("torch cuda", torch.version.cuda, "available:", torch.cuda.is_available())
except Exception as err:  # noqa: BLE001
    print("torch:", err)
EOF

# with pytest-xdist, every CUDA test file on 8 workers (their real-GPU tests
# included); without it, serially, the files whose GPU tests matter most
if "$PY" -c "import xdist" 2>/dev/null; then
    WORKERS="-n 8"
    DEFAULT_TESTS="tests/compiler/targets/cuda tests/compiler/test_gpu_tune.py
        tests/bench/cuda/test_bench.py tests/bench/cuda/test_plot.py
        tests/bench/cuda/test_suites.py tests/bench/cuda/test_ladder.py"
else
    WORKERS=""
    DEFAULT_TESTS="tests/compiler/targets/cuda/test_emit.py
        tests/compiler/targets/cuda/test_defaults.py tests/bench/cuda/test_bench.py
        tests/bench/cuda/test_plot.py tests/bench/cuda/test_suites.py
        tests/bench/cuda/test_ladder.py"
fi
TESTS=${QIDAO_CHECK_TESTS:-$DEFAULT_TESTS}
limit=$(cap 150)
echo "== (a) pytest (at most ${limit} s, ${WORKERS:-serial}):" $TESTS
# shellcheck disable=SC2086
timeout -k 10 "$limit" "$PY" -m pytest $TESTS $WORKERS -q -p no:cacheprovider -rfEs \
    2>&1 | tee -a "$OUT/pytest.log"
rc_a=${PIPESTATUS[0]}

# (d) and (c) get at least 100 s: (b) stops at its budget, 25 s before its
# timeout (the table, the CSV and the PNG are written in them)
limit=$(cap $(( $(left) - 100 < 250 ? $(left) - 100 : 250 )))
echo "== (b) qidao bench-cuda --suite targets (at most ${limit} s)"
timeout -k 10 "$limit" "$PY" -m qidao bench-cuda --suite targets --timeout 60 \
    --budget $((limit > 30 ? limit - 25 : 5)) --csv "$OUT/targets.csv" \
    --plot "$OUT/targets.png" 2>&1 | tee "$OUT/targets.log"
rc_b=${PIPESTATUS[0]}

# (c) gets at least 30 s: (d) stops at its budget, 15 s before its timeout
limit=$(cap $(( $(left) - 30 < 70 ? $(left) - 30 : 70 )))
echo "== (d) qidao bench-cuda --suite ladder (at most ${limit} s)" | tee -a "$OUT/targets.log"
timeout -k 10 "$limit" "$PY" -m qidao bench-cuda --suite ladder --timeout 60 \
    --min-time 0.2 --budget $((limit > 20 ? limit - 15 : 5)) --csv "$OUT/ladder.csv" \
    --plot "$OUT/ladder.png" 2>&1 | tee -a "$OUT/targets.log"
rc_d=${PIPESTATUS[0]}

limit=$(cap 150)
echo "== (c) qidao bench-cuda (at most ${limit} s)"
timeout -k 10 "$limit" "$PY" -m qidao bench-cuda --timeout 60 \
    --budget $((limit > 30 ? limit - 20 : 5)) --csv "$OUT/gpu_bench.csv" \
    2>&1 | tee "$OUT/bench.log"
rc_c=${PIPESTATUS[0]}

echo "== done in ${SECONDS} s: pytest exit $rc_a, targets suite exit $rc_b," \
    "ladder exit $rc_d, bench-cuda exit $rc_c (124: timed out; 3: no GPU)"
echo "   files: $(ls "$OUT" | tr '\n' ' ')"
for rc in "$rc_a" "$rc_b" "$rc_d" "$rc_c"; do
    [ "$rc" -ne 0 ] && exit "$rc"
done
exit 0
