#!/usr/bin/env bash
# Create (or complete) the project's virtual environment; safe to run again.
#
#   PYTHON      interpreter for the venv             (default: python3)
#   VENV        venv folder                          (default: .venv)
#   TORCH_INSTALL  torch to install if none >= 2.1 is   (default: torch==2.13.0, CPU here)
#               there; for CUDA install the matching CUDA torch first (or set
#               TORCH_INSTALL with its --index-url) and export FORCE_CUDA=1 so mmcv's
#               ops are compiled with CUDA kernels.
#   MMCV_OPS    compiled (default): build mmcv's C++/CUDA ops from source; torch: install
#               mmcv-lite, mmcv without them (a wheel, no compiler), and run the ops
#               mmdet_pu needs as torch code (mmdet_pu.ops_fallback), e.g. where no CUDA compiler
#               matches the torch build. An mmcv whose ops run (on the GPU too, where
#               there is one) is kept either way.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
TORCH_INSTALL=${TORCH_INSTALL:-torch==2.13.0}
MMCV_OPS=${MMCV_OPS:-compiled}
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

LITE=0
if [ "$MMCV_OPS" = torch ]; then
    if ! "$PY" tools/check_env.py --mmcv-only >/dev/null 2>&1; then
        LITE=1
        if ! "$PY" -m pip show mmcv-lite >/dev/null 2>&1; then
            step "installing mmcv-lite 2.1.0, mmcv without its ops (mmdet_pu.ops_fallback runs them in torch)"
            "$PY" -m pip uninstall -y mmcv >/dev/null 2>&1 || true
            "${PIP[@]}" mmcv-lite==2.1.0
        fi
    fi
elif [ "$MMCV_OPS" != compiled ]; then
    echo "MMCV_OPS=$MMCV_OPS: expected compiled or torch" >&2
    exit 2
elif ! "$PY" tools/check_env.py --mmcv-only >/dev/null 2>&1; then
    step "installing mmcv 2.1.0 with its C++ ops (first build ~8 min on 2 cores, cached afterwards)"
    "$PY" -m pip uninstall -y mmcv mmcv-lite >/dev/null 2>&1 || true
    if ! MMCV_WITH_OPS=1 "${PIP[@]}" --no-build-isolation mmcv==2.1.0; then
        echo "building mmcv's ops failed (above); without a compiler that matches the" \
             "torch build, set up with MMCV_OPS=torch" >&2
        exit 1
    fi
    if ! "$PY" tools/check_env.py --mmcv-only >/dev/null 2>&1; then
        # a wheel built earlier without ops may sit in pip's cache: rebuild from source
        step "cached mmcv wheel has no ops: rebuilding without the cache"
        "$PY" -m pip uninstall -y mmcv
        MMCV_WITH_OPS=1 "${PIP[@]}" --no-build-isolation --no-cache-dir mmcv==2.1.0
    fi
fi

step "installing mmdet 3.3.0 and mmdet_pu (editable) with test tools"
if [ "$LITE" = 1 ]; then
    # mmcv-lite provides the mmcv package: every requirement but mmcv itself
    mapfile -t REQS < <("$PY" -c 'import configparser as c; p = c.ConfigParser(); p.read("setup.cfg"); o = p["options"]; e = p["options.extras_require"]; print("\n".join(r for r in (o["install_requires"] + e["dev"]).split("\n") if r.strip() and not r.startswith("mmcv")))')
    "${PIP[@]}" "${REQS[@]}"
    "${PIP[@]}" --no-build-isolation --no-deps -e .
else
    "${PIP[@]}" --no-build-isolation -e ".[dev]"
fi

step "checking the environment"
"$PY" tools/check_env.py
