#!/usr/bin/env bash
# Build Sageport's example images in the local Docker engine, without any registry.
#
#   scripts/build-images.sh [busybox|python|python-serve|python-stream|python-multi-model|
#                            sagemaker-training|python-sagemaker|pytorch-mpi|pytorch-tier|pytorch-elastic]...
#                            (no argument: all of them)
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
PYTHON_STREAM_TAG=sageport-examples/python-stream:latest
PYTHON_MULTI_MODEL_TAG=sageport-examples/python-multi-model:latest
TOOLKIT_VERSION=5.1.4  # the sagemaker-training toolkit (script mode), as framework images ship it
TOOLKIT_TAG=sageport-examples/sagemaker-training:$TOOLKIT_VERSION
# The wheelhouses are machine-wide (not in the checkout): a fresh clone on this machine finds them
# again instead of building the toolkit and copying torch (~200 MB) once more.
WHEELHOUSES=${XDG_CACHE_HOME:-$HOME/.cache}/sageport/wheels
WHEEL_CACHE=$WHEELHOUSES/sagemaker-training-$TOOLKIT_VERSION
MPI_BASE_TAG=sageport-examples/mpi-base:bookworm
TORCH_VERSION=2.13.0  # the CPU build this machine's package index has
PYTORCH_MPI_TAG=sageport-examples/pytorch-mpi:$TORCH_VERSION-$TOOLKIT_VERSION
TORCH_WHEEL_CACHE=$WHEELHOUSES/torch-$TORCH_VERSION
# Managed tiered checkpointing: AWS's library with the newest torch the HyperPod libraries accept.
TIER_TORCH_VERSION=2.11.0
CHECKPOINTING_VERSION=1.1.3  # amzn-sagemaker-checkpointing
S3_CONNECTOR_VERSION=1.5.0   # s3torchconnector, the library's S3 tier
TIER_VERSIONS=$TIER_TORCH_VERSION-$CHECKPOINTING_VERSION-$S3_CONNECTOR_VERSION
TIER_FRAMEWORK_TAG=sageport-examples/pytorch-tier-framework:$TIER_VERSIONS
PYTORCH_TIER_TAG=sageport-examples/pytorch-tier:$TIER_VERSIONS
TIER_WHEEL_CACHE=$WHEELHOUSES/pytorch-tier-$TIER_VERSIONS  # ~3 GB
# Elastic training: AWS's elastic agent (`hyperpodrun`) on the tiered-checkpointing framework's torch.
ELASTIC_AGENT_VERSION=1.1.3  # hyperpod-elastic-agent
ELASTIC_VERSIONS=$TIER_TORCH_VERSION-$ELASTIC_AGENT_VERSION
PYTORCH_ELASTIC_TAG=sageport-examples/pytorch-elastic:$ELASTIC_VERSIONS
ELASTIC_WHEEL_CACHE=$WHEELHOUSES/pytorch-elastic-$ELASTIC_VERSIONS
# Remote functions (`@step`, `@remote`): the SageMaker Python SDK v2 the tests' client runs (its
# remote-function runner checks the container's Python is the client's minor version: 3.11).
SAGEMAKER_SDK_VERSION=$(.venv/bin/python -c 'from importlib.metadata import version; print(version("sagemaker"))')
PYTHON_SAGEMAKER_TAG=sageport-examples/python-sagemaker:$SAGEMAKER_SDK_VERSION
SAGEMAKER_WHEEL_CACHE=$WHEELHOUSES/python-sagemaker-$SAGEMAKER_SDK_VERSION  # ~60 MB
BUILD_LABEL=sageport.build=build-images  # on the throwaway containers this script makes

# Progress on stderr, each line with the time since the script started (first builds take minutes).
log() { printf 'build-images [%dm%02ds]: %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }
# Runs pip (wheel or download) showing what it downloads and builds, with sizes, and its errors,
# instead of either nothing (--quiet) or its progress bars.
pip_progress() {
    local line
    "$@" --progress-bar off 2>&1 | while IFS= read -r line; do
        case "$line" in
            *Downloading*|*"Using cached"*|*"Building wheel"*|*ERROR*|*rror:*) log "  ${line#"${line%%[![:space:]]*}"}" ;;
        esac
    done
    return "${PIPESTATUS[0]}"
}
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

