#!/usr/bin/env bash
# Usage: tools/slurm_run.sh PARTITION JOB_NAME COMMAND [ARGS...]: COMMAND (a Python script)
# on GPUS processes (GPUS_PER_NODE per node; CPUS_PER_TASK, SRUN_ARGS) of a Slurm job,
# with --launcher slurm. The body of slurm_train.sh and slurm_infer_slide.sh.
set -x
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
SRUN_ARGS=${SRUN_ARGS:-""}

# shellcheck disable=SC2086  (SRUN_ARGS holds several options)
PYTHONPATH="$(dirname "$0")/..":$PYTHONPATH \
srun -p "$1" \
    --job-name="$2" \
    --gres=gpu:"${GPUS_PER_NODE}" \
    --ntasks="${GPUS}" \
    --ntasks-per-node="${GPUS_PER_NODE}" \
    --cpus-per-task="${CPUS_PER_TASK}" \
    --kill-on-bad-exit=1 \
    ${SRUN_ARGS} \
    python -u "${@:3}" --launcher=slurm
