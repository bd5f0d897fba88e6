#!/usr/bin/env bash
# Prepare what `docker compose up --build` (compose.yaml) needs, without any package index or
# registry access from containers.
#
#   scripts/compose-images.sh            the wheelhouse only: base images come from the registry
#   scripts/compose-images.sh --offline  also local stand-ins for the base images (no registry)
#
# The wheelhouse: the host downloads the control-plane image's Python dependencies as wheels for
# the image's Python (BASE_PYTHON_VERSION on Linux) into build/wheels, and the Dockerfile installs
# from there alone, at the versions of the host's .venv (those the tests ran with). It is
# downloaded again only when the dependencies or those versions change.
#
# The stand-ins: one Debian bookworm root filesystem made with mmdebstrap (Python, PostgreSQL 15,
# Redis 7: the versions the upstream images carry), `docker import`ed once, and a small image on
# it under each upstream name compose.yaml and the Dockerfile use. A tag that exists is reused
# (upstream's own image included), so a second run takes a second.
set -euo pipefail
cd "$(dirname "$0")/.."

# The upstream names, as the Dockerfile (FROM) and compose.yaml (image:) spell them.
PYTHON_IMAGE=python:3.11-slim-bookworm
POSTGRES_IMAGE=postgres:15-bookworm
REDIS_IMAGE=redis:7-bookworm
BASE_PYTHON_VERSION=3.11

ROOTFS_TAG=sageport-compose/bookworm-rootfs:latest
ROOTFS_PACKAGES=python3,python3-venv,postgresql-15,redis-server
WHEELHOUSE=build/wheels
PIP=${PIP:-.venv/bin/pip}
PYTHON=${PYTHON:-.venv/bin/python}

log() { echo "compose-images: $*" >&2; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# What the image installs: the project's dependencies and its postgres extra. pip judges a
# `python_full_version` marker by the interpreter it runs on, not by --python-version, so what
# redis-py needs below Python 3.11.3 (Debian's 3.11.2, the offline stand-in's) is named here.
requirements() {
    "$PYTHON" - <<'PY'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))
for requirement in project["project"]["dependencies"] + project["project"]["optional-dependencies"]["postgres"]:
    print(requirement)
print("async-timeout>=4.0.3")
PY
}

# --platform for each glibc up to bookworm's 2.36 (pip takes a platform literally, not as "this
# glibc or older").
platforms() {
    local arch minor
    arch=$(uname -m)
    echo "--platform manylinux2014_$arch"
    for minor in $(seq 17 36); do echo "--platform manylinux_2_${minor}_$arch"; done
}

download_wheels() {
    local request
    request=$(mktemp)
    # The versions the tests ran with: those of the host's virtualenv, where it has the package
    # (name==version lines only: a constraint cannot be a link).
    "$PIP" freeze --exclude-editable --disable-pip-version-check | grep -E '^[A-Za-z0-9_.-]+==' \
        >"$request.constraints"
    { requirements; echo "# constraints:"; cat "$request.constraints"; } >"$request"
    if cmp -s "$request" "$WHEELHOUSE/request.txt"; then
        rm -f "$request" "$request.constraints"
        return 0
    fi
    log "downloading the image's wheels into $WHEELHOUSE (Python $BASE_PYTHON_VERSION, $(uname -m))"
    rm -rf "$WHEELHOUSE"
    mkdir -p "$WHEELHOUSE"
    local output  # shown only on failure
    if ! output=$("$PIP" download --quiet --disable-pip-version-check --dest "$WHEELHOUSE" \
            --only-binary=:all: --python-version "$BASE_PYTHON_VERSION" --implementation cp \
            $(platforms) -c "$request.constraints" -r <(requirements) 2>&1); then
        echo "$output" >&2
        rm -f "$request" "$request.constraints"
        exit 1
    fi
    mv "$request" "$WHEELHOUSE/request.txt"  # last: a cut-off download is tried again
    rm -f "$request.constraints"
}

ensure_rootfs() {
    have_image "$ROOTFS_TAG" && return 0
    log "making $ROOTFS_TAG with mmdebstrap ($ROOTFS_PACKAGES; takes a few minutes, once)"
    local tarball
    tarball=$(mktemp --suffix=.tar)
    # Without documentation, manual pages and translations: less to unpack and to import.
    mmdebstrap --quiet --variant=minbase --include="$ROOTFS_PACKAGES" \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' bookworm "$tarball"
    docker import "$tarball" "$ROOTFS_TAG" >/dev/null
    rm -f "$tarball"
}

# build_stand_in TAG NAME: images/compose-bases/NAME.Dockerfile on the root filesystem.
build_stand_in() {
    have_image "$1" && return 0
    ensure_rootfs
    log "building the stand-in $1"
    local output  # shown only on failure: the legacy builder warns on every run
    if ! output=$(docker build --quiet --build-arg "ROOTFS=$ROOTFS_TAG" --label sageport.stand-in=true \
            -t "$1" -f "images/compose-bases/$2.Dockerfile" images/compose-bases 2>&1); then
        echo "$output" >&2
        exit 1
    fi
}

case "${1:-}" in
    --offline) offline=true ;;
    "") offline=false ;;
    *) log "usage: $0 [--offline]"; exit 2 ;;
esac
download_wheels
if $offline; then
    build_stand_in "$PYTHON_IMAGE" python
    build_stand_in "$POSTGRES_IMAGE" postgres
    build_stand_in "$REDIS_IMAGE" redis
fi
