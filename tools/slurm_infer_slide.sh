#!/usr/bin/env bash
# Whole-slide inference over a cohort on a Slurm cluster, one process per GPU:
#   [GPUS=16] [GPUS_PER_NODE=8] tools/slurm_infer_slide.sh PARTITION JOB_NAME CONFIG \
#       CHECKPOINT SLIDES OUT_DIR [infer_slide.py options]
# Resubmit the same command after a preemption: finished slides are skipped.
set -x
PARTITION=$1
JOB_NAME=$2
CONFIG=$3
CHECKPOINT=$4
SLIDES=$5
OUT_DIR=$6
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
SRUN_ARGS=${SRUN_ARGS:-""}
PY_ARGS=${@:7}

PYTHONPATH="$(dirname "$0")/..":$PYTHONPATH \
srun -p "${PARTITION}" \
    --job-name="${JOB_NAME}" \
    --gres=gpu:"${GPUS_PER_NODE}" \
    --ntasks="${GPUS}" \
    --ntasks-per-node="${GPUS_PER_NODE}" \
    --cpus-per-task="${CPUS_PER_TASK}" \
    --kill-on-bad-exit=1 \
    ${SRUN_ARGS} \
    python -u "$(dirname "$0")/infer_slide.py" "${CONFIG}" "${CHECKPOINT}" "${SLIDES}" \
    --out="${OUT_DIR}" --launcher="slurm" ${PY_ARGS}
