#!/usr/bin/env bash
# Whole-slide inference over a cohort, sharded over NPROC processes per node (torchrun):
#   tools/dist_infer_slide.sh CONFIG CHECKPOINT SLIDES NPROC --out OUT_DIR [infer_slide.py options]
# Several nodes: run it on each with NNODES, NODE_RANK, MASTER_ADDR (and PORT) set. Without
# a GPU the processes run on CPUs (gloo). Rerun the same command to resume (docs/slides.md).
CONFIG=$1
CHECKPOINT=$2
SLIDES=$3
NPROC=$4
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}

PYTHONPATH="$(dirname "$0")/..":$PYTHONPATH \
torchrun --nnodes="$NNODES" --node_rank="$NODE_RANK" --master_addr="$MASTER_ADDR" \
    --nproc_per_node="$NPROC" --master_port="$PORT" \
    "$(dirname "$0")/infer_slide.py" "$CONFIG" "$CHECKPOINT" "$SLIDES" --launcher pytorch \
    "${@:5}"
