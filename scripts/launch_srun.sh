#!/usr/bin/env bash
# Launch PECAN training under Slurm: srun --nodes --ntasks-per-node --gpus-per-task.
#
# Usage: scripts/launch_srun.sh CONFIG.yaml [--set key=value ...]
# Run it inside an allocation: `salloc -N4 ...`, or from an `sbatch` script.
#
# Environment (defaults in brackets):
#   NODES [nodes of the allocation]   nodes for the step
#   TASKS_PER_NODE [4]    ranks per node; set it to the GPUs per node
#   GPUS_PER_TASK [1]     GPUs per rank; 0 for a CPU-only run
#   CPUS_PER_TASK [allocated CPUs per node / TASKS_PER_NODE]  so the step gets the node's cores
#   CPU_BIND [none]       ranks of a node share its cores; data loader workers are sized for that
#   MASTER_PORT           rendezvous port [20000 + job id % 20000]; the master is the step's first node
#   PYTHON [python]       interpreter
#   PECAN_JEMALLOC        path of libjemalloc.so to preload into the Python processes
#   OMP_NUM_THREADS       [physical cores per rank]
#   PECAN_DRY_RUN=1       print the command and exit
set -euo pipefail

die() { echo "launch_srun: error: $*" >&2; exit 1; }

if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
    awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "${BASH_SOURCE[0]}"
    exit 2
fi

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
app="$(cd "$script_dir/.." && pwd)/main_app.py"
python=${PYTHON:-python}
dry_run=${PECAN_DRY_RUN:-0}
[[ -f $1 ]] || die "config file '$1' not found"

# Distinct (socket, core) pairs: hyperthreads share a core's decode throughput.
physical_cores() {
    local cores logical
    cores=$(awk -F: '/^physical id/ {socket=$2} /^core id/ {print socket ":" $2}' /proc/cpuinfo 2>/dev/null \
        | sort -u | wc -l)
    logical=$(nproc 2>/dev/null || echo 1)
    if (( cores < 1 || cores > logical )); then cores=$logical; fi
    echo "$cores"
}

if (( dry_run != 1 )); then
    command -v srun >/dev/null 2>&1 || die "srun is not on PATH"
    [[ -n ${SLURM_JOB_ID:-} ]] || echo "launch_srun: warning: not inside an allocation; srun will request one" >&2
fi

NODES=${NODES:-${SLURM_JOB_NUM_NODES:-${SLURM_NNODES:-1}}}
TASKS_PER_NODE=${TASKS_PER_NODE:-4}
GPUS_PER_TASK=${GPUS_PER_TASK:-1}
for name in NODES TASKS_PER_NODE GPUS_PER_TASK; do
    [[ ${!name} =~ ^[0-9]+$ ]] || die "$name='${!name}' is not a non-negative integer"
done
(( NODES > 0 && TASKS_PER_NODE > 0 )) || die "NODES and TASKS_PER_NODE must be at least 1"
# Without --cpus-per-task a step gets one CPU per task and every loader worker shares it.
# SLURM_CPUS_ON_NODE is a plain number on the batch/allocation node.
if [[ -z ${CPUS_PER_TASK:-} && ${SLURM_CPUS_ON_NODE:-} =~ ^[0-9]+$ ]]; then
    CPUS_PER_TASK=$(( SLURM_CPUS_ON_NODE / TASKS_PER_NODE ))
    (( CPUS_PER_TASK > 0 )) || CPUS_PER_TASK=1
fi

if [[ -z ${OMP_NUM_THREADS:-} ]]; then
    OMP_NUM_THREADS=$(( $(physical_cores) / TASKS_PER_NODE ))
    (( OMP_NUM_THREADS > 0 )) || OMP_NUM_THREADS=1
fi

# Python output must not sit in a buffer: a slow import and a hung rendezvous look the same otherwise.
task_env=(env PYTHONUNBUFFERED=1 "OMP_NUM_THREADS=$OMP_NUM_THREADS")
if [[ -n ${PECAN_JEMALLOC:-} ]]; then
    [[ -f $PECAN_JEMALLOC ]] || die "PECAN_JEMALLOC='$PECAN_JEMALLOC' is not a file"
    task_env+=("LD_PRELOAD=$PECAN_JEMALLOC${LD_PRELOAD:+:$LD_PRELOAD}")
fi

# One failed rank ends the step instead of leaving the others waiting in a collective.
cmd=(srun --nodes="$NODES" --ntasks-per-node="$TASKS_PER_NODE" --cpu-bind="${CPU_BIND:-none}" --kill-on-bad-exit=1)
if (( GPUS_PER_TASK > 0 )); then cmd+=(--gpus-per-task="$GPUS_PER_TASK"); fi
if [[ -n ${CPUS_PER_TASK:-} ]]; then cmd+=(--cpus-per-task="$CPUS_PER_TASK"); fi
cmd+=("${task_env[@]}" "$python" -u "$app" "$@")

echo "[pecan] world size $(( NODES * TASKS_PER_NODE )) ($NODES x $TASKS_PER_NODE); master: first node of the step"
echo "[pecan] launch: $(printf '%q ' "${cmd[@]}")"
if [[ $dry_run == 1 ]]; then exit 0; fi
[[ -f $app ]] || die "$app not found"
exec "${cmd[@]}"
