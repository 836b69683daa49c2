# Shared opening of the launch scripts; sourced, never run. The sourcing script sets `launcher`
# (its name, for messages) before sourcing and passes its arguments through.
#
# Provides: die, script_dir, app, python, dry_run, physical_cores, threads_per_rank, task_env,
# launch (print the command, honour PECAN_DRY_RUN, exec).

die() { echo "$launcher: error: $*" >&2; exit 1; }

if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
    awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"
    exit 2
fi

script_dir=$(cd "$(dirname "$0")" && pwd)
app="$(cd "$script_dir/.." && pwd)/main_app.py"
python=${PYTHON:-python}
dry_run=${PECAN_DRY_RUN:-0}
[[ -f $1 ]] || die "config file '$1' not found"

# Distinct (socket, core) pairs: hyperthreads share a core's decode throughput.
# The same count as pecan.engine.distributed.physical_cores, without starting Python.
physical_cores() {
    local cores logical
    cores=$(awk -F: '/^physical id/ {socket=$2} /^core id/ {print socket ":" $2}' /proc/cpuinfo 2>/dev/null \
        | sort -u | wc -l)
    logical=$(nproc 2>/dev/null || echo 1)
    if (( cores < 1 || cores > logical )); then cores=$logical; fi
    echo "$cores"
}

# OMP_NUM_THREADS for RANKS_PER_NODE ranks sharing a node, unless the user set it.
threads_per_rank() {
    local threads=${OMP_NUM_THREADS:-}
    if [[ -z $threads ]]; then
        threads=$(( $(physical_cores) / $1 ))
        (( threads > 0 )) || threads=1
    fi
    echo "$threads"
}

# Environment of every rank. Python output must not sit in a buffer: a slow import and a hung
# rendezvous look the same otherwise.
make_task_env() {
    task_env=(env PYTHONUNBUFFERED=1 "OMP_NUM_THREADS=$(threads_per_rank "$1")")
    if [[ -n ${PECAN_JEMALLOC:-} ]]; then
        [[ -f $PECAN_JEMALLOC ]] || die "PECAN_JEMALLOC='$PECAN_JEMALLOC' is not a file"
        task_env+=("LD_PRELOAD=$PECAN_JEMALLOC${LD_PRELOAD:+:$LD_PRELOAD}")
    fi
}

launch() {
    echo "[pecan] launch: $(printf '%q ' "$@")"
    if [[ $dry_run == 1 ]]; then exit 0; fi
    [[ -f $app ]] || die "$app not found"
    exec "$@"
}
