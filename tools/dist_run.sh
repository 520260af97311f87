#!/usr/bin/env bash
# Usage: tools/dist_run.sh GPUS COMMAND [ARGS...]: COMMAND (a Python script) under torchrun
# on GPUS processes per node; NNODES, NODE_RANK, PORT, MASTER_ADDR from the environment.
# The body of dist_train.sh and dist_test.sh.
GPUS=$1
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}

PYTHONPATH="$(dirname "$0")/..":$PYTHONPATH \
torchrun --nnodes="$NNODES" --node_rank="$NODE_RANK" --master_addr="$MASTER_ADDR" \
    --nproc_per_node="$GPUS" --master_port="$PORT" "${@:2}"
