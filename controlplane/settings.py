"""One settings module. Every value comes from an environment variable with a working default
for the embedded stack; a bad value fails loudly at start-up rather than later."""
import hashlib
import ipaddress
import os
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url

from capacity import instance_types
from controlplane import secret_key
from controlplane.startup import SettingsError

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from None


def _positive(name: str, value: float) -> float:
    if value <= 0:
        raise SettingsError(f"{name} must be more than 0, got {value}")
    return value


def _env_positive_int(name: str, default: int) -> int:
    return _positive(name, _env_int(name, default))


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number, got {raw!r}") from None


def _env_positive_seconds(name: str, default: float) -> float:
    return _positive(name, _env_float(name, default))


def _env_subset(name: str, known: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated selection among `known` (all of them when unset), in `known`'s order."""
    raw = os.environ.get(name, "").strip()
    if raw == "":
        return known
    chosen = {word.strip() for word in raw.split(",") if word.strip()}
    unknown = chosen - set(known)
    if unknown or not chosen:
        raise SettingsError(f"{name} must be a comma-separated list of {', '.join(known)}, got {raw!r}")
    return tuple(part for part in known if part in chosen)


def _env_address(name: str, default: str) -> str:
    """An IP address of this host to listen on (a name would be resolved differently by each tool)."""
    raw = os.environ.get(name, "").strip() or default
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        raise SettingsError(f"{name} must be an IP address, got {raw!r}") from None


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name} must be a boolean (true/false), got {raw!r}")


def _env_ipv4_pool(name: str, default: str) -> str:
    raw = os.environ.get(name) or default
    try:
        pool = ipaddress.IPv4Network(raw)
    except ValueError:
        raise SettingsError(f"{name} must be an IPv4 network such as 10.213.0.0/16, got {raw!r}") from None
    if pool.prefixlen > 23:  # halved (jobs/addresses.py), each half holding at least a /24
        raise SettingsError(f"{name} must hold at least a /23 (two /24s: bridges and overlays), got {raw!r}")
    return str(pool)


DATA_DIR = Path(os.environ.get("SAGEPORT_DATA_DIR", BASE_DIR / ".sageport")).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)  # the SQLite file and job workspaces live here

# A fresh installation generates its own key under the data dir; the variable overrides it.
SECRET_KEY = os.environ.get("SAGEPORT_SECRET_KEY") or secret_key.load_or_create(DATA_DIR / "secret_key")
DEBUG = _env_bool("SAGEPORT_DEBUG", False)
ALLOWED_HOSTS = ["*"]  # SigV4 signs the Host header; any host the client used is accepted.

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Each app keeps its old label (controlplane, jobs, endpoints, cloudwatch, workers): tables,
    # migration history and foreign keys name it. The order is the sweeper's order.
    "accounts",
    "identity",
    "training",
    "processing",
    "modelregistry",
    "hosting",
    "batchtransform",
    "tuning",
    "pipelines",
    "clusters",
    "elastic",
    "logs",
    "capacity",
    "gateway",
    "devstack",
    "console",
]

