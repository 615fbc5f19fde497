#!/usr/bin/env bash
# Make .whl/: the wheels that scripts/gpu_check.sh installs on a GPU machine whose
# python3 is 3.12 with numpy, torch, pytest, onnx, markupsafe and typing-extensions
# but no xdsl and no pycuda (and no network). Run here, with pip able to reach an
# index; needs a Python 3.12 (PY312) and the CUDA toolkit's headers (CUDA_ROOT).
#
#   xdsl==0.74.0 + immutabledict, ordered-set (and typing-extensions, new enough)
#   pycuda==2026.1, built from source (it has no wheel), + pytools, platformdirs,
#   mako, siphash24
#   .whl/extra/ (optional): pytest-xdist, matplotlib, transformers and their
#   dependencies less numpy and pytest (about 52 MB)
#
# pycuda links libcuda.so.1, the driver's library. Where there is no driver (and
# no stubs in $CUDA_ROOT/lib64/stubs), a stub with the symbols pycuda uses and
# that soname is made to link against; the real one is loaded at run time. CURAND
# is left out (pycuda.curandom then fails; qidao does not use it). llvmlite is not
# carried (its wheel is ~57 MB): `import qidao` imports the machine's own, and the
# CUDA path never calls it.
set -eu
cd "$(dirname "$0")/.."
PY312=${PY312:-/root/.pyenv/versions/3.12.1/bin/python3.12}
CUDA_ROOT=${CUDA_ROOT:-/usr/local/cuda}
WORK=${WORK:-/tmp/qidao-gpu-wheels}
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >>.git/info/exclude
WHL=${WHL:-.whl}
mkdir -p "$WHL" "$WORK"

platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
    --platform manylinux1_x86_64)
"$PY312" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" -d "$WHL" \
    xdsl==0.74.0 immutabledict==4.3.1 ordered-set==4.1 typing_extensions==4.16.0 \
    pytools==2026.1.1 platformdirs==4.14.8 mako==1.4.3 siphash24==1.9

if ! compgen -G "$WHL/pycuda-2026.1-cp312-*.whl" >/dev/null; then
    [ -x "$WORK/venv/bin/python" ] || "$PY312" -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install -q setuptools wheel "numpy>=1.24"
    "$WORK/venv/bin/pip" download -q --no-deps --no-binary=:all: --no-build-isolation \
        -d "$WORK" pycuda==2026.1
    rm -rf "$WORK/pycuda-2026.1" && tar -xzf "$WORK/pycuda-2026.1.tar.gz" -C "$WORK"
    libdir=$CUDA_ROOT/lib64/stubs
    if [ ! -e "$libdir/libcuda.so" ]; then
        libdir=$WORK/cudastub
        mkdir -p "$libdir"
        # every driver function cuda.h and cudaProfiler.h declare, under the names
        # their macros give them (cuMemAlloc -> cuMemAlloc_v2), as do-nothing stubs
        gcc -E -P -x c -I "$CUDA_ROOT/include" -include cuda.h -include cudaProfiler.h \
            /dev/null | grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' | tr -d ' (' \
            | sort -u | awk '{print "int " $1 "(void) { return 999; }"}' >"$libdir/stub.c"
        gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$libdir/libcuda.so" "$libdir/stub.c"
    fi
    whl_dir=$(cd "$WHL" && pwd)
    (
        cd "$WORK/pycuda-2026.1"
        "$WORK/venv/bin/python" configure.py --cuda-root="$CUDA_ROOT" \
            --no-cuda-enable-curand --cudadrv-lib-dir="$libdir"
        "$WORK/venv/bin/pip" wheel -q --no-deps --no-build-isolation --no-cache-dir \
            -w "$whl_dir" .
    )
fi
so=$(mktemp -d)
unzip -q -o "$WHL"/pycuda-2026.1-cp312-*.whl 'pycuda/_driver*.so' -d "$so"
readelf -d "$so"/pycuda/_driver*.so | grep -q 'libcuda.so.1' \
    || { echo "pycuda's _driver does not link libcuda.so.1"; exit 1; }
rm -rf "$so"

# optional (.whl/extra/, installed by gpu_check.sh when it can): pytest-xdist, and
# matplotlib and transformers with what they need, less what the machine has
# (numpy: torch is built against it; pytest and its plugins' base)
mkdir -p "$WHL/extra"
"$PY312" -m pip download -q --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" --platform any -d "$WHL/extra" \
    pytest-xdist==3.8.0 matplotlib==3.11.2 transformers==5.24.0
rm -f "$WHL"/extra/numpy-*.whl "$WHL"/extra/pytest-[0-9]*.whl "$WHL"/extra/pluggy-*.whl \
    "$WHL"/extra/iniconfig-*.whl "$WHL"/extra/typing_extensions-*.whl
ls -l "$WHL" "$WHL/extra" && du -sh "$WHL"  # the device tool carries at most 64 MiB
