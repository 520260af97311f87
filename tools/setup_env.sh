#!/usr/bin/env bash
# Create (or complete) the project's virtual environment; safe to run again.
#
#   PYTHON      interpreter for the venv             (default: python3)
#   VENV        venv folder                          (default: .venv)
#   TORCH_INSTALL  torch to install if none >= 2.1 is   (default: torch==2.13.0, CPU here)
#               there; for CUDA install the matching CUDA torch first (or set
#               TORCH_INSTALL with its --index-url) and export FORCE_CUDA=1 so mmcv's
#               ops are compiled with CUDA kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
TORCH_INSTALL=${TORCH_INSTALL:-torch==2.13.0}
PY="$VENV/bin/python"
PIP=("$PY" -m pip install --progress-bar off)

step() { printf '\n==> %s\n' "$*"; }

if [ ! -x "$PY" ]; then
    step "creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi

if ! "$PY" -c 'import sys, torch; v = torch.__version__.split("+")[0].split("."); sys.exit(tuple(map(int, v[:2])) < (2, 1))' 2>/dev/null; then
    step "installing $TORCH_INSTALL"
    # shellcheck disable=SC2086  (TORCH_INSTALL may carry pip options such as --index-url)
    "${PIP[@]}" $TORCH_INSTALL
fi

step "build tools for mmcv (setuptools < 82 keeps pkg_resources for mmengine)"
"${PIP[@]}" "setuptools>=77,<82" wheel ninja numpy

if ! "$PY" tools/check_env.py --mmcv-only >/dev/null 2>&1; then
    step "installing mmcv 2.1.0 with its C++ ops (first build ~8 min on 2 cores, cached afterwards)"
    "$PY" -m pip uninstall -y mmcv mmcv-lite >/dev/null 2>&1 || true
    MMCV_WITH_OPS=1 "${PIP[@]}" --no-build-isolation mmcv==2.1.0
    if ! "$PY" tools/check_env.py --mmcv-only >/dev/null 2>&1; then
        # a wheel built earlier without ops may sit in pip's cache: rebuild from source
        step "cached mmcv wheel has no ops: rebuilding without the cache"
        "$PY" -m pip uninstall -y mmcv
        MMCV_WITH_OPS=1 "${PIP[@]}" --no-build-isolation --no-cache-dir mmcv==2.1.0
    fi
fi

step "installing mmdet 3.3.0 and mmdet_pu (editable) with test tools"
"${PIP[@]}" --no-build-isolation -e ".[dev]"

step "checking the environment"
"$PY" tools/check_env.py
