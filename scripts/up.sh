#!/usr/bin/env bash
# `make up`: the stack of `make run`, in the background. `make down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA_DIR=${SAGEPORT_DATA_DIR:-.sageport}
PID_FILE=$DATA_DIR/sageport.pid
LOG_FILE=$DATA_DIR/sageport.log
READY_BANNER="Sageport is running."  # printed by manage.py runstack once every service is ready

source scripts/stack-pid.sh
if pid=$(running_stack_pid "$PID_FILE"); then
    echo "Sageport is already running (pid $pid); stop it with: make down"
    exit 0
fi
if [ -f "$PID_FILE" ]; then
    echo "Removing the stale $PID_FILE (pid $(cat "$PID_FILE") is not a running Sageport)"
    rm -f "$PID_FILE"
fi
mkdir -p "$DATA_DIR"
# Its own session, so that a Ctrl-C in this terminal never reaches the stack.
setsid nohup .venv/bin/python manage.py runstack >"$LOG_FILE" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$PID_FILE"

until grep -qF "$READY_BANNER" "$LOG_FILE"; do
    if ! kill -0 "$pid" 2>/dev/null; then
        cat "$LOG_FILE" >&2
        rm -f "$PID_FILE"
        echo "Sageport did not start (log: $LOG_FILE)" >&2
        exit 1
    fi
    sleep 0.5
done
sed -n "/$READY_BANNER/,\$p" "$LOG_FILE" | grep -v "Ctrl-C"
echo "Running in the background (pid $pid, log: $LOG_FILE). Stop it with: make down"
