#!/usr/bin/env bash
# The SageMaker Python SDK v3 in a virtualenv of its own, for the tests that drive it: v3 shares
# the package name `sagemaker` with v2 (which .venv holds), so one environment holds only one.
# Made once; a second run reuses it (remove .venv-sdk-v3 to make it again).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv-sdk-v3
REQUIREMENT='sagemaker>=3.27,<4'
STAMP=$VENV/.installed

log() { echo "sdk-v3-venv: $*" >&2; }

if [ "$(cat "$STAMP" 2>/dev/null)" != "$REQUIREMENT" ]; then
    [ -x "$VENV/bin/python" ] || { log "creating $VENV"; "$PYTHON" -m venv "$VENV"; }
    log "installing $REQUIREMENT into $VENV (once)"
    "$VENV/bin/pip" install -q "$REQUIREMENT"
    echo "$REQUIREMENT" >"$STAMP"
fi
echo "$VENV/bin/python"
