#!/usr/bin/env bash
# Fetch, on a machine that reaches PyPI, the wheels scripts/gpu_check.sh installs on a GPU machine that does not:
# PECAN's pure-Python needs the GPU image may lack and the native dftracer (real traces), for CPython 3.12 x86-64.
# dftracer-utils (73 MB, trace analysis only; the tracer does not link it) is left out: a device call carries 64 MiB.
#   bash scripts/gpu_check_wheels.sh [PYTHON_VERSION]      (default 3.12; writes .whl/, which git ignores)
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-3.12}"
platforms=()
for n in 17 24 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
rm -rf .whl && mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$version" --implementation cp \
    "${platforms[@]}" -d .whl pydftracer dftracer
# python-hostlist ships only a source archive: build its pure-Python wheel here.
python3 -m pip wheel -q --no-deps -w .whl python-hostlist
ls -l .whl
