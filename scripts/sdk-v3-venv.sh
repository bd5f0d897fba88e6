#!/usr/bin/env bash
# The SageMaker Python SDK v3 in a virtualenv of its own, for the tests that drive it: v3 shares
# the package name `sagemaker` with v2 (which .venv holds), so one environment holds only one.
# Made once per machine, like hyp-venv.sh's: it holds nothing of the checkout, so .venv-sdk-v3 is
# a link to it and a fresh clone finds it made (resolving and installing it takes minutes). A
# .venv-sdk-v3 that already holds the SDK (a directory of its own, made before) is used as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
LINK=.venv-sdk-v3
SHARED_VENV=${XDG_CACHE_HOME:-$HOME/.cache}/sageport/sdk-v3-venv
REQUIREMENT='sagemaker>=3.27,<4'

log() { echo "sdk-v3-venv: $*" >&2; }
installed() { [ "$(cat "$1/.installed" 2>/dev/null)" = "$REQUIREMENT" ]; }

if ! installed "$LINK"; then
    if [ -d "$LINK" ] && [ ! -L "$LINK" ]; then venv=$LINK; else venv=$SHARED_VENV; fi
    mkdir -p "$(dirname "$SHARED_VENV")"
    exec 9>"$SHARED_VENV.lock" && flock 9  # two checkouts' test sessions may ask at once
    if ! installed "$venv"; then
        [ -x "$venv/bin/python" ] || { log "creating $venv"; "$PYTHON" -m venv "$venv"; }
        log "installing $REQUIREMENT into $venv (once)"
        # --no-compile: Python compiles the modules the tests import, on first import (bootstrap.sh).
        "$venv/bin/pip" install -q --no-compile "$REQUIREMENT"
        echo "$REQUIREMENT" >"$venv/.installed"
    fi
    [ "$venv" = "$LINK" ] || ln -sfn "$venv" "$LINK"
fi
echo "$LINK/bin/python"
