#!/usr/bin/env bash
# qidao's CUDA path on a real GPU, in one run (about 2 minutes on an H200; at most
# about 6 with every step at its timeout):
#   (a) tests/compiler/targets/cuda/test_emit.py, tests/tools/test_bench_cuda.py and tests/compiler/targets/cuda/test_defaults.py:
#       nvcc, the emulator and the real-GPU tests (qidao.compile(target="cuda")
#       against NumPy, the hand-written and the default GPU schedules);
#   (b) qidao bench-cuda: every GPU workload, qidao's CUDA C against PyTorch eager,
#       CUDA-event medians, checked against NumPy first; the default schedules at
#       the big sizes first (matmul 1024/2048, softmax 4096, chain 2^24).
# Writes $OUT/pytest.log, $OUT/bench.log and $OUT/gpu_bench.csv (OUT defaults to
# /tmp/out). Wheels in .whl/ (xdsl, pycuda and what they need, for Python 3.12:
# scripts/gpu_wheels.sh makes them) are installed into /tmp/site first.
# Exit status: 0 when both steps pass; else the first failing step's status.
# Without a GPU it still runs (a): the GPU tests skip with the reason, and (b)
# says "no CUDA device: <reason>" and exits 3.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
SITE=${QIDAO_SITE:-/tmp/site}
PY=${PYTHON:-python3}
mkdir -p "$OUT"

if compgen -G ".whl/*.whl" >/dev/null; then
    echo "== installing $(ls .whl/*.whl | wc -l) wheels from .whl/ into $SITE"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$SITE" .whl/*.whl || { echo "wheel install failed"; exit 2; }
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

echo "== device"
timeout 20 nvidia-smi -L 2>&1 || echo "(nvidia-smi: none or failed)"
timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv 2>&1 || true
(nvcc --version 2>&1 | tail -2) || echo "(no nvcc)"
(g++ --version 2>&1 | head -1) || echo "(no g++: the emulator tests skip)"

echo "== versions"
timeout 60 "$PY" - <<'EOF' 2>&1 | tee "$OUT/versions.log"
import importlib.metadata as md
import platform
import sys

print("python", sys.version.split()[0], sys.executable, "glibc", platform.libc_ver()[1])
for name in ("numpy", "llvmlite", "xdsl", "pycuda", "pytools", "onnx", "torch", "pytest"):
    try:
        print(f"{name:10} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name:10} (not installed)")
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

echo "== (a) pytest tests/compiler/targets/cuda/test_emit.py tests/tools/test_bench_cuda.py tests/compiler/targets/cuda/test_defaults.py"
timeout -k 10 180 "$PY" -m pytest tests/compiler/targets/cuda/test_emit.py tests/tools/test_bench_cuda.py \
    tests/compiler/targets/cuda/test_defaults.py -q -p no:cacheprovider -rs 2>&1 | tee "$OUT/pytest.log"
rc_a=${PIPESTATUS[0]}

echo "== (b) qidao bench-cuda"
timeout -k 10 150 "$PY" -m qidao bench-cuda --timeout 60 --csv "$OUT/gpu_bench.csv" \
    2>&1 | tee "$OUT/bench.log"
rc_b=${PIPESTATUS[0]}

echo "== done: pytest exit $rc_a, bench-cuda exit $rc_b (124: timed out; 3: no GPU)"
echo "   files: $(ls "$OUT" | tr '\n' ' ')"
[ "$rc_a" -ne 0 ] && exit "$rc_a"
exit "$rc_b"
