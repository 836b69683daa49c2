#!/usr/bin/env bash
# Wall time of `make test` and `make test-fast` (lint included), an older checkout beside this one, with the
# machine's other jobs paused.
#
#   bash benchmarks/time_tests.sh BEFORE_CHECKOUT [PATTERN]
#
# BEFORE_CHECKOUT: a checkout (e.g. `git worktree add /tmp/before REV`). Both sides run what the Makefile's
# `test` and `test-fast` targets run (ruff check, ruff format --check, then pytest -n $TEST_WORKERS --dist
# worksteal), each with this checkout's interpreter and its own tests. Each run gets an empty torch.compile
# cache (TORCHINDUCTOR_CACHE_DIR), as on a fresh machine: the compile tests then pay their whole C++ build,
# and neither side profits from what an earlier run left behind.
# PATTERN (grep -E over `ps` command lines, default: pecan redock, the corpus and realdock benchmarks) names
# background jobs whose process groups are stopped (SIGSTOP) for the measurement and continued after it.
# Prints one line per run with the load average before it; logs in $OUT (default /tmp).
set -u
BEFORE=$(cd "$1" && pwd)
PATTERN=${2:-"pecan redock|pecan.redock.child|realdock/run.py|augment.py|ship.py|gnina_score"}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$HERE/.venv/bin/python}
RUFF=${RUFF:-$HERE/.venv/bin/ruff}
WORKERS=${TEST_WORKERS:-auto}
OUT=${OUT:-/tmp}
groups=$(ps -eo pgid,cmd | grep -E "$PATTERN" | grep -v grep | awk '{print $1}' | sort -u)
for g in $groups; do kill -STOP -- "-$g"; done
trap 'for g in $groups; do kill -CONT -- "-$g"; done' EXIT
lscpu | grep -E "Model name|^CPU\(s\)"
run() {  # name checkout pytest-args...
  local name=$1 dir=$2
  shift 2
  local start end cache
  cache=$(mktemp -d)
  local load
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date +%s.%N)
  (cd "$dir" && "$RUFF" check . && "$RUFF" format --check . &&
    TORCHINDUCTOR_CACHE_DIR=$cache PYTHONPATH=$dir "$PY" -m pytest -q -p no:cacheprovider -n "$WORKERS" \
      --dist worksteal "$@") > "$OUT/time_tests_$name.log" 2>&1
  end=$(date +%s.%N)
  rm -rf "$cache"
  echo "$name $(echo "$end - $start" | bc) s (load before: $load): $(tail -1 "$OUT/time_tests_$name.log")"
}
FAST='(not slow and not multiprocess) or ddp_smoke'
run before_fast "$BEFORE" tests -m "$FAST"
run after_fast "$HERE" tests -m "$FAST"
run after_full "$HERE" --durations=15 tests
run before_full "$BEFORE" --durations=15 tests
