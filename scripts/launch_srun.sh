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

launcher=launch_srun
# shellcheck source=scripts/launch_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/launch_common.sh"

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

make_task_env "$TASKS_PER_NODE"

# One failed rank ends the step instead of leaving the others waiting in a collective.
cmd=(srun --nodes="$NODES" --ntasks-per-node="$TASKS_PER_NODE" --cpu-bind="${CPU_BIND:-none}" --kill-on-bad-exit=1)
if (( GPUS_PER_TASK > 0 )); then cmd+=(--gpus-per-task="$GPUS_PER_TASK"); fi
if [[ -n ${CPUS_PER_TASK:-} ]]; then cmd+=(--cpus-per-task="$CPUS_PER_TASK"); fi
cmd+=("${task_env[@]}" "$python" -u "$app" "$@")

echo "[pecan] world size $(( NODES * TASKS_PER_NODE )) ($NODES x $TASKS_PER_NODE); master: first node of the step"
launch "${cmd[@]}"
