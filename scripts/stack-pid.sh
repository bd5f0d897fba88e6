# Sourced by up.sh and down.sh. `running_stack_pid PID_FILE` prints the pid the file records if
# that process is still the stack's supervisor (`manage.py runstack`), and fails otherwise: after
# a crash the file outlives the process, and its pid may since belong to another program.
running_stack_pid() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "manage.py runstack" || return 1
    echo "$pid"
}
