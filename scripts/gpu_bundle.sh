#!/bin/bash
# Packs what a GPU machine without network needs to run test/test_warp_cuda.py and
# benchmarks/bench_gpu.py from a checkout, into .gpu/ (git-ignored), and runs it there.
#
#   bash scripts/gpu_bundle.sh pack      # here, with network: .gpu/ of about 60 MB
#   bash scripts/gpu_bundle.sh run       # there, from the checkout root (Python 3.12, numpy, scipy, pyyaml)
#
# Warp: warp-lang 1.3.3 (the first release whose wp.Bvh ray query our top level uses), unpacked without its
# examples and tests: 40 MB as .tar.xz against 63 MB for the wheel. Results go to $OUT (or .gpu/out).
set -euo pipefail
cd "$(dirname "$0")/.."
WARP=1.3.3
PY=${GPU_PYTHON_VERSION:-3.12}
case "${1:-}" in
pack)
    mkdir -p .gpu
    grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    get() {
        python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
            --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
            -d "$1" "${@:2}"
    }
    get "$tmp" "warp-lang==$WARP"
    (cd "$tmp" && unzip -q warp_lang-*.whl && rm -rf warp/examples warp/tests warp_lang-*.whl \
        && tar cf - warp warp_lang-*.dist-info | xz -6 > warp.tar.xz)
    mv "$tmp/warp.tar.xz" .gpu/
    get .gpu embreex trimesh pycollada rosbags apsw backports.zstd lz4 ruamel.yaml
    du -sh .gpu
    ;;
run)
    out=${OUT:-.gpu/out}
    mkdir -p /tmp/gpu-site "$out"
    tar xJf .gpu/warp.tar.xz -C /tmp/gpu-site
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpu-site .gpu/*.whl
    export PYTHONPATH=/tmp/gpu-site:$PWD PYTHONUNBUFFERED=1
    nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$out/env.txt"
    # the machine's own numba (the compiled loops; too big to carry beside Warp)
    python3 -c "import numba, numpy; print('numba', numba.__version__, 'numpy', numpy.__version__)" | tee -a "$out/env.txt"
    RADARAYS_EXPECT_CUDA=1 python3 -m pytest -q -p no:cacheprovider -W ignore::DeprecationWarning \
        test/test_warp_cuda.py 2>&1 | tee "$out/test_warp_cuda.txt"
    python3 benchmarks/bench_gpu.py --movers-sweep 2>&1 | tee "$out/bench_gpu.txt"
    ;;
*)
    echo "usage: bash scripts/gpu_bundle.sh pack|run" >&2
    exit 2
    ;;
esac