MIDDLEWARE = [
    # AWS-format answers only on the API port (the admin aside): JSON 1.1 requests start here.
    "protocol.middleware.AwsErrorsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # The console's and the admin's CSS and scripts, from the apps' static/ directories.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.common.CommonMiddleware",
    # InvokeEndpoint (the data path) stops here: what follows serves the admin.
    "hosting.runtime_api.api_port.RuntimeApiMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "controlplane.urls"
WSGI_APPLICATION = "controlplane.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{DATA_DIR / 'sageport.sqlite3'}",
        conn_max_age=60,
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Several processes (API, worker, beat) share the file: wait for locks instead of failing.
    # Write-ahead logging lets them read while another writes (with the default rollback journal
    # a Describe waited for the worker's commits); commits stay synchronous (durable).
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL",
    }
    # Kept open for the thread's life: opening one (and SQLite reading the schema again) was a
    # third of a Describe's time. Nothing to reconnect to, unlike a server database.
    DATABASES["default"]["CONN_MAX_AGE"] = None

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "/static/"
# The largest JSON API (SageMaker, CloudWatch Logs) request body accepted; a larger one is refused
# with 413 RequestEntityTooLargeException before it is read.
SAGEPORT_MAX_REQUEST_BYTES = _env_int("SAGEPORT_MAX_REQUEST_BYTES", 6 * 1024 * 1024)
# InvokeEndpoint bodies may be 6 MiB; larger ones get a ValidationError from the runtime API.
# Both APIs refuse oversized bodies themselves, before Django's own (HTML-free) limit applies.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(7 * 1024 * 1024, SAGEPORT_MAX_REQUEST_BYTES + 1024 * 1024)
LOGIN_URL = "/console/login"
# The console's session cookie: never readable by scripts, sent only to this site's own pages.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
# Whitenoise serves the apps' static files where they are (no STATIC_ROOT: no collectstatic step).
WHITENOISE_USE_FINDERS = True

# --- SageMaker API -------------------------------------------------------------------------
SAGEPORT_REGION = os.environ.get("SAGEPORT_REGION", "us-east-1")
# The embedded stack (`manage.py runstack`) serves the API on SAGEPORT_API_ADDRESS:SAGEPORT_PORT.
SAGEPORT_PORT = _env_int("SAGEPORT_PORT", 8080)
# Where the API listens (an address of this host; 127.0.0.1 keeps it to this machine).
SAGEPORT_API_ADDRESS = _env_address("SAGEPORT_API_ADDRESS", "127.0.0.1")
# How clients, other nodes and containers reach the API (written to <data>/env).
_API_HOST = f"[{SAGEPORT_API_ADDRESS}]" if ":" in SAGEPORT_API_ADDRESS else SAGEPORT_API_ADDRESS
SAGEPORT_API_URL = os.environ.get("SAGEPORT_API_URL") or f"http://{_API_HOST}:{SAGEPORT_PORT}"
# The data plane (InvokeEndpoint, hosting/runtime_api/dataplane.py) listens on the API's address
# and this port; clients, other nodes and containers reach it at SAGEPORT_RUNTIME_URL (<data>/env's
# AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME). A node (`runnode`) not given it looks on SAGEPORT_API_URL's host.
SAGEPORT_RUNTIME_PORT = _env_int("SAGEPORT_RUNTIME_PORT", 8081)
SAGEPORT_RUNTIME_URL = os.environ.get("SAGEPORT_RUNTIME_URL") or f"http://{_API_HOST}:{SAGEPORT_RUNTIME_PORT}"
SAGEPORT_DEFAULT_ACCOUNT_ID = os.environ.get("SAGEPORT_DEFAULT_ACCOUNT_ID", "123456789012")
SAGEPORT_SIGV4_MAX_SKEW_SECONDS = _env_int("SAGEPORT_SIGV4_MAX_SKEW_SECONDS", 15 * 60)
SAGEPORT_CREDENTIAL_RESOLVER = "accounts.accesskeys.resolve_signing_key"
# How long an API process remembers a resolved access key (a deactivated key works that long).
SAGEPORT_ACCESS_KEY_CACHE_SECONDS = _env_float("SAGEPORT_ACCESS_KEY_CACHE_SECONDS", 5.0)
# While the database fails, a key it confirmed this recently is still accepted (accesskeys.py).
SAGEPORT_ACCESS_KEY_OUTAGE_SECONDS = _env_float("SAGEPORT_ACCESS_KEY_OUTAGE_SECONDS", 300.0)

