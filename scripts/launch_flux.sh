#!/usr/bin/env bash
# Launch PECAN training under flux: flux run -N$NODES -n$((NODES*TASKS_PER_NODE)) -g$GPUS_PER_TASK.
#
# Usage: scripts/launch_flux.sh CONFIG.yaml [--set key=value ...]
# Run it inside an allocation: `flux alloc -N4`, or from a `flux batch -N4` script.
#
# Environment (defaults in brackets):
#   NODES [all nodes of the instance]  nodes for the job
#   TASKS_PER_NODE [4]    ranks per node; set it to the GPUs per node
#   GPUS_PER_TASK [1]     GPUs per rank; 0 for a CPU-only run
#   EXCLUSIVE [1]         whole nodes (-x), so data loader workers may use every core
#   TIME_LIMIT            flux duration (e.g. 4h): adds -t TIME_LIMIT --signal=STOP_SIGNAL, so the ranks
#                         stop with a checkpoint before the limit (docs/time-limits.md)
#   STOP_SIGNAL [USR1@2m] signal and lead time for --signal; the signal must match train.stop_signal
#   MASTER_PORT [29500]   rendezvous port
#   PECAN_MASTER_ADDR     rendezvous host; default: the first node of the job, resolved here
#   PYTHON [python]       interpreter
#   PECAN_JEMALLOC        path of libjemalloc.so to preload into the Python processes
#   OMP_NUM_THREADS       [physical cores per rank]
#   PECAN_DRY_RUN=1       print the command and exit
set -euo pipefail

launcher=launch_flux
# shellcheck source=scripts/launch_common.sh
source "$(dirname "${BASH_SOURCE[0]}")/launch_common.sh"

# First host of an RFC 29 host list, e.g. "node[07-10,12],gpu3" -> node07, without expanding it all.
first_host() {
    local host=$1
    local first_element='^([^],[]*(\[[^]]*\][^],[]*)*)'
    local first_range='^([^[]*)\[([^],-]+)[^]]*\](.*)$'
    [[ $host =~ $first_element ]] && host=${BASH_REMATCH[1]}
    while [[ $host =~ $first_range ]]; do
        host=${BASH_REMATCH[1]}${BASH_REMATCH[2]}${BASH_REMATCH[3]}
    done
    [[ -n $host && $host != *[][,]* ]] || return 1
    echo "$host"
}

have_flux=0
if command -v flux >/dev/null 2>&1; then have_flux=1; fi
(( have_flux || dry_run == 1 )) || die "the flux command is not on PATH; run inside a flux instance"

instance_size=0
if (( have_flux )); then instance_size=$(flux getattr size); fi
NODES=${NODES:-$instance_size}
(( NODES > 0 )) || NODES=1
TASKS_PER_NODE=${TASKS_PER_NODE:-4}
GPUS_PER_TASK=${GPUS_PER_TASK:-1}
EXCLUSIVE=${EXCLUSIVE:-1}
for name in NODES TASKS_PER_NODE GPUS_PER_TASK; do
    [[ ${!name} =~ ^[0-9]+$ ]] || die "$name='${!name}' is not a non-negative integer"
done
(( TASKS_PER_NODE > 0 )) || die "TASKS_PER_NODE must be at least 1"
world_size=$(( NODES * TASKS_PER_NODE ))

# Every rank must dial the same master, and rank 0 runs on the job's first node. flux gives tasks no
# node list, so resolve that node here, once, and hand the same string to every task.
task_wrapper=()
master_source="PECAN_MASTER_ADDR"
if [[ -z ${PECAN_MASTER_ADDR:-} ]]; then
    if (( ! have_flux )); then
        PECAN_MASTER_ADDR="<first-node-of-job>"
        master_source="dry run without flux"
    elif (( NODES >= instance_size )); then
        # The job spans the whole instance, so its first node is the instance's first broker's host.
        PECAN_MASTER_ADDR=$(first_host "$(flux getattr hostlist)") || die "cannot parse 'flux getattr hostlist'"
        master_source="flux getattr hostlist"
    else
        # A job on part of the instance gets nodes the scheduler picks later; each task reads the
        # first host of its own job's resource set, which is the same answer on every rank.
        flux hostlist --help >/dev/null 2>&1 \
            || die "NODES=$NODES < $instance_size instance nodes needs 'flux hostlist' (flux-core >= 0.58); run inside 'flux alloc -N$NODES' or set PECAN_MASTER_ADDR"
        # shellcheck disable=SC2016  # expanded by the task's shell, not here
        task_wrapper=(bash -c 'PECAN_MASTER_ADDR=$(flux hostlist -n 0 "$FLUX_JOB_ID") && export PECAN_MASTER_ADDR && exec "$@"' pecan-master)
        PECAN_MASTER_ADDR=""
        master_source="flux hostlist -n 0 \$FLUX_JOB_ID, in each task"
    fi
fi

make_task_env "$TASKS_PER_NODE"
task_env+=("PECAN_WORLD_SIZE=$world_size" "PECAN_LOCAL_WORLD_SIZE=$TASKS_PER_NODE" "PECAN_MASTER_PORT=${MASTER_PORT:-29500}")
if [[ -n $PECAN_MASTER_ADDR ]]; then task_env+=("PECAN_MASTER_ADDR=$PECAN_MASTER_ADDR"); fi

# Per-resource and per-task options cannot be mixed: only -N/-n/-g (and -x, valid with either).
cmd=(flux run -N"$NODES" -n"$world_size")
if (( GPUS_PER_TASK > 0 )); then cmd+=(-g"$GPUS_PER_TASK"); fi
if [[ -n ${TIME_LIMIT:-} ]]; then cmd+=(-t "$TIME_LIMIT" --signal="${STOP_SIGNAL:-USR1@2m}"); fi
if [[ $EXCLUSIVE == 1 ]]; then cmd+=(-x); fi
cmd+=(${task_wrapper[@]+"${task_wrapper[@]}"} "${task_env[@]}" "$python" -u "$app" "$@")

echo "[pecan] master from $master_source; world size $world_size ($NODES x $TASKS_PER_NODE)"
launch "${cmd[@]}"
