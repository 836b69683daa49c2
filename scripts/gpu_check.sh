#!/usr/bin/env bash
# The GPU check in one command (benchmarks/gpu_check.py): run from the repository root on a machine with one GPU.
# Where the machine cannot reach a package index, wheels prepared by scripts/gpu_check_wheels.sh in .whl/ are
# installed first into a private folder (python-hostlist, pydftracer and the native dftracer for real traces).
#   bash scripts/gpu_check.sh [OUT.json] [gpu_check options ...]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-.}/gpu_check.json}"
shift || true
PYTHON="${PYTHON:-python3}"
if compgen -G ".whl/*.whl" >/dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/pecan-site .whl/*.whl
    export PYTHONPATH="/tmp/pecan-site${PYTHONPATH:+:$PYTHONPATH}"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true
PYTHONUNBUFFERED=1 exec "$PYTHON" -m benchmarks.gpu_check --out "$out" "$@"