# --- Celery --------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("SAGEPORT_REDIS_URL", "redis://127.0.0.1:6390/0")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
# A message a worker took but has not acknowledged (acks late: at the end of the step) is given to
# another worker after this long. A copy delivered while the step still runs does no harm (it
# cannot claim the resource's lease and leaves), but a step should fit in it: see the pull timeout.
SAGEPORT_VISIBILITY_TIMEOUT = _env_positive_int("SAGEPORT_VISIBILITY_TIMEOUT", 600)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": SAGEPORT_VISIBILITY_TIMEOUT}
SAGEPORT_SWEEP_INTERVAL_SECONDS = _env_float("SAGEPORT_SWEEP_INTERVAL_SECONDS", 10.0)
# How long a reconcile may hold a resource before another worker may take it over.
SAGEPORT_LEASE_SECONDS = _env_int("SAGEPORT_LEASE_SECONDS", 60)
# Labels every container this installation starts, so that two stacks sharing one Docker engine
# never reap each other's containers.
SAGEPORT_STACK_ID = (
    os.environ.get("SAGEPORT_STACK_ID") or hashlib.sha256(str(DATA_DIR).encode()).hexdigest()[:12]
)
CELERY_BEAT_SCHEDULE = {
    "sweep": {"task": "workers.tasks.sweep", "schedule": SAGEPORT_SWEEP_INTERVAL_SECONDS},
}

# --- Storage (S3-compatible) ---------------------------------------------------------------
SAGEPORT_S3_ENDPOINT_URL = os.environ.get("SAGEPORT_S3_ENDPOINT_URL", "http://127.0.0.1:8333")
SAGEPORT_S3_ACCESS_KEY_ID = os.environ.get("SAGEPORT_S3_ACCESS_KEY_ID", "sageport")
# The platform key reaches every bucket, and every container that is not network-isolated reaches
# the S3 gateway: a public default secret would let any tenant sign as the platform. Unset, each
# installation generates its own (kept in the data dir, like the Django key).
SAGEPORT_S3_SECRET_ACCESS_KEY = os.environ.get("SAGEPORT_S3_SECRET_ACCESS_KEY") or secret_key.load_or_create(
    DATA_DIR / "s3_platform_secret"
)
SAGEPORT_S3_REGION = os.environ.get("SAGEPORT_S3_REGION", SAGEPORT_REGION)
# The S3 gateway's access log: one line per request (method, path, status, who signed it, whose
# bucket) in its log at INFO, to audit what each account and the platform's worker read and wrote.
SAGEPORT_S3_ACCESS_LOG = _env_bool("SAGEPORT_S3_ACCESS_LOG", False)
# The most bytes one File/FastFile training channel may stage on one instance, and the most an
# endpoint's model data may hold once unpacked: a job or endpoint over the limit fails with a
# FailureReason that says so, instead of filling the host's disk.
SAGEPORT_MAX_CHANNEL_BYTES = _env_positive_int("SAGEPORT_MAX_CHANNEL_BYTES", 100 * 1024**3)
SAGEPORT_MAX_MODEL_DATA_BYTES = _env_positive_int("SAGEPORT_MAX_MODEL_DATA_BYTES", 100 * 1024**3)

# --- What containers reach (gateway/, docs/containers.md "What a container can reach") ---------------------
# SAGEPORT_API_URL (above) is also the upstream of the forwarder that containers use.
# The ports of the forwarder on the services network's gateway (169.254.170.2): containers reach
# the API, the data plane and S3 there. Two stacks sharing one Docker engine need different ports;
# their defaults are the stack's own API, data plane and S3 ports, which already differ on one machine.
SAGEPORT_SERVICES_API_PORT = _env_int("SAGEPORT_SERVICES_API_PORT", SAGEPORT_PORT)
# Containers' runtime calls (InvokeEndpoint and its stream) reach the data plane on this one.
SAGEPORT_SERVICES_RUNTIME_PORT = _env_int("SAGEPORT_SERVICES_RUNTIME_PORT", SAGEPORT_RUNTIME_PORT)
SAGEPORT_SERVICES_S3_PORT = _env_int(
    "SAGEPORT_SERVICES_S3_PORT", urlsplit(SAGEPORT_S3_ENDPOINT_URL).port or 8333
)
_SERVICES_PORTS = (SAGEPORT_SERVICES_API_PORT, SAGEPORT_SERVICES_RUNTIME_PORT, SAGEPORT_SERVICES_S3_PORT)
if len(set(_SERVICES_PORTS)) < len(_SERVICES_PORTS):
    raise SettingsError(
        "SAGEPORT_SERVICES_API_PORT, SAGEPORT_SERVICES_RUNTIME_PORT and SAGEPORT_SERVICES_S3_PORT must "
        f"differ, got {', '.join(map(str, _SERVICES_PORTS))}"
    )
