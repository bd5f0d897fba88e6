#!/usr/bin/env bash
# `make down`: stop what `make up` started, by the pid it recorded. The supervisor stops its
# children itself (SIGTERM, then SIGKILL after a grace period).
set -euo pipefail
cd "$(dirname "$0")/.."

DATA_DIR=${SAGEPORT_DATA_DIR:-.sageport}
PID_FILE=$DATA_DIR/sageport.pid
STOP_TIMEOUT_SECONDS=90

if [ ! -f "$PID_FILE" ]; then
    echo "Sageport is not running (no $PID_FILE)"
    exit 0
fi
source scripts/stack-pid.sh
# The pid may have been reused since: only signal the process if it is still our runstack.
if ! pid=$(running_stack_pid "$PID_FILE"); then
    echo "Sageport is not running (stale $PID_FILE removed)"
    rm -f "$PID_FILE"
    exit 0
fi
kill -TERM "$pid"
for _ in $(seq $((STOP_TIMEOUT_SECONDS * 2))); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PID_FILE"; echo "Sageport stopped"; exit 0; }
    sleep 0.5
done
echo "Sageport (pid $pid) is still stopping after ${STOP_TIMEOUT_SECONDS}s; see $DATA_DIR/sageport.log" >&2
exit 1
