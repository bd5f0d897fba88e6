#!/usr/bin/env bash
# Install what `make run` and `make test` need on a Debian/Ubuntu machine, then make sure a
# Docker engine answers. Everything already in place is reused, so a second run is quick.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
INSTALLED_STAMP=$VENV/.installed-pyproject.toml  # the pyproject.toml the venv was installed from
DOCKERD_LOG=/var/log/sageport-dockerd.log

log() { echo "bootstrap: $*" >&2; }
fail() { log "$*"; exit 1; }
is_root() { [ "$(id -u)" -eq 0 ]; }

# The Debian packages this machine lacks (a dynamically linked busybox cannot go into an image).
missing_packages() {
    # These machines can ship a `docker` client without an engine: the engine is what we need.
    command -v dockerd >/dev/null || echo docker.io
    command -v redis-server >/dev/null || echo redis-server
    { [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; } || echo busybox-static
    command -v mmdebstrap >/dev/null || echo mmdebstrap
    command -v docker-compose >/dev/null || echo docker-compose  # the compose stack's test (v1 is enough)
    command -v ip >/dev/null || echo iproute2  # the two-node test gives node B an address of its own
    # The test cluster's shared database (tests/e2e/postgres.py runs Debian's server binaries).
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || echo postgresql
    "$PYTHON" -c 'import ensurepip' 2>/dev/null || echo python3-venv
    # The console's browser tests: Playwright drives Debian's chromium (no browser download).
    command -v chromium >/dev/null || echo chromium
    [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || echo fonts-dejavu-core
}

install_packages() {
    local packages
    packages=$(missing_packages | xargs)
    [ -n "$packages" ] || return 0
    is_root || fail "missing Debian packages: $packages (run as root, or: sudo apt-get install $packages)"
    log "installing $packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null
}

install_venv() {
    [ -x "$VENV/bin/python" ] || { log "creating $VENV"; "$PYTHON" -m venv "$VENV"; }
    if ! cmp -s pyproject.toml "$INSTALLED_STAMP"; then
        log "installing Sageport and its test tools into $VENV"
        # --no-compile: pip would byte-compile all ~16000 modules (torch, TensorFlow...) one at a
        # time (80 s of CPU); Python compiles those that get imported, on first import, instead.
        "$VENV/bin/pip" install -q --no-compile -e '.[test]'
        cp pyproject.toml "$INSTALLED_STAMP"
    fi
}

start_docker() {
    docker info >/dev/null 2>&1 && return 0
    is_root || fail "no Docker engine answers, and starting one needs root"
    if [ -d /run/systemd/system ]; then
        log "starting the docker service"
        systemctl start docker
    else
        log "starting dockerd in the background (log: $DOCKERD_LOG, pid: /var/run/docker.pid)"
        setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
    fi
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && return 0
        sleep 1
    done
    fail "the Docker engine did not answer within 60 s; see $DOCKERD_LOG"
}

if [ "${1:-}" = "--missing-packages" ]; then  # what this machine lacks, one a line; installs nothing
    missing_packages
    exit 0
fi
install_packages
install_venv
start_docker