# How long a container's access key lives (SDKs fetch a new one before it expires); at least
# 900 s, AWS's shortest session, since the SDKs refresh 15 minutes ahead of expiry.
SAGEPORT_CONTAINER_CREDENTIALS_SECONDS = _env_int("SAGEPORT_CONTAINER_CREDENTIALS_SECONDS", 3600)
if SAGEPORT_CONTAINER_CREDENTIALS_SECONDS < 900:
    raise SettingsError(
        "SAGEPORT_CONTAINER_CREDENTIALS_SECONDS must be at least 900, "
        f"got {SAGEPORT_CONTAINER_CREDENTIALS_SECONDS}"
    )

# --- Elastic training (HyperPodPyTorchJobs) ----------------------------------------------------
# From a world's replicas being created until every agent answers ready (images are local, so
# this covers the container's start and the agent's import of torch).
SAGEPORT_ELASTIC_READY_TIMEOUT_SECONDS = _env_positive_int("SAGEPORT_ELASTIC_READY_TIMEOUT_SECONDS", 300)

# --- Training ------------------------------------------------------------------------------
SAGEPORT_STOP_GRACE_SECONDS = _env_int("SAGEPORT_STOP_GRACE_SECONDS", 120)
# The grace of the instances still running when another instance of their job failed. The job
# has failed: nothing they do can save it (their collectives lost a peer), and SageMaker's 120 s
# is the grace of a stop the user asked for, to save a checkpoint. 10 s lets a SIGTERM handler
# flush its output and write its failure file, and an MPI job's toolkit, which ignores SIGTERM as
# PID 1, no longer keeps the failure from showing for two minutes.
SAGEPORT_FAILURE_STOP_GRACE_SECONDS = _env_int("SAGEPORT_FAILURE_STOP_GRACE_SECONDS", 10)
# Every algorithm and model container: at most this many processes and threads (generous: a
# training job with many data-loader workers and their threads stays far below it).
SAGEPORT_CONTAINER_PIDS_LIMIT = _env_positive_int("SAGEPORT_CONTAINER_PIDS_LIMIT", 4096)
SAGEPORT_POLL_INTERVAL_SECONDS = _env_float("SAGEPORT_POLL_INTERVAL_SECONDS", 2.0)
# Each training job's network takes a subnet from this pool (a /24, larger for jobs of more than
# 253 instances), so that every instance has a fixed address and every /etc/hosts lists algo-1 …
# algo-N for the job's whole life (Docker's DNS forgets a container once it exits).
SAGEPORT_TRAINING_SUBNET_POOL = _env_ipv4_pool("SAGEPORT_TRAINING_SUBNET_POOL", "10.213.0.0/16")


