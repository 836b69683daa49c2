#!/usr/bin/env bash
# Launch PECAN training with torchrun: one node (--standalone) or NNODES nodes (c10d rendezvous).
#
# Usage: scripts/launch_torchrun.sh CONFIG.yaml [--set key=value ...]
#
# Environment (defaults in brackets):
#   NNODES [1]            nodes taking part; run this script once on each of them when > 1
#   NPROC_PER_NODE [GPUs] ranks per node: `nvidia-smi -L` count, or 1 without GPUs
#   NODE_RANK             set it (0 on the MASTER_ADDR node) to use a static rendezvous instead of c10d
#   MASTER_ADDR           rendezvous host, required when NNODES > 1; the same value on every node
#   MASTER_PORT [29500]   rendezvous port
#   RDZV_ID [pecan]       c10d job id; change it to run two jobs on the same endpoint
#   PYTHON [python]       interpreter
#   PECAN_JEMALLOC        path of libjemalloc.so to preload into the Python processes
#   OMP_NUM_THREADS       [physical cores per rank]
#   STOP_SIGNAL [USR1]    torchrun ignores this signal (its default action would kill it) while the ranks
#                         stop on it with a checkpoint; match train.stop_signal (docs/time-limits.md)
#   PECAN_DRY_RUN=1       print the command and exit
set -euo pipefail

launcher=launch_torchrun
# shellcheck source=scripts/launch_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/launch_common.sh"

gpu_count() {
    local count
    count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
    echo "${count:-0}"
}

NNODES=${NNODES:-1}
if [[ -z ${NPROC_PER_NODE:-} ]]; then
    NPROC_PER_NODE=$(gpu_count)
    (( NPROC_PER_NODE > 0 )) || NPROC_PER_NODE=1
fi
MASTER_PORT=${MASTER_PORT:-29500}
[[ $NNODES =~ ^[1-9][0-9]*$ ]] || die "NNODES='$NNODES' is not a positive integer"
[[ $NPROC_PER_NODE =~ ^[1-9][0-9]*$ ]] || die "NPROC_PER_NODE='$NPROC_PER_NODE' is not a positive integer"

make_task_env "$NPROC_PER_NODE"
# torchrun passes this environment, and -u, on to every rank it starts.

cmd=("${task_env[@]}" "$python" -u -m torch.distributed.run --nproc-per-node="$NPROC_PER_NODE")
if (( NNODES == 1 )); then
    cmd+=(--standalone)
else
    # 127.0.0.1 would point every node at itself and the rendezvous would never complete.
    [[ -n ${MASTER_ADDR:-} ]] || die "MASTER_ADDR must name the same rendezvous host on every node when NNODES > 1"
    if [[ -n ${NODE_RANK:-} ]]; then
        cmd+=(--nnodes="$NNODES" --node-rank="$NODE_RANK" --master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT")
    else
        cmd+=(--nnodes="$NNODES" --rdzv-backend=c10d --rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT"
              --rdzv-id="${RDZV_ID:-pecan}")
    fi
fi
cmd+=("$app" "$@")

# Slurm's --signal=USR1@120 reaches every process of the step: torchrun must survive it, the ranks install
# their own handler (an ignored signal stays ignored across exec until a process sets a handler).
stop_signal=${STOP_SIGNAL:-USR1}
stop_signal=${stop_signal%%@*}
trap '' "${stop_signal#SIG}" || die "STOP_SIGNAL='$STOP_SIGNAL' is not a signal name"
launch "${cmd[@]}"
