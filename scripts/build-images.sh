#!/usr/bin/env bash
# Build Sageport's example images in the local Docker engine, without any registry.
#
#   scripts/build-images.sh [busybox|python|python-serve]...     (no argument: all of them)
#
# Prints each image's tag on stdout (progress goes to stderr). Root filesystems are made on
# this machine and `docker import`ed; a base image whose tag exists is reused, because making
# it is the slow part (mmdebstrap takes minutes). The python images' top layer is rebuilt with
# `docker build`, whose layer cache makes that instant when the example did not change.
set -euo pipefail
cd "$(dirname "$0")/.."

BUSYBOX_TAG=sageport-examples/busybox:latest
PYTHON_BASE_TAG=sageport-examples/python-base:bookworm
PYTHON_TAG=sageport-examples/python:latest
PYTHON_SERVE_TAG=sageport-examples/python-serve:latest

log() { echo "build-images: $*" >&2; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# A static busybox and one symlink per applet: enough for shell-script algorithms.
build_busybox() {
    if ! have_image "$BUSYBOX_TAG"; then
        log "making $BUSYBOX_TAG from /bin/busybox"
        local rootfs
        rootfs=$(mktemp -d)
        mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,root}
        chmod 1777 "$rootfs/tmp"
        cp /bin/busybox "$rootfs/bin/busybox"
        "$rootfs/bin/busybox" --list-full | while read -r applet; do
            [ -e "$rootfs/$applet" ] || ln -s /bin/busybox "$rootfs/$applet"
        done
        echo 'root:x:0:0:root:/root:/bin/sh' >"$rootfs/etc/passwd"
        echo 'root:x:0:' >"$rootfs/etc/group"
        tar -C "$rootfs" -c . | docker import --change 'CMD ["sh"]' - "$BUSYBOX_TAG" >/dev/null
        rm -rf "$rootfs"
    fi
    echo "$BUSYBOX_TAG"
}

# Debian's minimal base with Python and numpy, made once.
ensure_python_base() {
    if ! have_image "$PYTHON_BASE_TAG"; then
        log "making $PYTHON_BASE_TAG with mmdebstrap (takes a few minutes, once)"
        local tarball
        tarball=$(mktemp --suffix=.tar)
        mmdebstrap --quiet --variant=minbase --include=python3,python3-numpy bookworm "$tarball"
        docker import "$tarball" "$PYTHON_BASE_TAG" >/dev/null
        rm -f "$tarball"
    fi
}

# An image on the python base: build_on_python_base TAG DOCKERFILE (context: the example).
build_on_python_base() {
    ensure_python_base
    log "building $1"
    local output  # shown only on failure: the legacy builder warns on every run
    if ! output=$(docker build --quiet --build-arg "BASE=$PYTHON_BASE_TAG" -t "$1" \
            -f "$2" examples/linear_regression 2>&1); then
        echo "$output" >&2
        exit 1
    fi
    echo "$1"
}

images=("$@")
[ ${#images[@]} -gt 0 ] || images=(busybox python python-serve)
for name in "${images[@]}"; do
    case "$name" in
        busybox) build_busybox ;;
        python) build_on_python_base "$PYTHON_TAG" images/python/Dockerfile ;;
        # The linear-regression example's inference container (`serve`).
        python-serve) build_on_python_base "$PYTHON_SERVE_TAG" images/python-serve/Dockerfile ;;
        *) log "unknown image '$name' (known: busybox python python-serve)"; exit 2 ;;
    esac
done