# How long the phases where the platform works may take before the job fails
# (training/phase_deadlines.py). Starting is timed from when the job got its capacity (the image
# pull included): waiting for capacity (Pending) never times out.
SAGEPORT_STARTING_TIMEOUT_SECONDS = _env_positive_seconds("SAGEPORT_STARTING_TIMEOUT_SECONDS", 3600)
SAGEPORT_DOWNLOADING_TIMEOUT_SECONDS = _env_positive_seconds("SAGEPORT_DOWNLOADING_TIMEOUT_SECONDS", 6 * 3600)
SAGEPORT_UPLOADING_TIMEOUT_SECONDS = _env_positive_seconds("SAGEPORT_UPLOADING_TIMEOUT_SECONDS", 6 * 3600)
SAGEPORT_LOG_TAIL_LINES = _env_int("SAGEPORT_LOG_TAIL_LINES", 20)
# Container log events older than this many days are deleted by the sweeper; 0 keeps them forever
# (CloudWatch's "Never expire", SageMaker's default for its log groups).
SAGEPORT_LOG_RETENTION_DAYS = _env_float("SAGEPORT_LOG_RETENTION_DAYS", 0)
if SAGEPORT_LOG_RETENTION_DAYS < 0:
    raise SettingsError(
        f"SAGEPORT_LOG_RETENTION_DAYS must be 0 (keep forever) or more, got {SAGEPORT_LOG_RETENTION_DAYS}"
    )
# How often a running job's checkpoint directory is scanned for files to upload or delete.
SAGEPORT_CHECKPOINT_SCAN_SECONDS = _env_float("SAGEPORT_CHECKPOINT_SCAN_SECONDS", 5.0)
# Pull images that are not in the local engine (off in air-gapped tests to fail fast).
SAGEPORT_PULL_MISSING_IMAGES = _env_bool("SAGEPORT_PULL_MISSING_IMAGES", True)
# A pull runs inside one reconcile step, so it ends (and fails the job with "timed out") before
# the broker's visibility timeout would hand the same message to another worker mid-pull.
SAGEPORT_IMAGE_PULL_TIMEOUT_SECONDS = _env_positive_seconds("SAGEPORT_IMAGE_PULL_TIMEOUT_SECONDS", 540)
# How often a pull under way updates the status message with its progress (a database write each).
SAGEPORT_PULL_PROGRESS_SECONDS = _env_positive_seconds("SAGEPORT_PULL_PROGRESS_SECONDS", 2)
if SAGEPORT_IMAGE_PULL_TIMEOUT_SECONDS >= SAGEPORT_VISIBILITY_TIMEOUT:
    raise SettingsError(
        f"SAGEPORT_IMAGE_PULL_TIMEOUT_SECONDS ({SAGEPORT_IMAGE_PULL_TIMEOUT_SECONDS:g}) must be less than "
        f"SAGEPORT_VISIBILITY_TIMEOUT ({SAGEPORT_VISIBILITY_TIMEOUT})"
    )

# --- Nodes and scheduling (capacity/inventory.py, training/scheduler.py) ----------------------
# This worker host's node: its name, and what it offers when detection should be overridden.
SAGEPORT_NODE_NAME = os.environ.get("SAGEPORT_NODE_NAME") or socket.gethostname()
# It goes into queue and container names.
if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}", SAGEPORT_NODE_NAME):
    raise SettingsError(
        "SAGEPORT_NODE_NAME must be 1 to 63 letters, digits, '_', '.' or '-' (starting with a letter or "
        f"digit), got {SAGEPORT_NODE_NAME!r}"
    )
# The address of this node that serving containers' ports are published on and that the API
# (InvokeEndpoint) reaches them at: 127.0.0.1 when the API runs on this host, else an address of
# this host the API's host can reach. Registered with the node.
SAGEPORT_NODE_ADDRESS = _env_address("SAGEPORT_NODE_ADDRESS", "127.0.0.1")
# GPUs: unset → detected with nvidia-smi (none without it); "0,1,2,3" → declared device ids;
# "none" → no GPU even where nvidia-smi finds some.
SAGEPORT_NODE_GPUS = os.environ.get("SAGEPORT_NODE_GPUS", "").strip()
SAGEPORT_NODE_CPUS = _env_int("SAGEPORT_NODE_CPUS", 0)  # 0: os.cpu_count()
SAGEPORT_NODE_MEMORY_MIB = _env_int("SAGEPORT_NODE_MEMORY_MIB", 0)  # 0: the host's physical memory
# The instance type this node stands for in HyperPod clusters (clusters/): unset → the largest
# HyperPod type of the catalog that its CPUs, memory and GPUs fit (capacity/inventory.py).
SAGEPORT_NODE_INSTANCE_TYPE = os.environ.get("SAGEPORT_NODE_INSTANCE_TYPE", "").strip()
if SAGEPORT_NODE_INSTANCE_TYPE and instance_types.unknown_type_problems(SAGEPORT_NODE_INSTANCE_TYPE, ""):
    raise SettingsError(
        f"SAGEPORT_NODE_INSTANCE_TYPE must be an instance type such as ml.g5.12xlarge, got "
        f"{SAGEPORT_NODE_INSTANCE_TYPE!r}"
    )
