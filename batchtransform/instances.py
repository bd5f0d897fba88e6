"""A transform job's instances: the model's serving containers (`docker run IMAGE serve`, the
model data at /opt/ml/model, the model's Environment, port 8080, the GPUs and limits of its
placement), each until it answers /ping.

Built on the shared container-job layer (jobs/: names, labels, network, the container's world,
limits) and hosting's serving contract (hosting/model_data: the model data staged as an endpoint's;
hosting/health: /ping)."""

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from batchtransform import parameters, placement
from batchtransform.kind import identity
from batchtransform.models import TransformJob
from capacity import gpus
from gateway import network as gateway_network
from hosting import model_data
from hosting.containers import MODEL_DIR, SERVING_PORT
from hosting.health import ping
from hosting.requests import model_container
from jobs import cleanup, images, log_streams, network, stopping, workspace
from jobs import containers as job_containers
from jobs.identity import job_labels, job_root
from runtime import labels
from runtime.base import ContainerRuntime, ContainerState, Mount
from runtime.docker import get_runtime

PING_INTERVAL_SECONDS = 0.25
# A container SIGTERM ends exits within milliseconds: looked for that soon, then less and less
# often. Every job's end waits for this.
FIRST_EXIT_LOOK_SECONDS = 0.01
STOP_WAIT_SECONDS = 5.0  # a serving container's SIGTERM ends it at once when nothing is in flight
# How much of a container's output one look copies into its stream: a container that floods its
# stdout never makes the worker hold its whole output, and the job's watcher (which also sees
# StopTransformJob) goes on looking. The engine scans a container's whole log file to answer each
# look, so looks are few and large (logs/container_logs.py stores them in short transactions).
# While the job runs, one look every WATCH_SECONDS; at its end, looks until caught up,
# LOG_LOOKS_AT_END at most: what a flood wrote past that stays in the engine's log, not in
# CloudWatch.
LOG_BYTES_PER_LOOK = 4 << 20
LOG_LOOKS_AT_END = 4


def collect_logs(job: TransformJob, looks: int = 1) -> None:
    """Copy the instances' new output into their streams, `looks` slices at most."""
    for _ in range(looks):
        if log_streams.collect(get_runtime(), identity(job), states(job), max_bytes=LOG_BYTES_PER_LOOK):
            return


class InstanceFailed(Exception):
    """An instance cannot serve; the message is the job's FailureReason."""


@dataclass(frozen=True)
class Instance:
    host: str
    port: int


def hosts(job: TransformJob) -> list[str]:
    return workspace.host_names(job.request["TransformResources"]["InstanceCount"])


def start(job: TransformJob, halt: threading.Event) -> list[Instance]:
    """Stage the model, start every instance's container and wait until each answers /ping."""
    runtime = get_runtime()
    job_id = identity(job)
    # A run starts afresh: what an earlier run left (a dead worker's containers) is removed.
    cleanup.remove_resources(runtime, job_id)
    definition = model_container(job.model)
    model_dir = job_root(job_id) / "model"
    try:
        model_data.stage(job.account_id, definition, model_dir)
    except model_data.ModelDataError as error:
        raise InstanceFailed(f"ClientError: {error}") from None
    images.ensure(runtime, definition["Image"], "model image", report=lambda message: None)
    names = hosts(job)
    network.ensure(runtime, job_id, len(names), isolated=False)
    states = [_run(runtime, job, host, names, definition, model_dir) for host in names]
    instances = [Instance(host, state.host_port) for host, state in zip(names, states, strict=True)]
    for instance in instances:
        _wait_healthy(runtime, job, instance, halt)
    return instances


def _run(
    runtime: ContainerRuntime,
    job: TransformJob,
    host: str,
    names: list[str],
    definition: dict,
    model_dir: Path,
) -> ContainerState:
    held = placement.placement_of(job, host)
    spec = job_containers.instance_spec(
        identity(job),
        host,
        names,
        image=definition["Image"],
        entrypoint=None,
        command=["serve"],
        isolated=False,
        role_arn=job.model.get("ExecutionRoleArn"),
        # The instance type's CPUs, memory and NVIDIA GPUs, as its placement holds them.
        capacity=job_containers.InstanceCapacity(
            held.node.name, held.nano_cpus, held.memory_bytes, gpus.gpu_ids(held)
        ),
        subnet=None,
        # The model's Environment, then the job's (CreateTransformJob.Environment), then what
        # SageMaker tells the container about the job.
        user_environment={**definition.get("Environment", {}), **job.request.get("Environment", {})},
        job_environment=parameters.container_environment(job.request),
        mounts=(Mount(str(model_dir), MODEL_DIR, read_only=True),),
        published_port=SERVING_PORT,
        published_address=settings.SAGEPORT_NODE_ADDRESS,
    )
    gateway_network.ensure(runtime, spec.extra_networks)
    return runtime.run(spec)


def _wait_healthy(
    runtime: ContainerRuntime, job: TransformJob, instance: Instance, halt: threading.Event
) -> None:
    timeout = settings.SAGEPORT_STARTUP_HEALTH_TIMEOUT_SECONDS
    deadline = time.monotonic() + timeout
    job_id = identity(job)
    while not halt.is_set():
        result = ping(instance.port)
        if result.healthy:
            return
        state = _state(runtime, job, instance.host)
        if state is None or state.exited:
            collect_logs(job, LOG_LOOKS_AT_END)
            tail = " | ".join(log_streams.tail(job_id, instance.host)[-5:])
            code = "" if state is None else f" with exit code {state.exit_code}"
            raise InstanceFailed(
                f"ClientError: The model container of {instance.host} exited{code} "
                f"before passing /ping. {tail}"
            )
        if time.monotonic() >= deadline:
            raise InstanceFailed(
                f"ClientError: The model container of {instance.host} did not pass the ping health check "
                f"within {timeout:g} seconds: {result.problem}"
            )
        halt.wait(PING_INTERVAL_SECONDS)


def _state(runtime: ContainerRuntime, job: TransformJob, host: str) -> ContainerState | None:
    found = runtime.find({**job_labels(identity(job)), labels.HOST: host})
    return found[0] if found else None


def states(job: TransformJob) -> dict[str, ContainerState | None]:
    """Each instance's container on this engine (None: none), by host."""
    return {host: _state(get_runtime(), job, host) for host in hosts(job)}


def stop(job: TransformJob) -> None:
    """SIGTERM every instance's container and wait (at most STOP_WAIT_SECONDS) until they exited,
    so that their output is all in the engine's log when it is copied: a running container's
    last lines may not have reached it yet. The job's clean-up removes them after."""
    runtime = get_runtime()
    stopping.signal_running(runtime, [state for state in states(job).values() if state], "SIGTERM")
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    pause = FIRST_EXIT_LOOK_SECONDS
    while time.monotonic() < deadline and any(state and state.running for state in states(job).values()):
        threading.Event().wait(pause)
        pause = min(pause * 2, PING_INTERVAL_SECONDS)