# An image on the python base: build_on_python_base TAG DOCKERFILE [CONTEXT] (default context: the
# linear-regression example).
build_on_python_base() {
    ensure_python_base
    log "building $1"
    local output  # shown only on failure: the legacy builder warns on every run
    if ! output=$(docker build --quiet --build-arg "BASE=$PYTHON_BASE_TAG" -t "$1" \
            -f "$2" "${3:-examples/linear_regression}" 2>&1); then
        echo "$output" >&2
        exit 1
    fi
    echo "$1"
}

# The toolkit and its dependencies as wheels for the base's Python (Debian bookworm: 3.11), made
# once on this machine: `pip wheel` downloads the binary wheels and builds the toolkit's own
# sdist (it has a small C extension), so the host's Python must be the image's version.
require_image_python() {
    local version
    version=$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    [ "$version" = 3.11 ] || { log "$1 wheels need Python 3.11 (the image's), .venv has $version"; exit 1; }
}

ensure_toolkit_wheels() {
    [ -f "$WHEEL_CACHE/.complete" ] && return 0
    require_image_python "the toolkit"
    log "downloading sagemaker-training $TOOLKIT_VERSION and its dependencies into $WHEEL_CACHE (once)"
    rm -rf "$WHEEL_CACHE" && mkdir -p "$WHEEL_CACHE"
    pip_progress .venv/bin/pip wheel --wheel-dir "$WHEEL_CACHE" pip "sagemaker-training==$TOOLKIT_VERSION"
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
    pip_progress .venv/bin/pip download --only-binary=:all: --dest "$TORCH_WHEEL_CACHE" \
        "torch==$TORCH_VERSION"
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

# torch $TIER_TORCH_VERSION, AWS's checkpointing library, its S3 client and their dependencies, for
# the image's Python. The index's torch is the CUDA build: it does not even import without the
# nvidia-* libraries it links against (libcudnn, libcublas, libnccl...), so they come too (2.6 GB
# of wheels in all).
# Two sdists (the library and s3torchconnector) are built into wheels here. Wheels already in the
# folder are reused, so an interrupted download resumes.
ensure_tier_wheels() {
    [ -f "$TIER_WHEEL_CACHE/.complete" ] && return 0
    require_image_python "the tiered-checkpointing"
    log "downloading torch $TIER_TORCH_VERSION, amzn-sagemaker-checkpointing $CHECKPOINTING_VERSION and their dependencies into $TIER_WHEEL_CACHE (once)"
    mkdir -p "$TIER_WHEEL_CACHE"
    pip_progress .venv/bin/pip wheel --wheel-dir "$TIER_WHEEL_CACHE" --find-links "$TIER_WHEEL_CACHE" \
        $(tier_requirements)
    touch "$TIER_WHEEL_CACHE/.complete"
}

tier_requirements() {
    echo pip "torch==$TIER_TORCH_VERSION" "amzn-sagemaker-checkpointing==$CHECKPOINTING_VERSION" \
        "s3torchconnector==$S3_CONNECTOR_VERSION" boto3 tenacity xxhash requests
}

# Run in a throwaway container of the python base with the requirements as arguments; pip runs from
# its own wheel (the base has no pip), then the caller's finishing command ($FINISH) runs.
# shellcheck disable=SC2016  # expanded by the container's shell
WHEEL_INSTALL_SCRIPT='set -e
pip_wheel=$(echo /wheels/pip-*.whl)
python3 "$pip_wheel/pip" install --quiet --no-index --no-cache-dir --find-links /wheels \
    --break-system-packages --root-user-action=ignore "$@"
eval "$FINISH"'

# commit_wheels TAG WHEELHOUSE FINISH REQUIREMENTS...: the python base with the wheelhouse's
# requirements installed, made by a throwaway container that mounts the wheelhouse read-only and is
# then committed, so the wheels never become a layer of the image (a Dockerfile's COPY would keep
# them in it).
commit_wheels() {
    local tag=$1 wheelhouse=$2 finish=$3 container status=0
    shift 3
    container=$(docker create --label "$BUILD_LABEL" --network none --env "FINISH=$finish" \
        --volume "$wheelhouse:/wheels:ro" "$PYTHON_BASE_TAG" sh -c "$WHEEL_INSTALL_SCRIPT" sh "$@")
    docker start --attach "$container" >&2 || status=$?
    [ "$status" = 0 ] && docker commit --change 'CMD ["python3"]' "$container" "$tag" >/dev/null \
        || status=$?
    docker rm "$container" >/dev/null
    [ "$status" = 0 ] || { log "installing the wheels into $tag failed"; exit 1; }
}

# The framework layer: the python base with the wheelhouse installed. triton (~640 MB) is removed
# again: torch imports and runs without it (it only compiles GPU kernels), and removing it before
# the commit keeps it out of the image. When the tag exists nothing is downloaded at all.
ensure_tier_framework() {
    have_image "$TIER_FRAMEWORK_TAG" && return 0
    ensure_python_base
    ensure_tier_wheels
    log "installing the wheels into $TIER_FRAMEWORK_TAG (a few minutes, once)"
    # shellcheck disable=SC2046  # one word per requirement
    commit_wheels "$TIER_FRAMEWORK_TAG" "$TIER_WHEEL_CACHE" \
        'python3 -m pip uninstall --quiet --yes --break-system-packages --root-user-action=ignore triton' \
        $(tier_requirements)
}

# The SDK and its dependencies, as wheels for the image's Python, made once on this machine.
ensure_sagemaker_wheels() {
    [ -f "$SAGEMAKER_WHEEL_CACHE/.complete" ] && return 0
    require_image_python "the SageMaker SDK"
    log "downloading sagemaker $SAGEMAKER_SDK_VERSION and its dependencies into $SAGEMAKER_WHEEL_CACHE (once)"
    mkdir -p "$SAGEMAKER_WHEEL_CACHE"
    pip_progress .venv/bin/pip wheel --wheel-dir "$SAGEMAKER_WHEEL_CACHE" --find-links "$SAGEMAKER_WHEEL_CACHE" \
        pip "sagemaker==$SAGEMAKER_SDK_VERSION"
    touch "$SAGEMAKER_WHEEL_CACHE/.complete"
}

# The python base with the SDK and pip: what a remote function's job runs. The SDK's job_driver.sh
# calls `python` (Debian names it python3), and its bootstrap always runs `pip install -U -r` of a
# requirements file naming `sagemaker>=2.256.0,<3.0.0`: pip is told to use no index (containers
# here reach none), so the installed SDK satisfies it, and Debian's externally-managed marker goes
# (PEP 668: here the Python is the job's own, as in AWS's images).
PYTHON_SAGEMAKER_FINISH='rm -f /usr/lib/python3*/EXTERNALLY-MANAGED && ln -s python3 /usr/bin/python && printf "[global]\nno-index = true\n" >/etc/pip.conf'
build_python_sagemaker() {
    if ! have_image "$PYTHON_SAGEMAKER_TAG"; then
        ensure_python_base
        ensure_sagemaker_wheels
        log "installing the SDK into $PYTHON_SAGEMAKER_TAG (a minute, once)"
        commit_wheels "$PYTHON_SAGEMAKER_TAG" "$SAGEMAKER_WHEEL_CACHE" "$PYTHON_SAGEMAKER_FINISH" \
            pip "sagemaker==$SAGEMAKER_SDK_VERSION"
    fi
    echo "$PYTHON_SAGEMAKER_TAG"
}

build_pytorch_tier() {
    ensure_tier_framework
    log "building $PYTORCH_TIER_TAG"
    local output
    if ! output=$(docker build --quiet --build-arg "BASE=$TIER_FRAMEWORK_TAG" -t "$PYTORCH_TIER_TAG" \
            -f images/pytorch-tier/Dockerfile examples/tiered-checkpointing 2>&1); then
        echo "$output" >&2
        exit 1
    fi
    echo "$PYTORCH_TIER_TAG"
}

# The agent and the libraries it imports (its HTTP server: fastapi, uvicorn; psutil), a few MB. The
# agent is an sdist, built into a wheel here without its dependencies: it also pins `pip<25.3`,
# which the image must not downgrade to, so the image installs these wheels with --no-deps and the
# requirements below name what it actually imports (torch is the framework's).
ensure_elastic_wheels() {
    [ -f "$ELASTIC_WHEEL_CACHE/.complete" ] && return 0
    require_image_python "the elastic agent"
    log "downloading hyperpod-elastic-agent $ELASTIC_AGENT_VERSION and its server's libraries into $ELASTIC_WHEEL_CACHE (once)"
    mkdir -p "$ELASTIC_WHEEL_CACHE"
    pip_progress .venv/bin/pip wheel --no-deps --wheel-dir "$ELASTIC_WHEEL_CACHE" \
        "hyperpod-elastic-agent==$ELASTIC_AGENT_VERSION"
    pip_progress .venv/bin/pip wheel --wheel-dir "$ELASTIC_WHEEL_CACHE" --find-links "$ELASTIC_WHEEL_CACHE" \
        fastapi uvicorn psutil
    touch "$ELASTIC_WHEEL_CACHE/.complete"
}

# The context is the example's folder plus a copy of the (small) wheelhouse under wheels/.
build_pytorch_elastic() {
    ensure_tier_framework
    ensure_elastic_wheels
    log "building $PYTORCH_ELASTIC_TAG"
    local context output status=0
    context=$(mktemp -d)
    cp examples/elastic-training/train.py "$context"/
    mkdir "$context/wheels" && cp "$ELASTIC_WHEEL_CACHE"/*.whl "$context/wheels"/
    output=$(docker build --quiet --build-arg "BASE=$TIER_FRAMEWORK_TAG" -t "$PYTORCH_ELASTIC_TAG" \
        -f images/pytorch-elastic/Dockerfile "$context" 2>&1) || status=$?
    rm -rf "$context"
    [ "$status" = 0 ] || { echo "$output" >&2; exit 1; }
    echo "$PYTORCH_ELASTIC_TAG"
}

images=("$@")
[ ${#images[@]} -gt 0 ] || images=(busybox python python-serve python-stream python-multi-model
                                   sagemaker-training python-sagemaker pytorch-mpi pytorch-tier pytorch-elastic)
for name in "${images[@]}"; do
    case "$name" in
        busybox) build_busybox ;;
        python) build_on_python_base "$PYTHON_TAG" images/python/Dockerfile ;;
        # The linear-regression example's inference container (`serve`).
        python-serve) build_on_python_base "$PYTHON_SERVE_TAG" images/python-serve/Dockerfile ;;
        # A token-by-token text generator that streams its answer (InvokeEndpointWithResponseStream).
        python-stream) build_on_python_base "$PYTHON_STREAM_TAG" images/python-stream/Dockerfile examples/token-stream ;;
        python-multi-model)
            build_on_python_base "$PYTHON_MULTI_MODEL_TAG" images/python-multi-model/Dockerfile examples/multi_model ;;
        # Script mode: the SageMaker SDKs' entry_point/source_dir jobs run on it.
        sagemaker-training) build_toolkit ;;
        # SageMaker Pipelines' @step functions and the SDK's @remote functions run on it.
        python-sagemaker) build_python_sagemaker ;;
        # MPI and model-parallel jobs (the SDK's `distribution` with mpi/smdistributed) run on it.
        pytorch-mpi) build_pytorch_mpi ;;
        # Managed tiered checkpointing: the example (examples/tiered-checkpointing) under torchrun.
        pytorch-tier) build_pytorch_tier ;;
        # Elastic training: examples/elastic-training/train.py under AWS's elastic agent.
        pytorch-elastic) build_pytorch_elastic ;;
        *) log "unknown image '$name' (known: busybox python python-serve python-stream python-multi-model sagemaker-training python-sagemaker pytorch-mpi pytorch-tier pytorch-elastic)"; exit 2 ;;
    esac
    log "$name ready"
done