# Where this node's checkpoint tier service listens for the other nodes' (on SAGEPORT_NODE_ADDRESS).
SAGEPORT_TIER_PEER_PORT = _env_int("SAGEPORT_TIER_PEER_PORT", 9201)
if not 1 <= SAGEPORT_TIER_PEER_PORT <= 65535:
    raise SettingsError(f"SAGEPORT_TIER_PEER_PORT must be a port (1-65535), got {SAGEPORT_TIER_PEER_PORT}")
SAGEPORT_NODE_HEARTBEAT_SECONDS = _env_float("SAGEPORT_NODE_HEARTBEAT_SECONDS", 10.0)
# A node whose heartbeat is older than this is lost: its jobs fail or restart (RetryStrategy).
SAGEPORT_NODE_LOST_AFTER_SECONDS = _env_float("SAGEPORT_NODE_LOST_AFTER_SECONDS", 60.0)
# CPUs and memory are container limits shared between jobs; strict makes them reserved capacity.
SAGEPORT_STRICT_CPU_MEMORY = _env_bool("SAGEPORT_STRICT_CPU_MEMORY", False)
# How a training job whose instances fit on no single node may still run: "" (off: it waits or
# fails as too large) or "overlay" (its instances are spread over several nodes, joined by a
# Docker Swarm attachable overlay network; every engine must be in the swarm, docs/operations.md).
SAGEPORT_MULTI_NODE_NETWORK = os.environ.get("SAGEPORT_MULTI_NODE_NETWORK", "").strip().lower()
if SAGEPORT_MULTI_NODE_NETWORK not in ("", "off", "overlay"):
    raise SettingsError(
        f"SAGEPORT_MULTI_NODE_NETWORK must be overlay or off, got {SAGEPORT_MULTI_NODE_NETWORK!r}"
    )
SAGEPORT_SPAN_NODES = SAGEPORT_MULTI_NODE_NETWORK == "overlay"
# Whether those overlay networks are created encrypted (Docker's `--opt encrypted`: IPsec ESP
# between the engines, which every host's kernel must provide; docs/operations.md).
SAGEPORT_OVERLAY_ENCRYPTED = _env_bool("SAGEPORT_OVERLAY_ENCRYPTED", False)

# --- The checkpoint tier (clusters/tier_agent.py, the `tier` service) ---------------------------
# Where a node's tier service keeps checkpoints: memory-backed (tmpfs), never the disk.
SAGEPORT_TIER_MEMORY_DIR = Path(os.environ.get("SAGEPORT_TIER_MEMORY_DIR", "/dev/shm"))
# A namespace whose job has no container left is deleted after this long unused: a retried or
# restarted job resumes from memory within it.
SAGEPORT_TIER_NAMESPACE_GRACE_SECONDS = _env_positive_seconds("SAGEPORT_TIER_NAMESPACE_GRACE_SECONDS", 3600.0)
# The network namespace this node's engine runs in, when it is not the worker's own (an engine
# started in a namespace of its own, as the test cluster's are): the tier service listens on the
# engine's tier network, so it is started inside it (nsenter; docs/operations.md).
SAGEPORT_ENGINE_NETNS = os.environ.get("SAGEPORT_ENGINE_NETNS", "").strip()
if SAGEPORT_ENGINE_NETNS and not os.path.isabs(SAGEPORT_ENGINE_NETNS):
    raise SettingsError(
        f"SAGEPORT_ENGINE_NETNS must be the absolute path of a network namespace (e.g. "
        f"/run/netns/NAME or /proc/PID/ns/net), got {SAGEPORT_ENGINE_NETNS!r}"
    )
