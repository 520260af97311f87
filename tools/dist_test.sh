#!/usr/bin/env bash
# Usage: tools/dist_test.sh CONFIG CHECKPOINT GPUS [test.py options]
exec "$(dirname "$0")/dist_run.sh" "$3" "$(dirname "$0")/test.py" "$1" "$2" \
    --launcher pytorch "${@:4}"
