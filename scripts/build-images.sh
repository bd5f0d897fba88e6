#!/usr/bin/env bash
# Build Sageport's example images in the local Docker engine, without any registry.
#
#   scripts/build-images.sh [busybox|python|python-serve|sagemaker-training|pytorch-mpi]...
#                                                        (no argument: all of them)
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
TOOLKIT_VERSION=5.1.4  # the sagemaker-training toolkit (script mode), as framework images ship it
TOOLKIT_TAG=sageport-examples/sagemaker-training:$TOOLKIT_VERSION
WHEEL_CACHE=.sageport/cache/wheels/sagemaker-training-$TOOLKIT_VERSION
MPI_BASE_TAG=sageport-examples/mpi-base:bookworm
TORCH_VERSION=2.13.0  # the CPU build this machine's package index has
PYTORCH_MPI_TAG=sageport-examples/pytorch-mpi:$TORCH_VERSION-$TOOLKIT_VERSION
TORCH_WHEEL_CACHE=.sageport/cache/wheels/torch-$TORCH_VERSION

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

# The toolkit and its dependencies as wheels for the base's Python (Debian bookworm: 3.11), made
# once on this machine: `pip wheel` downloads the binary wheels and builds the toolkit's own
# sdist (it has a small C extension), so the host's Python must be the image's version.
ensure_toolkit_wheels() {
    [ -f "$WHEEL_CACHE/.complete" ] && return 0
    local version
    version=$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    [ "$version" = 3.11 ] || { log "the toolkit wheels need Python 3.11 (the image's), .venv has $version"; exit 1; }
    log "downloading sagemaker-training $TOOLKIT_VERSION and its dependencies into $WHEEL_CACHE (once)"
    rm -rf "$WHEEL_CACHE" && mkdir -p "$WHEEL_CACHE"
    .venv/bin/pip wheel --quiet --wheel-dir "$WHEEL_CACHE" pip "sagemaker-training==$TOOLKIT_VERSION" >&2
    touch "$WHEEL_CACHE/.complete"
}

build_toolkit() {
    ensure_python_base
    ensure_toolkit_wheels
    log "building $TOOLKIT_TAG"
    local output
    if ! output=$(docker build --quiet --build-arg "BASE=$PYTHON_BASE_TAG" -t "$TOOLKIT_TAG" \
            -f images/sagemaker-training/Dockerfile "$WHEEL_CACHE" 2>&1); then
        echo "$output" >&2
        exit 1
    fi
    echo "$TOOLKIT_TAG"
}

# Debian's minimal base with Python, numpy, OpenMPI, mpi4py and OpenSSH, made once.
ensure_mpi_base() {
    if ! have_image "$MPI_BASE_TAG"; then
        log "making $MPI_BASE_TAG with mmdebstrap (takes a few minutes, once)"
        local tarball
        tarball=$(mktemp --suffix=.tar)
        mmdebstrap --quiet --variant=minbase \
            --include=python3,python3-numpy,python3-mpi4py,openmpi-bin,openssh-server,openssh-client \
            bookworm "$tarball"
        docker import "$tarball" "$MPI_BASE_TAG" >/dev/null
        rm -f "$tarball"
    fi
}

ensure_torch_wheels() {
    [ -f "$TORCH_WHEEL_CACHE/.complete" ] && return 0
    log "downloading torch $TORCH_VERSION and its dependencies into $TORCH_WHEEL_CACHE (once)"
    rm -rf "$TORCH_WHEEL_CACHE" && mkdir -p "$TORCH_WHEEL_CACHE"
    .venv/bin/pip download --quiet --only-binary=:all: --dest "$TORCH_WHEEL_CACHE" \
        "torch==$TORCH_VERSION" >&2
    touch "$TORCH_WHEEL_CACHE/.complete"
}

build_pytorch_mpi() {
    ensure_mpi_base
    ensure_toolkit_wheels
    ensure_torch_wheels
    log "building $PYTORCH_MPI_TAG"
    local context output status=0
    context=$(mktemp -d)  # both wheelhouses, linked rather than copied
    cp -ln "$WHEEL_CACHE"/*.whl "$TORCH_WHEEL_CACHE"/*.whl "$context"/  # the same file where both have it
    output=$(docker build --quiet --build-arg "BASE=$MPI_BASE_TAG" -t "$PYTORCH_MPI_TAG" \
        -f images/pytorch-mpi/Dockerfile "$context" 2>&1) || status=$?
    rm -rf "$context"
    [ "$status" = 0 ] || { echo "$output" >&2; exit 1; }
    echo "$PYTORCH_MPI_TAG"
}

images=("$@")
[ ${#images[@]} -gt 0 ] || images=(busybox python python-serve sagemaker-training pytorch-mpi)
for name in "${images[@]}"; do
    case "$name" in
        busybox) build_busybox ;;
        python) build_on_python_base "$PYTHON_TAG" images/python/Dockerfile ;;
        # The linear-regression example's inference container (`serve`).
        python-serve) build_on_python_base "$PYTHON_SERVE_TAG" images/python-serve/Dockerfile ;;
        # Script mode: the SageMaker SDKs' entry_point/source_dir jobs run on it.
        sagemaker-training) build_toolkit ;;
        # MPI and model-parallel jobs (the SDK's `distribution` with mpi/smdistributed) run on it.
        pytorch-mpi) build_pytorch_mpi ;;
        *) log "unknown image '$name' (known: busybox python python-serve sagemaker-training pytorch-mpi)"; exit 2 ;;
    esac
done
