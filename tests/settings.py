"""Settings for the test session: the production settings, read under a per-session environment.

pytest-django loads the settings module before any conftest.py is imported, so the session's
environment (free ports below the ephemeral range, which nothing takes before the servers bind
them a quarter of an hour later, a temporary data dir, short timings) is exported here, just before
`controlplane.settings` reads it. The servers the fixtures start inherit this environment,
import this module again and find it already exported, so everyone agrees on the same values."""
import os
import tempfile
import uuid
from pathlib import Path

from devstack.stack import LOOPBACK, lasting_port

SESSION_MARKER = "SAGEPORT_TEST_SESSION"


def export_session_environment() -> None:
    if os.environ.get(SESSION_MARKER):
        return
    os.environ.update({
        SESSION_MARKER: "1",
        # Created by the first server that needs it; tests/conftest.py removes it at the end.
        "SAGEPORT_DATA_DIR": str(Path(tempfile.gettempdir()) / f"sageport-test-{uuid.uuid4().hex[:12]}"),
        "SAGEPORT_PORT": str(lasting_port()),
        "SAGEPORT_RUNTIME_PORT": str(lasting_port()),
        "SAGEPORT_S3_ENDPOINT_URL": f"http://{LOOPBACK}:{lasting_port()}",
        "SAGEPORT_REDIS_URL": f"redis://{LOOPBACK}:{lasting_port()}/0",
        "SAGEPORT_STOP_GRACE_SECONDS": "3",
        "SAGEPORT_POLL_INTERVAL_SECONDS": "0.5",
        "SAGEPORT_SWEEP_INTERVAL_SECONDS": "2",
        "SAGEPORT_LEASE_SECONDS": "20",  # a killed worker's claim lapses within a test's patience
        "SAGEPORT_CHECKPOINT_SCAN_SECONDS": "0.3",
        "SAGEPORT_PULL_MISSING_IMAGES": "false",
        "SAGEPORT_S3_ACCESS_LOG": "true",  # tests read who touched a bucket (test_tenancy.py)
        # Hosting: fast health checks, a short startup deadline and kill grace, a short
        # invocation timeout so that the timeout test does not wait a minute.
        "SAGEPORT_HEALTH_CHECK_INTERVAL_SECONDS": "0.5",
        "SAGEPORT_HEALTH_FAILURE_THRESHOLD": "2",
        "SAGEPORT_STARTUP_HEALTH_TIMEOUT_SECONDS": "8",
        "SAGEPORT_SERVE_KILL_GRACE_SECONDS": "3",
        "SAGEPORT_INVOCATION_TIMEOUT_SECONDS": "4",
        "SAGEPORT_INVOCATION_METRICS_FLUSH_SECONDS": "0.5",  # CloudWatch endpoint metrics show fast
        "SAGEPORT_MULTI_MODEL_MAX_LOADED": "2",  # a third model evicts one (test_hosting_multi_model.py)
        "SAGEPORT_SERVERLESS_IDLE_SECONDS": "2",  # idle serverless containers stop soon
        "SAGEMAKER_SUPPRESS_V2_WARNING": "1",  # the SDK tests use the v2 Estimator API on purpose
        # The test node: four declared GPUs, handed to containers by NVIDIA_VISIBLE_DEVICES only
        # (this machine has no NVIDIA runtime), and a short heartbeat so a lost node shows fast.
        "SAGEPORT_NODE_NAME": "test-node-a",
        "SAGEPORT_NODE_GPUS": "0,1,2,3",
        # What it stands for in HyperPod clusters (the catalog type with four GPUs), so that the
        # cluster tests can fill an instance group with it.
        "SAGEPORT_NODE_INSTANCE_TYPE": "ml.g5.12xlarge",
        # Its checkpoint tier (when a cluster enables it): a free peer port, and a quick agent.
        "SAGEPORT_TIER_PEER_PORT": str(lasting_port()),
        "SAGEPORT_TIER_AGENT_SECONDS": "0.5",
        "SAGEPORT_GPU_DEVICE_MODE": "env-only",
        "SAGEPORT_NODE_HEARTBEAT_SECONDS": "1",
        "SAGEPORT_NODE_LOST_AFTER_SECONDS": "20",  # generous: SQLite lock waits can delay a beat
    })


export_session_environment()

from controlplane.settings import *  # noqa: E402,F403
