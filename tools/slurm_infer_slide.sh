#!/usr/bin/env bash
# Whole-slide inference over a cohort on a Slurm cluster, one process per GPU:
#   [GPUS=16] [GPUS_PER_NODE=8] tools/slurm_infer_slide.sh PARTITION JOB_NAME CONFIG \
#       CHECKPOINT SLIDES OUT_DIR [infer_slide.py options]
# Resubmit the same command after a preemption: finished slides are skipped.
exec "$(dirname "$0")/slurm_run.sh" "$1" "$2" "$(dirname "$0")/infer_slide.py" "$3" "$4" \
    "$5" --out="$6" "${@:7}"
