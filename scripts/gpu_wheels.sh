#!/usr/bin/env bash
# What the lent GPU machine (Python 3.12, x86-64, no network) needs to run tunecli and
# scripts/gpu_check.py, packed into one folder for the device tool's `carry` (64 MiB at most,
# the working tree included).
#
# That machine already has numpy, pyyaml, click, rich, cloudpickle, cuda-bindings, PyTorch and a
# CUDA toolkit; it lacks tunecli's pinned llvmlite (its own is numba's, older) and xgboost (the XGB
# tuner; without it gpu_check tunes with the GA tuner).  llvmlite's wheel alone is 57 MiB, so the
# wheels are unpacked and packed again as one xz tarball (about 44 MiB with xgboost); libdevice
# (0.5 MiB) travels too, for a machine whose toolkit lacks it.
#
# Usage (from the repository root):  scripts/gpu_wheels.sh [DIR] [--no-xgboost]   (DIR: .gpu)
# Then, in the device call, carry [DIR] and begin the command with:
#   python3 -c "import tarfile; tarfile.open('.gpu/site.tar.xz').extractall('/tmp/site', filter='data')" &&
#   export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 &&
#   { [ -f /usr/local/cuda/nvvm/libdevice/libdevice.10.bc ] || export CUDA_HOME=$PWD/.gpu/cuda; } &&
set -euo pipefail

dir=.gpu
packages=("llvmlite==$(sed -n 's/.*"llvmlite==\([0-9.]*\)".*/\1/p' pyproject.toml)" "xgboost-cpu==3.2.0")
for arg in "$@"; do
    case "$arg" in
        --no-xgboost) packages=("${packages[0]}") ;;
        -*) echo "gpu_wheels.sh: unknown option $arg" >&2; exit 2 ;;
        *) dir=$arg ;;
    esac
done
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3

if [[ "$dir" != /* ]]; then  # a folder of the checkout: ignored by git, so that `carry` may name it
    exclude=$(git rev-parse --git-path info/exclude)
    mkdir -p "$(dirname "$exclude")"
    grep -qxF "/$dir/" "$exclude" 2>/dev/null || echo "/$dir/" >> "$exclude"
fi

rm -rf "$dir" && mkdir -p "$dir/wheels" "$dir/site"
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$dir/wheels" "${packages[@]}"
for wheel in "$dir"/wheels/*.whl; do
    "$python" -m zipfile -e "$wheel" "$dir/site"
done
chmod +x "$dir"/site/llvmlite/binding/*.so
tar -cf - -C "$dir/site" . | xz -T0 -6 > "$dir/site.tar.xz"

libdevice=$("$python" -c "from tunecli.engine.codegen.nvptx_backend import libdevice_path as p; print(p() or '')")
if [ -n "$libdevice" ]; then
    mkdir -p "$dir/cuda/nvvm/libdevice" && cp "$libdevice" "$dir/cuda/nvvm/libdevice/"
fi
rm -rf "$dir/wheels" "$dir/site"
du -b "$dir"/site.tar.xz "$dir"/cuda 2>/dev/null || true
echo "carry [\"$dir\"]: $(du -sm "$dir" | cut -f1) MiB (+ the working tree, $(git ls-files -z | du -cm --files0-from=- | tail -1 | cut -f1) MiB; the limit is 64)"
