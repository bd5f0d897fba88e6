"""The processing-job reconciler, on the shared container-job layer (jobs/).

Level-triggered, one short step at a time, as training's: load the job, observe its containers
(by label), do one idempotent step, write the status that follows; each step returns when the job
wants its next look (seconds), or None when it needs none.

Starting (placement, workspace and config files, image) → Downloading (File inputs staged per
host, Pipe inputs' feeders defined) → Processing (containers started, Pipe feeders kept running,
Continuous outputs uploaded at each look, exits watched, MaxRuntimeInSeconds) → Uploading →
Completed | Failed; Stopping (SIGTERM once, SIGKILL after the grace) → Stopped (or Failed when
a container had failed first)."""
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from capacity import nodes, single_node
from gateway import network as gateway_network
from jobs import cleanup, deadlines, images, instance_metrics, log_streams, staging, stopping
from jobs import network as job_network
from jobs import workspace as job_workspace
from jobs.identity import job_labels
from processing import containers, kind, outputs, pipes, placement, workspace
from processing import transitions as t
from processing.models import ProcessingJob, ProcessingJobStatus
from processing.requests import FILE
from reconcile import leases
from reconcile.loop import reconcile_once
from runtime import labels
from runtime.base import ContainerStartFailed, ContainerState, EngineFault, NoSuchImage
from runtime.docker import get_runtime
from storage import safe_files
from storage.s3 import StorageError

AT_ONCE = 0.0
States = dict[str, ContainerState | None]

_PHASES = {
    t.STARTING: deadlines.Phase(
        "Preparing the instances for processing", ("SAGEPORT_STARTING_TIMEOUT_SECONDS",)
    ),
    t.DOWNLOADING: deadlines.Phase("Downloading input data", ("SAGEPORT_DOWNLOADING_TIMEOUT_SECONDS",)),
    t.UPLOADING: deadlines.Phase("Uploading the processing outputs", ("SAGEPORT_UPLOADING_TIMEOUT_SECONDS",)),
    t.STOPPING: deadlines.Phase(
        "Stopping the processing job", ("SAGEPORT_STOP_GRACE_SECONDS", "SAGEPORT_UPLOADING_TIMEOUT_SECONDS")
    ),
}


def reconcile(job_id: int) -> float | None:
    return reconcile_once(
        ProcessingJob, job_id, _step, give_up=_give_up, finished=lambda job: job.is_terminal,
        waiting=t.set_status_message,
    )


def _step(job: ProcessingJob, token: str) -> float | None:
    overdue = _overdue(job)
    if overdue:
        return _give_up(job, overdue)
    return STEPS[t.state_of(job)](job, token)


def _overdue(job: ProcessingJob) -> str | None:
    """Past its phase's deadline (Pending, waiting for capacity, never is; Starting is timed from
    the placement)."""
    phase = _PHASES.get(t.state_of(job))
    if phase is None:
        return None
    began = placement.placed_at(job) if t.state_of(job) == t.STARTING else job.phase_started_at
    return deadlines.overdue(phase, began, timezone.now())


def _give_up(job: ProcessingJob, reason: str) -> float | None:
    """A phase took too long or its step failed for good: fail the job, remove what it holds."""
    if not t.transition(job, t.FAILED, failure_reason=reason[:1024]):
        return AT_ONCE  # it moved meanwhile: look again
    _remove_resources(job)
    return None


def on_node_lost(job: ProcessingJob, node: str) -> None:
    """The job's node stopped heartbeating (called by the sweeper): what ran there is out of reach,
    so its placements are freed at once; a job whose containers may have started fails (SageMaker
    retries no processing job), one not yet started is placed again elsewhere."""
    placement.release(job)
    if t.state_of(job) in (t.STARTING, t.PENDING):
        return
    reason = f"InternalServerError: the node {node} that ran it stopped sending heartbeats."
    t.transition(job, t.FAILED, failure_reason=reason)


def _poll() -> float:
    return settings.SAGEPORT_POLL_INTERVAL_SECONDS


def _start(job: ProcessingJob, token: str) -> float | None:
    decision = placement.place(job)
    if isinstance(decision, single_node.NeverFits):
        return _give_up(job, decision.reason)
    if isinstance(decision, single_node.Waiting):
        if t.state_of(job) != t.PENDING:
            t.transition(job, t.PENDING, message=decision.reason)
        return _poll()  # capacity is looked for again at every poll
    if decision.node != nodes.local_name():
        return AT_ONCE  # processing.tasks hands the job to that node's own queue
    workspace.prepare(job, containers.hosts(job))
    image = job.request["AppSpecification"]["ImageUri"]
    try:
        with leases.kept_alive(ProcessingJob, job.pk, token):
            images.ensure(
                get_runtime(), image, "processing image", lambda text: t.set_status_message(job, text)
            )
    except NoSuchImage as exc:
        return _give_up(job, f"ClientError: {exc}")
    t.transition(job, t.DOWNLOADING)
    return AT_ONCE


