#!/usr/bin/env bash
# Whole-slide inference over a cohort, sharded over NPROC processes per node (torchrun):
#   tools/dist_infer_slide.sh CONFIG CHECKPOINT SLIDES NPROC --out OUT_DIR [infer_slide.py options]
# Several nodes: run it on each with NNODES, NODE_RANK, MASTER_ADDR (and PORT) set. Without
# a GPU the processes run on CPUs (gloo). Rerun the same command to resume (docs/slides.md).
exec "$(dirname "$0")/dist_run.sh" "$4" "$(dirname "$0")/infer_slide.py" "$1" "$2" "$3" \
    --launcher pytorch "${@:5}"
