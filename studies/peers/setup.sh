#!/usr/bin/env bash
# Create the GNINA peer-baseline environment, reachable as studies/peers/.venv-gnina.
#
# molgrid 0.5.5 is built against numpy 1.x and fails to import under numpy 2, so GNINA scoring lives
# in its own virtual environment instead of the main project venv.
#
# The environment itself is made outside the repository (GNINA_VENV_HOME, by default
# ${XDG_CACHE_HOME:-~/.cache}/pecan/venv-gnina) and studies/peers/.venv-gnina is a symlink to it:
# the repository's checks walk studies/ for .py files and must not descend into site-packages
# (pathlib's rglob does not follow directory symlinks). Re-running this script reuses the environment.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LINK="$HERE/.venv-gnina"
VENV="${GNINA_VENV_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/pecan/venv-gnina}"
PYTHON="${PYTHON:-python3}"

if [ -d "$LINK" ] && [ ! -L "$LINK" ]; then
    if [ -f "$LINK/pyvenv.cfg" ]; then
        echo "replacing the in-tree environment $LINK by a symlink to $VENV"
        rm -rf "$LINK"
    else
        echo "$LINK exists and is not a virtual environment; move it away first" >&2
        exit 1
    fi
fi

if [ ! -x "$VENV/bin/python" ]; then
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
fi
ln -sfn "$VENV" "$LINK"
PIP=("$VENV/bin/python" -m pip install --no-input)

# CPU-only torch first, pinned, so that gninatorch's unpinned "torch" requirement is already
# satisfied and pip never pulls a CUDA build.
"${PIP[@]}" "torch==${GNINA_TORCH_VERSION:-2.13.0}"
"${PIP[@]}" "numpy<2" "molgrid==0.5.5" "gninatorch==0.0.2" "python-hostlist>=1.23"

"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
import molgrid, torch, gninatorch, hostlist  # noqa: F401  (import check)
for name in ("torch", "numpy", "molgrid", "gninatorch", "python-hostlist"):
    print(f"{name}=={md.version(name)}")
PY
echo "GNINA environment ready: $LINK -> $VENV"
