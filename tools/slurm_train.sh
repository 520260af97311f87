#!/usr/bin/env bash
# Usage: [GPUS=8] tools/slurm_train.sh PARTITION JOB_NAME CONFIG WORK_DIR [train.py options]
exec "$(dirname "$0")/slurm_run.sh" "$1" "$2" "$(dirname "$0")/train.py" "$3" \
    --work-dir="$4" "${@:5}"