# How often a node's worker compares its tier service with what its cluster asks.
SAGEPORT_TIER_AGENT_SECONDS = _env_positive_seconds("SAGEPORT_TIER_AGENT_SECONDS", 2.0)
# How a container gets its GPUs: "device-request" (Docker DeviceRequest with the device ids plus
# NVIDIA_VISIBLE_DEVICES; needs the NVIDIA container toolkit) or "env-only" (NVIDIA_VISIBLE_DEVICES
# alone: for hosts whose default runtime is nvidia, and for tests on machines without GPUs).
SAGEPORT_GPU_DEVICE_MODE = os.environ.get("SAGEPORT_GPU_DEVICE_MODE", "device-request")
if SAGEPORT_GPU_DEVICE_MODE not in ("device-request", "env-only"):
    raise SettingsError(
        f"SAGEPORT_GPU_DEVICE_MODE must be device-request or env-only, got {SAGEPORT_GPU_DEVICE_MODE!r}"
    )

# --- HyperPod clusters (clusters/) ----------------------------------------------------------
# How long a cluster being created (or updated to more nodes) waits for enough registered nodes of
# its groups' instance types: then creation fails (an update goes back to InService, short). Three
# hours, as SageMaker's MinInstanceCount documentation says.
SAGEPORT_CLUSTER_PROVISIONING_TIMEOUT_SECONDS = _env_positive_seconds(
    "SAGEPORT_CLUSTER_PROVISIONING_TIMEOUT_SECONDS", 3 * 3600
)

# --- Hosting (endpoints) -------------------------------------------------------------------
# Serving containers get `GET /ping` this often, each with this timeout; this many failures in a
# row take a container in service out of the routing table (it is then replaced).
SAGEPORT_HEALTH_CHECK_INTERVAL_SECONDS = _env_float("SAGEPORT_HEALTH_CHECK_INTERVAL_SECONDS", 5.0)
SAGEPORT_PING_TIMEOUT_SECONDS = _env_float("SAGEPORT_PING_TIMEOUT_SECONDS", 2.0)
SAGEPORT_HEALTH_FAILURE_THRESHOLD = _env_int("SAGEPORT_HEALTH_FAILURE_THRESHOLD", 3)
# A new container must pass /ping within this time unless its variant gives
# ContainerStartupHealthCheckTimeoutInSeconds (SageMaker's default: 4 minutes).
SAGEPORT_STARTUP_HEALTH_TIMEOUT_SECONDS = _env_float("SAGEPORT_STARTUP_HEALTH_TIMEOUT_SECONDS", 240.0)
# A drained serving container gets SIGTERM, then SIGKILL this much later (SageMaker: 30 s).
SAGEPORT_SERVE_KILL_GRACE_SECONDS = _env_float("SAGEPORT_SERVE_KILL_GRACE_SECONDS", 30.0)
# InvokeEndpoint waits this long for a container's answer (SageMaker: 60 s).
SAGEPORT_INVOCATION_TIMEOUT_SECONDS = _env_float("SAGEPORT_INVOCATION_TIMEOUT_SECONDS", 60.0)
# A multi-model container holds at most this many models loaded; loading one more unloads the
# least recently used first (hosting/runtime_api/model_cache.py). A container that answers 507
# (out of memory) to a load gets its least recently used model unloaded too.
SAGEPORT_MULTI_MODEL_MAX_LOADED = _env_positive_int("SAGEPORT_MULTI_MODEL_MAX_LOADED", 8)
# A serverless variant's containers beyond its ProvisionedConcurrency are stopped once no request
# reached the variant for this long (hosting/serverless_scaling.py): long enough to keep a burst's
# containers warm through its pauses, short enough to give memory back to training soon after.
SAGEPORT_SERVERLESS_IDLE_SECONDS = _env_positive_seconds("SAGEPORT_SERVERLESS_IDLE_SECONDS", 120.0)
# API processes look for routing changes this often (in the background: a request never waits
# on Redis), and their acknowledgement of a table expires after the TTL (hosting/runtime_api/routing.py).
SAGEPORT_ROUTING_REFRESH_SECONDS = _env_float("SAGEPORT_ROUTING_REFRESH_SECONDS", 0.25)
SAGEPORT_ROUTING_ACK_TTL_SECONDS = _env_float("SAGEPORT_ROUTING_ACK_TTL_SECONDS", 5.0)
# Each API process adds up its invocations' CloudWatch metrics in memory and writes them this
# often (hosting/runtime_api/invocation_metrics.py): a crashed process loses at most this much.
SAGEPORT_INVOCATION_METRICS_FLUSH_SECONDS = _env_positive_seconds(
    "SAGEPORT_INVOCATION_METRICS_FLUSH_SECONDS", 5.0
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("SAGEPORT_LOG_LEVEL", "INFO")},
    # Client errors (4xx) are answers, not incidents: the protocol layer logs real failures.
    "loggers": {"django.request": {"level": "ERROR"}},
}

