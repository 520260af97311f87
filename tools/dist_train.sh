#!/usr/bin/env bash
# Usage: tools/dist_train.sh CONFIG GPUS [train.py options]
exec "$(dirname "$0")/dist_run.sh" "$2" "$(dirname "$0")/train.py" "$1" --launcher pytorch \
    "${@:3}"
