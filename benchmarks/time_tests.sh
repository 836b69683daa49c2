#!/usr/bin/env bash
# Wall time of the test suite, an older checkout beside this one, with the machine's other jobs paused.
#
#   bash benchmarks/time_tests.sh BEFORE_CHECKOUT [PATTERN]
#
# BEFORE_CHECKOUT: a checkout (e.g. `git worktree add /tmp/before REV`) run in one process with its own marks;
# this checkout runs as `make test` does (-n auto --dist worksteal). PATTERN (grep -E over `ps` command lines,
# default: pecan redock and the corpus benchmarks) names background jobs whose process groups are stopped
# (SIGSTOP) for the measurement and continued after it. Prints one line per run; logs in $OUT (default /tmp).
set -u
BEFORE=$(cd "$1" && pwd)
PATTERN=${2:-"pecan redock|realdock/run.py|ship.py|gnina_score"}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$HERE/.venv/bin/python}
OUT=${OUT:-/tmp}
groups=$(ps -eo pgid,cmd | grep -E "$PATTERN" | grep -v grep | awk '{print $1}' | sort -u)
for g in $groups; do kill -STOP -- "-$g"; done
trap 'for g in $groups; do kill -CONT -- "-$g"; done' EXIT
lscpu | grep -E "Model name|^CPU\(s\)"
run() {  # name checkout args...
  local name=$1 dir=$2
  shift 2
  local start end
  start=$(date +%s.%N)
  (cd "$dir" && PYTHONPATH=$dir "$PY" -m pytest -q -p no:cacheprovider "$@" > "$OUT/time_tests_$name.log" 2>&1)
  end=$(date +%s.%N)
  echo "$name $(echo "$end - $start" | bc) s: $(tail -1 "$OUT/time_tests_$name.log")"
}
FAST='(not slow and not multiprocess) or ddp_smoke'
run before_fast "$BEFORE" tests -m "$FAST"
run after_fast "$HERE" -n auto --dist worksteal tests -m "$FAST"
run after_full "$HERE" -n auto --dist worksteal --durations=15 tests
run before_full "$BEFORE" --durations=15 tests