# --- Observability (docs/observability.md) --------------------------------------------------
# /readyz: each dependency check gives up after this long; an answer is reused this long.
SAGEPORT_READINESS_TIMEOUT_SECONDS = _env_float("SAGEPORT_READINESS_TIMEOUT_SECONDS", 0.5)
SAGEPORT_READINESS_CACHE_SECONDS = _env_float("SAGEPORT_READINESS_CACHE_SECONDS", 1.0)
# The parts /readyz checks. Compose's API container has no Docker socket (only the worker talks to
# the engine), so it leaves "docker" out.
READINESS_PARTS = ("database", "broker", "s3", "docker")
SAGEPORT_READINESS_CHECKS = _env_subset("SAGEPORT_READINESS_CHECKS", READINESS_PARTS)
# A reconcile step failing for a transient reason (engine or store unreachable) is retried this
# many times in a row, with backoff, before the resource fails with the reason.
SAGEPORT_TRANSIENT_RETRY_ATTEMPTS = _env_int("SAGEPORT_TRANSIENT_RETRY_ATTEMPTS", 20)
# Sageport's own log lines as one JSON object per line ("json") or plain text ("plain").
SAGEPORT_LOG_FORMAT = os.environ.get("SAGEPORT_LOG_FORMAT", "json")
LOGGING["filters"] = {"resource": {"()": "reconcile.log_context.ResourceFilter"}}
LOGGING["formatters"]["json"] = {"()": "reconcile.log_context.JsonFormatter"}
LOGGING["handlers"]["console"]["filters"] = ["resource"]
if SAGEPORT_LOG_FORMAT == "json":
    LOGGING["handlers"]["console"]["formatter"] = "json"
# The Celery worker keeps the configuration above (JSON lines) rather than installing its own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# The stack's per-child log files (`<data>/logs/<name>.log`) are rotated past this size, keeping
# this many older copies (devstack/log_rotation.py).
SAGEPORT_LOG_MAX_MIB = _env_positive_int("SAGEPORT_LOG_MAX_MIB", 50)
SAGEPORT_LOG_BACKUPS = _env_int("SAGEPORT_LOG_BACKUPS", 3)
# Celery logs every task received and finished (the sweep: every few seconds): only problems.
LOGGING["loggers"].update(
    {name: {"level": "WARNING"} for name in ("celery.app.trace", "celery.worker.strategy", "celery.beat")}
)
