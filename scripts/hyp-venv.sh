#!/usr/bin/env bash
# AWS's HyperPod CLI (`hyp`, PyPI sagemaker-hyperpod) in a virtualenv of its own, for the test that
# drives it against the HyperPodPyTorchJob API: its pinned dependencies (click, requests, pytest,
# ruff, ...) clash with .venv's. kubernetes is pinned to 35, as in .venv: 37 sends custom objects
# as text/plain, which a Kubernetes API server refuses (415). Made once; a second run reuses it.
set -euo pipefail

PYTHON=${PYTHON:-python3}
VENV=${XDG_CACHE_HOME:-$HOME/.cache}/sageport/hyp-venv
REQUIREMENTS='sagemaker-hyperpod==3.12.0 kubernetes==35.0.0'
STAMP=$VENV/.installed

log() { echo "hyp-venv: $*" >&2; }

if [ "$(cat "$STAMP" 2>/dev/null)" != "$REQUIREMENTS" ]; then
    [ -x "$VENV/bin/python" ] || { log "creating $VENV"; "$PYTHON" -m venv "$VENV"; }
    log "installing $REQUIREMENTS into $VENV (once)"
    # shellcheck disable=SC2086  # the requirements are words
    "$VENV/bin/pip" install -q $REQUIREMENTS
    echo "$REQUIREMENTS" >"$STAMP"
fi
echo "$VENV/bin/hyp"
