#!/usr/bin/env bash
# Prepare what `docker compose up --build` (compose.yaml) needs, without any package index or
# registry access from containers.
#
#   scripts/compose-images.sh            the wheelhouse only: base images come from the registry
#   scripts/compose-images.sh --offline  also local stand-ins for the base images (no registry)
#
# The wheelhouse: the host downloads the control-plane image's Python dependencies as wheels for
# the image's Python (BASE_PYTHON_VERSION on Linux), at the versions of the host's .venv (those the
# tests ran with), into a machine-wide folder, so that a fresh clone finds them. It is downloaded
# again only when the dependencies or the versions of the packages it holds change: the .venv's
# other packages (the test tools) do not count. What it was downloaded for is kept beside it
# (<folder>.request).
#
# The dependencies image: the wheelhouse installed into a virtualenv (/opt/sageport) on the python
# base, by a throwaway container that mounts the wheelhouse read-only and is then committed; the
# Dockerfile copies the virtualenv from it. The wheels (~100 MB) are thus never part of the build
# context, which the legacy builder sends whole for every service that names `build:` (compose
# builds the image once per service: six times). It is made again only when the wheelhouse or the
# base image changes (a label records both).
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
SHARED_WHEELHOUSE=${XDG_CACHE_HOME:-$HOME/.cache}/sageport/wheels/controlplane-$BASE_PYTHON_VERSION-$(uname -m)
DEPENDENCIES_IMAGE=sageport/controlplane-dependencies:latest  # the Dockerfile's COPY --from
DEPENDENCIES_LABEL=sageport.dependencies  # the wheelhouse's request and the base image it was made for
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

# The request a wheelhouse (the folder $1) answers: the requirements, then the .venv's pins (the
# file $2) of the packages among its wheels. Pins of packages outside it cannot change what it
# holds: a new dependency comes only with a new version of one inside.
wheelhouse_request() {
    "$PYTHON" -c '
import re, sys
def name(text):
    return re.sub(r"[-_.]+", "-", text).lower()
held = {name(line.split("-")[0]) for line in sys.argv[1].splitlines()}
print(sys.argv[2])
print("# pins of the packages held:")
for pin in sys.argv[3].splitlines():
    if name(pin.split("==")[0]) in held:
        print(pin)
' "$(find "$1" -name '*.whl' -printf '%f\n' 2>/dev/null)" "$(requirements)" "$(cat "$2")"
}

download_wheels() {
    local constraints=$1
    [ -d "$SHARED_WHEELHOUSE" ] && wheelhouse_request "$SHARED_WHEELHOUSE" "$constraints" \
        | cmp -s - "$SHARED_WHEELHOUSE.request" && return 0
    log "downloading the image's wheels into $SHARED_WHEELHOUSE (Python $BASE_PYTHON_VERSION, $(uname -m))"
    rm -rf "$SHARED_WHEELHOUSE" "$SHARED_WHEELHOUSE.request"
    mkdir -p "$SHARED_WHEELHOUSE"
    local output  # shown only on failure
    if ! output=$("$PIP" download --quiet --disable-pip-version-check --dest "$SHARED_WHEELHOUSE" \
            --only-binary=:all: --python-version "$BASE_PYTHON_VERSION" --implementation cp \
            $(platforms) -c "$constraints" -r <(requirements) 2>&1); then
        echo "$output" >&2
        exit 1
    fi
    # Last: a cut-off download is tried again.
    wheelhouse_request "$SHARED_WHEELHOUSE" "$constraints" >"$SHARED_WHEELHOUSE.request"
}

prepare_wheels() {
    local constraints
    constraints=$(mktemp)
    # The versions the tests ran with: those of the host's virtualenv, where it has the package
    # (name==version lines only: a constraint cannot be a link).
    "$PIP" freeze --exclude-editable --disable-pip-version-check | grep -E '^[A-Za-z0-9_.-]+==' \
        >"$constraints"
    mkdir -p "$(dirname "$SHARED_WHEELHOUSE")"
    exec 9>"$SHARED_WHEELHOUSE.lock" && flock 9  # two checkouts' test sessions may ask at once
    download_wheels "$constraints"
    exec 9>&-
    rm -f "$constraints"
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

# What the dependencies image was made from: the wheelhouse's request and the base image's id.
dependencies_source() {
    { cat "$SHARED_WHEELHOUSE.request"; docker image inspect --format '{{.Id}}' "$PYTHON_IMAGE"; } \
        | sha256sum | cut -d' ' -f1
}

ensure_dependencies_image() {
    local source container status=0
    have_image "$PYTHON_IMAGE" || docker pull --quiet "$PYTHON_IMAGE" >/dev/null
    exec 9>"$SHARED_WHEELHOUSE.lock" && flock 9  # as the wheelhouse: one installation at a time
    source=$(dependencies_source)
    [ "$(docker image inspect --format "{{index .Config.Labels \"$DEPENDENCIES_LABEL\"}}" \
        "$DEPENDENCIES_IMAGE" 2>/dev/null)" = "$source" ] && { exec 9>&-; return 0; }
    log "installing the wheelhouse into $DEPENDENCIES_IMAGE"
    # Compiled by compileall on every core afterwards: pip compiles one file at a time.
    container=$(docker create --network none --volume "$SHARED_WHEELHOUSE:/wheels:ro" "$PYTHON_IMAGE" \
        sh -c 'python -m venv /opt/sageport \
               && /opt/sageport/bin/pip install --quiet --no-index --no-cache-dir \
                  --disable-pip-version-check --no-compile /wheels/*.whl \
               && python -m compileall -q -j 0 /opt/sageport >/dev/null')
    docker start --attach "$container" >&2 || status=$?
    [ "$status" = 0 ] && docker commit --change "LABEL $DEPENDENCIES_LABEL=$source" "$container" \
        "$DEPENDENCIES_IMAGE" >/dev/null || status=$?
    docker rm "$container" >/dev/null
    exec 9>&-
    [ "$status" = 0 ] || { log "installing the wheelhouse failed"; exit 1; }
}

case "${1:-}" in
    --offline) offline=true ;;
    "") offline=false ;;
    *) log "usage: $0 [--offline]"; exit 2 ;;
esac
prepare_wheels
if $offline; then
    build_stand_in "$PYTHON_IMAGE" python
    build_stand_in "$POSTGRES_IMAGE" postgres
    build_stand_in "$REDIS_IMAGE" redis
fi
ensure_dependencies_image