def _download(job: ProcessingJob, token: str) -> float | None:
    hosts = containers.hosts(job)
    try:
        with leases.kept_alive(ProcessingJob, job.pk, token):
            for host_index, host in enumerate(hosts):
                for index, item in workspace.inputs(job, FILE):
                    _stage(job, index, item, host, host_index, len(hosts))
            pipes.prepare(job, hosts)
    except StorageError as exc:
        if exc.transient:
            raise  # retried with backoff by reconcile_once, within the Downloading deadline
        return _give_up(job, f"ClientError: {exc}")
    t.transition(job, t.PROCESSING, processing_start_time=timezone.now())
    return AT_ONCE


def _stage(job: ProcessingJob, index: int, item: dict, host: str, host_index: int, host_count: int) -> None:
    """One input's share for one host (jobs/staging: S3Prefix/ManifestFile, FullyReplicated/
    ShardedByS3Key, the tenancy and escape checks) into a directory emptied first."""
    destination = workspace.host_workspace(job, host).input_dir(index)
    safe_files.remove_tree(destination)  # a half-staged input from a crash
    destination.mkdir(parents=True)
    staging.stage(job.account_id, workspace.s3_input(item), destination, host_index, host_count)


def _process(job: ProcessingJob, token: str) -> float | None:
    # Before the engine is asked anything: an engine that does not answer cannot keep a job
    # running past its MaxRuntimeInSeconds (Stopping has its own deadline).
    if _runtime_exceeded(job):
        t.transition(job, t.STOPPING, outcome=ProcessingJobStatus.STOPPED)
        return AT_ONCE
    states = _observe(job)
    _collect_logs(job, states)
    _publish_metrics(job, states)
    failure = _upload_continuous(job) or pipes.ensure_running(job)
    if failure:
        return _decide_failed(job, failure)
    gone = _vanished(job, states)
    if gone:
        reason = (
            f"InternalServerError: the container of {', '.join(gone)} disappeared from the Docker engine."
        )
        return _decide_failed(job, reason)
    if any(_not_running_yet(state) for state in states.values()):
        failure = _start_missing(job, states)
        return _decide_failed(job, failure) if failure else _poll()
    failed = [(state.finished_at or "", host, state) for host, state in states.items() if _failed(state)]
    if failed:
        _, host, state = min(failed)
        return _decide_failed(job, containers.failure_reason(job, host, state))
    if all(state.exited for state in states.values()):
        t.transition(job, t.UPLOADING, outcome=ProcessingJobStatus.COMPLETED)
        return AT_ONCE
    return _poll()


def _decide_failed(job: ProcessingJob, reason: str) -> float:
    """An instance failed: the others are stopped (the short failure grace), then the outputs
    are uploaded and the job fails with `reason`."""
    t.transition(job, t.STOPPING, outcome=ProcessingJobStatus.FAILED, failure_reason=reason[:1024])
    return AT_ONCE


def _runtime_exceeded(job: ProcessingJob) -> bool:
    limit = timedelta(seconds=job.request["StoppingCondition"]["MaxRuntimeInSeconds"])
    return job.processing_start_time is not None and timezone.now() - job.processing_start_time > limit


def _start_missing(job: ProcessingJob, states: States) -> str | None:
    runtime = get_runtime()
    subnet = None
    if containers.needs_network(job):
        network = job_network.ensure(
            runtime, kind.identity(job), containers.instance_count(job), isolated=containers.isolated(job)
        )
        subnet = network.address_subnet
    for host, state in states.items():
        if not _not_running_yet(state):
            continue
        try:
            spec = containers.spec_for(job, host, subnet)
            host_root = workspace.host_workspace(job, host).root
            job_workspace.write_hosts(host_root, containers.host_entries(job, host, subnet))
            gateway_network.ensure(runtime, spec.extra_networks)
            states[host] = runtime.run(spec)
        except (ContainerStartFailed, NoSuchImage) as exc:
            blame = "InternalServerError" if isinstance(exc, EngineFault) else "ClientError"
            return f"{blame}: could not start the container for {host}: {exc}"
        placement.mark_started(job, [host])
    return None


def _not_running_yet(state: ContainerState | None) -> bool:
    return state is None or state.never_started


def _failed(state: ContainerState | None) -> bool:
    return state is not None and state.exited and state.exit_code != 0


def _vanished(job: ProcessingJob, states: States) -> list[str]:
    missing = {host for host, state in states.items() if state is None}
    return sorted(missing & placement.started_hosts(job)) if missing else []


def _stop(job: ProcessingJob, token: str) -> float | None:
    states = _observe(job)
    _collect_logs(job, states)
    _publish_metrics(job, states)
    failure = _upload_continuous(job)
    if failure and job.outcome != ProcessingJobStatus.FAILED:
        t.record_decision(job, outcome=ProcessingJobStatus.FAILED, failure_reason=failure[:1024])
    drained = stopping.drain(
        get_runtime(),
        [state for state in states.values() if state is not None],
        any_running=any(state is not None and state.running for state in states.values()),
        signalled_at=job.stop_signalled_at,
        grace_seconds=stop_grace_seconds(job),
        record_signalled=lambda now: t.record_decision(job, stop_signalled_at=now),
        record_killed=lambda now: job.stop_killed_at or t.record_decision(job, stop_killed_at=now),
    )
    if not drained:
        return _poll()
    final = t.FAILED if job.outcome == ProcessingJobStatus.FAILED else t.STOPPED
    return _finish(job, token, final)


def stop_grace_seconds(job: ProcessingJob) -> int:
    """SIGTERM → SIGKILL: a stop (and MaxRuntimeInSeconds) gets SageMaker's grace; the other
    instances of a job one of whose instances failed get the short failure grace."""
    if job.outcome == ProcessingJobStatus.FAILED:
        return min(settings.SAGEPORT_FAILURE_STOP_GRACE_SECONDS, settings.SAGEPORT_STOP_GRACE_SECONDS)
    return settings.SAGEPORT_STOP_GRACE_SECONDS


def _upload(job: ProcessingJob, token: str) -> float | None:
    return _finish(job, token, t.COMPLETED)


def _finish(job: ProcessingJob, token: str, final: tuple[str, str]) -> float | None:
    """Read the exit messages, upload the outputs, write the terminal status, remove what the job
    used. Outputs go up whatever the end, as training's artifacts do: what a failed or stopped job
    wrote is what its user needs to see why."""
    fields = {"failure_reason": job.failure_reason}
    hosts = containers.hosts(job) if _ran(job) else []
    try:
        fields["exit_message"] = _exit_message(job, hosts)
    except workspace.UndecodableMessage as exc:
        final, fields["exit_message"] = t.FAILED, ""
        fields["failure_reason"] = f"ClientError: /opt/ml/output/message is not UTF-8 encoded: {exc}"
    if hosts:
        _collect_logs(job, _observe(job))
        try:
            with leases.kept_alive(ProcessingJob, job.pk, token):
                outputs.upload_at_end(job)
        except StorageError as exc:
            if exc.transient:
                raise  # retried with backoff, within the Uploading (or Stopping) deadline
            final = t.FAILED
            fields["failure_reason"] = f"ClientError: could not upload the processing outputs: {exc}"
    fields["failure_reason"] = fields["failure_reason"][:1024]
    if not t.transition(job, final, **fields):
        return AT_ONCE
    _remove_resources(job)
    return None


def _ran(job: ProcessingJob) -> bool:
    """Whether its containers were ever started: only then are there messages and outputs."""
    return job.processing_start_time is not None and bool(placement.started_hosts(job))


def _exit_message(job: ProcessingJob, hosts: list[str]) -> str:
    """Every instance's /opt/ml/output/message, concatenated, then cut to 1 KB (SageMaker's rule)."""
    return "".join(workspace.host_workspace(job, host).exit_message() for host in hosts)[:1024]


def _remove_resources(job: ProcessingJob) -> None:
    pipes.stop(job)
    cleanup.remove_resources(get_runtime(), kind.identity(job))
    placement.release(job)


def _observe(job: ProcessingJob) -> States:
    found = get_runtime().find(job_labels(kind.identity(job)))
    by_host = {state.labels.get(labels.HOST): state for state in found}
    return {host: by_host.get(host) for host in containers.hosts(job)}


def _collect_logs(job: ProcessingJob, states: States) -> None:
    """Copy the containers' new output into /aws/sagemaker/ProcessingJobs, a stream per host."""
    log_streams.collect(get_runtime(), kind.identity(job), states)


def _publish_metrics(job: ProcessingJob, states: States) -> None:
    """This minute's instance metrics in /aws/sagemaker/ProcessingJobs (Host `<job>/algo-N`)."""
    volume_size_gb = job.request["ProcessingResources"]["ClusterConfig"].get("VolumeSizeInGB")
    instance_metrics.publish(get_runtime(), kind.identity(job), states, volume_size_gb)


def _upload_continuous(job: ProcessingJob) -> str | None:
    """Upload what the Continuous outputs hold new; the FailureReason when S3 refuses for good."""
    try:
        outputs.upload_continuous(job, containers.hosts(job))
    except StorageError as exc:
        if exc.transient:
            raise  # retried with backoff by reconcile_once
        return f"ClientError: could not upload the processing outputs: {exc}"
    return None


STEPS = {
    t.STARTING: _start,
    t.PENDING: _start,
    t.DOWNLOADING: _download,
    t.PROCESSING: _process,
    t.UPLOADING: _upload,
    t.STOPPING: _stop,
}
