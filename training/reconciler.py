"""The training-job reconciler.

Level-triggered, one short step at a time: load the job, return if it is terminal, observe its
containers (found by label), do one idempotent step, write the status that follows. The step
functions return when the job wants its next look (seconds), or None when it needs none. A
worker killed anywhere in here loses nothing: the next reconcile observes and carries on."""
import logging
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.utils import timezone

from capacity import nodes
from clusters import tier_network
from gateway import network as gateway_network
from jobs import cleanup, images, instance_metrics, log_streams, stopping
from jobs import network as job_network
from reconcile import leases
from reconcile.loop import reconcile_once
from runtime import labels
from runtime.base import ContainerStartFailed, ContainerState, EngineFault, NoSuchImage
from runtime.docker import get_runtime
from storage import safe_files
from storage.s3 import StorageError
from training import (
    artifacts,
    attempts,
    containers,
    kind,
    metrics,
    phase_deadlines,
    priority,
    scheduler,
    spans,
    workspace,
)
from training import sidecars as training_sidecars
from training import transitions as t
from training.data.channels import ChannelError, stage_channel
from training.models import SecondaryStatus as Outcome
from training.models import TrainingJob

log = logging.getLogger(__name__)

AT_ONCE = 0.0
# The FailureReason prefix of the platform's faults (SageMaker's word): RetryStrategy retries them.
INTERNAL_SERVER_ERROR = "InternalServerError: "

States = dict[str, ContainerState | None]


def reconcile(job_id: int) -> float | None:
    return reconcile_once(
        TrainingJob,
        job_id,
        _step,
        give_up=_give_up,
        finished=lambda job: job.is_terminal,
        waiting=t.set_status_message,
    )


def _step(job: TrainingJob, token: str) -> float | None:
    overdue = phase_deadlines.overdue(job, timezone.now())
    if overdue:
        return _give_up(job, overdue)
    return STEPS[t.state_of(job)](job, token)


def _give_up(job: TrainingJob, reason: str) -> float | None:
    """A phase took too long, or its step failed for good: fail the job and remove what it holds
    (the artifacts are not uploaded: uploading may be what fails or hangs)."""
    training_sidecars.stop(job)
    if not t.transition(job, t.FAILED, failure_reason=reason[:1024], training_end_time=timezone.now()):
        return AT_ONCE  # it moved meanwhile: look again
    _remove_resources(job)
    return None


def _poll() -> float:
    return settings.SAGEPORT_POLL_INTERVAL_SECONDS


def _start(job: TrainingJob, token: str) -> float | None:
    decision = scheduler.place(job)
    if isinstance(decision, scheduler.NeverFits):
        return _fail_before_training(job, decision.reason)
    if isinstance(decision, scheduler.Waiting):
        reclaiming = priority.ask_for_gpus(job) if decision.for_capacity else None
        message = f"{decision.reason} {reclaiming}" if reclaiming else decision.reason
        if t.state_of(job) != t.PENDING:
            t.transition(job, t.PENDING, message=message)
        elif reclaiming:
            t.set_status_message(job, message)
        return _poll()  # capacity is looked for again at every poll, oldest job first
    if decision.node != nodes.local_name():
        return AT_ONCE  # training.tasks hands the job to that node's own queue
    if job.restart_count:
        attempts.retire_earlier(get_runtime(), job)  # before anything of the new attempt exists here
    workspace.prepare(job, local_hosts(job))  # a job spanning nodes: the members prepare theirs
    try:
        with leases.kept_alive(TrainingJob, job.pk, token):
            ensure_image(job, job.request["AlgorithmSpecification"]["TrainingImage"])
    except NoSuchImage as exc:
        return _fail_before_training(job, f"ClientError: {exc}")
    # A restarted job keeps the start of its first attempt (MaxRuntimeInSeconds covers them all).
    t.transition(job, t.DOWNLOADING, training_start_time=job.training_start_time or timezone.now())
    return AT_ONCE


def local_hosts(job: TrainingJob) -> list[str]:
    """The instances this node works for: all of them, but those placed on other nodes."""
    elsewhere = spans.remote_states(job)
    return [host for host in containers.hosts(job) if host not in elsewhere]


def ensure_image(job: TrainingJob, image: str) -> None:
    images.ensure(get_runtime(), image, "training image", lambda message: t.set_status_message(job, message))


def _download(job: TrainingJob, token: str) -> float | None:
    unusable = [name for name in _channel_names(job) if not workspace.is_directory_name(name)]
    if unusable:  # refused at create time; never staged, whatever the stored request says
        names = ", ".join(repr(name) for name in unusable)
        return _fail_before_training(job, f"ClientError: channel name {names} cannot be a directory name.")
    hosts = local_hosts(job)
    if not spans.hosts_ready(job, hosts):
        try:
            with leases.kept_alive(TrainingJob, job.pk, token):
                stage_inputs(job, hosts)
        except (ChannelError, StorageError) as exc:
            if exc.transient:
                raise  # retried with backoff by reconcile_once, within the Downloading deadline
            return _fail_before_training(job, f"ClientError: {exc}")
        spans.mark_ready(job, hosts)
    failure = spans.member_failure(job)
    if failure:
        return _fail_before_training(job, failure)
    if not spans.all_ready(job):
        return _poll()  # the other nodes of a job spanning nodes are still staging theirs
    t.transition(job, t.TRAINING)
    return AT_ONCE


def stage_inputs(job: TrainingJob, hosts: list[str]) -> None:
    """Stage the File channels of `hosts`, define their Pipe feeders, restore their checkpoints."""
    _stage_channels(job, hosts)
    training_sidecars.prepare(job, hosts)


def _channel_names(job: TrainingJob) -> list[str]:
    return [channel["ChannelName"] for channel in job.request.get("InputDataConfig", [])]


def _stage_channels(job: TrainingJob, only: list[str]) -> None:
    hosts = containers.hosts(job)  # every host, so that each gets its own shard
    for index, host in enumerate(hosts):
        if host not in only:
            continue
        for channel in job.request.get("InputDataConfig", []):
            if channel["InputMode"] == training_sidecars.PIPE:
                continue  # streamed while the job trains, never staged
            destination = workspace.host_workspace(job, host).channel_dir(channel["ChannelName"])
            safe_files.remove_tree(destination)  # a half-staged channel from a crash
            destination.mkdir(parents=True)
            stage_channel(job.account_id, channel, destination, index, len(hosts))


def _fail_before_training(job: TrainingJob, reason: str) -> float | None:
    if not t.transition(job, t.FAILED, failure_reason=reason[:1024], training_end_time=timezone.now()):
        return AT_ONCE  # it moved (e.g. a stop request): look again
    workspace.remove(job)
    scheduler.release(job)
    return None


def _train(job: TrainingJob, token: str) -> float | None:
    # Before the engine is asked anything: an engine that does not answer cannot keep a job
    # training past its MaxRuntimeInSeconds (Stopping has its own deadline).
    if not job.outcome and _runtime_exceeded(job):
        t.transition(job, t.STOPPING_STATE, outcome=Outcome.MAX_RUNTIME_EXCEEDED)
        return AT_ONCE
    states = _observe(job)
    collect_logs(job, _here(job, states))
    publish_metrics(job, _here(job, states))
    if job.outcome:  # a container failed: the others are being stopped
        return _after_drain(job, states, t.UPLOADING)
    gone = vanished(job, states) + spans.remote_vanished(job)
    if gone:
        return _infrastructure_fault(
            job, states, f"the container of {', '.join(gone)} disappeared from the Docker engine"
        )
    # Pipe feeders and checkpoint sync, restarted if dead; on other nodes, what their workers met.
    failure = training_sidecars.ensure_running(job) or spans.member_failure(job) or None
    if failure is None and any(not_running_yet(state) for state in states.values()):
        failure = start_missing(job, states)
        if failure is None:
            return _poll()  # judge the new containers on the next look, with their output collected
    failure = failure or _first_failure(job, states)
    if failure and failure.startswith(INTERNAL_SERVER_ERROR):  # an engine's fault, here or on a member
        return _infrastructure_fault(job, states, failure.removeprefix(INTERNAL_SERVER_ERROR).rstrip("."))
    if failure:
        _decide(job, outcome=Outcome.FAILED, failure_reason=failure[:1024])
        return _after_drain(job, states, t.UPLOADING)
    if all(state.exited for state in states.values()):
        t.transition(job, t.UPLOADING, outcome=Outcome.COMPLETED)
        return AT_ONCE
    return _poll()


def _runtime_exceeded(job: TrainingJob) -> bool:
    limit = timedelta(seconds=job.request["StoppingCondition"]["MaxRuntimeInSeconds"])
    return job.training_start_time is not None and timezone.now() - job.training_start_time > limit


def start_missing(job: TrainingJob, states: States, hosts: list[str] | None = None) -> str | None:
    """Start this node's containers that do not exist or never started; a reason when the engine
    refuses one.
    A job spanning nodes gets an overlay network, which the other nodes' containers join too."""
    hosts = local_hosts(job) if hosts is None else hosts
    missing = [host for host, state in states.items() if not_running_yet(state) and host in hosts]
    runtime = get_runtime()
    subnet = None
    isolated = job.request["EnableNetworkIsolation"]
    if containers.needs_network(job):
        overlay = spans.spans_nodes(job)
        # The other nodes of a job spanning nodes take the subnet the first node's network got.
        recorded = spans.network_subnet(job) if overlay else ""
        network = job_network.ensure(
            runtime, kind.identity(job), containers.instance_count(job), isolated=isolated, overlay=overlay,
            recorded=recorded,
        )
        if overlay and not recorded:
            spans.record_network_subnet(job, network.subnet)
        subnet = network.address_subnet  # a pool too small: no fixed addresses
    tier = tier_network.reach_for(runtime, nodes.local_name(), isolated=isolated) if missing else None
    for host in missing:
        try:
            spec = containers.spec_for(job, host, subnet, tier)
            host_workspace = workspace.host_workspace(job, host)
            host_workspace.write_hosts(containers.host_entries(job, host, subnet, tier))
            if tier:
                host_workspace.checkpointing_log_dir.mkdir(parents=True, exist_ok=True)
            gateway_network.ensure(runtime, spec.extra_networks)
            states[host] = runtime.run(spec)
        except (ContainerStartFailed, NoSuchImage) as exc:
            blame = INTERNAL_SERVER_ERROR if isinstance(exc, EngineFault) else "ClientError: "
            return f"{blame}could not start the container for {host}: {exc}"
        scheduler.mark_started(job, [host])
    return None


def not_running_yet(state: ContainerState | None) -> bool:
    """A host whose container is to be started: never created, or created by a step whose worker
    died before it started the container (`run` starts it then)."""
    return state is None or state.never_started


def vanished(job: TrainingJob, states: States, hosts: list[str] | None = None) -> list[str]:
    """This node's hosts whose container was started but is gone: lost to the infrastructure,
    not the algorithm (other nodes report theirs: spans.remote_vanished)."""
    hosts = local_hosts(job) if hosts is None else hosts
    missing = [host for host, state in states.items() if state is None and host in hosts]
    return sorted(set(missing) & scheduler.started_hosts(job)) if missing else []


# --- Infrastructure faults and RetryStrategy --------------------------------------------------


def _restart_allowed(job: TrainingJob) -> bool:
    return job.restart_count < job.request.get("RetryStrategy", {}).get("MaximumRetryAttempts", 0)


def _begin_restart(job: TrainingJob, reason: str) -> float:
    attempt = job.restart_count + 1
    allowed = job.request["RetryStrategy"]["MaximumRetryAttempts"]
    message = f"Restarting the training job (retry {attempt} of {allowed}): {reason}."
    t.transition(job, t.RESTARTING, message=message[:1024], restart_count=attempt)
    return AT_ONCE


def _infrastructure_fault(job: TrainingJob, states: States, reason: str) -> float | None:
    """A fault of the platform's, not the algorithm's: the job starts again if its RetryStrategy
    allows (SageMaker retries a job that failed with an InternalServerError), else fails with one."""
    if _restart_allowed(job):
        return _begin_restart(job, reason)
    _decide(job, outcome=Outcome.FAILED, failure_reason=_infrastructure_failure(job, reason))
    return _after_drain(job, states, t.UPLOADING)


def _infrastructure_failure(job: TrainingJob, reason: str) -> str:
    count = job.restart_count
    retries = f" after {count} {'retry' if count == 1 else 'retries'}" if count else ""
    return f"{INTERNAL_SERVER_ERROR}{reason}{retries}."[:1024]


def on_node_lost(job: TrainingJob, node: str) -> None:
    """The job's node stopped heartbeating (called by the sweeper). What ran there is out of
    reach, so its placements are freed at once; the job restarts if RetryStrategy allows,
    otherwise it fails. A job not yet running, or being stopped, simply carries on elsewhere."""
    scheduler.release(job)
    if t.state_of(job) not in (t.DOWNLOADING, t.TRAINING, t.UPLOADING):
        return
    reason = f"the node {node} that ran it stopped sending heartbeats"
    if _restart_allowed(job):
        _begin_restart(job, reason)
    else:
        failure = _infrastructure_failure(job, reason)
        t.transition(job, t.FAILED, failure_reason=failure, training_end_time=timezone.now())


def _restart(job: TrainingJob, token: str) -> float | None:
    """Remove what the lost attempt left on this engine and start the job again from Starting
    (checkpoints are restored on the way, as for any start)."""
    try:
        training_sidecars.finish(job, local_hosts(job))  # keep what the lost attempt saved
    except StorageError as exc:
        if exc.transient:
            raise  # retried with backoff, within the Restarting deadline
        log.warning("training job %s: checkpoint sync before restart failed: %s", job.training_job_name, exc)
    cleanup.remove_resources(get_runtime(), kind.identity(job), keep_network=True)  # the next attempt's
    scheduler.release(job)
    t.transition(
        job, t.STARTING, outcome="", stop_signalled_at=None, stop_killed_at=None, artifacts_uploaded_at=None
    )
    return AT_ONCE


def _first_failure(job: TrainingJob, states: States) -> str | None:
    failed = [(state.finished_at or "", host, state) for host, state in states.items() if _failed(state)]
    if not failed:
        return None
    _, host, state = min(failed)
    return spans.reported_failure(job, host) or containers.failure_reason(job, host, state)


def _failed(state: ContainerState | None) -> bool:
    return state is not None and state.exited and state.exit_code != 0


def _stop(job: TrainingJob, token: str) -> float | None:
    states = _observe(job)
    collect_logs(job, _here(job, states))
    if not _drained(job, states):
        return _poll()
    final = {Outcome.FAILED: t.FAILED, Outcome.MAX_RUNTIME_EXCEEDED: t.MAX_RUNTIME_EXCEEDED}.get(
        job.outcome, t.STOPPED
    )
    return _finish(job, token, final)


def _upload(job: TrainingJob, token: str) -> float | None:
    return _finish(job, token, t.COMPLETED if job.outcome == Outcome.COMPLETED else t.FAILED)


def _after_drain(job: TrainingJob, states: States, target: tuple[str, str]) -> float:
    if _drained(job, states):
        t.transition(job, target)
        return AT_ONCE
    return _poll()


def _drained(job: TrainingJob, states: States) -> bool:
    """SIGTERM every running container once, SIGKILL after the grace period (jobs/stopping.py);
    True when none runs. The other nodes of a job spanning nodes signal theirs once they see
    `stop_signalled_at`."""
    return stopping.drain(
        get_runtime(),
        _here(job, states).values(),
        any_running=any(state is not None and state.running for state in states.values()),
        signalled_at=job.stop_signalled_at,
        grace_seconds=stop_grace_seconds(job),
        record_signalled=lambda now: _decide(job, stop_signalled_at=now),
        record_killed=lambda now: job.stop_killed_at or _decide(job, stop_killed_at=now),
    )


def stop_grace_over(job: TrainingJob, now) -> bool:
    return stopping.grace_over(job.stop_signalled_at, stop_grace_seconds(job), now)


def stop_grace_seconds(job: TrainingJob) -> int:
    """SIGTERM → SIGKILL: the user's stop (and MaxRuntimeInSeconds) gets SageMaker's grace; the
    other instances of a job one of whose instances failed get the short failure grace."""
    if job.outcome == Outcome.FAILED:
        return min(settings.SAGEPORT_FAILURE_STOP_GRACE_SECONDS, settings.SAGEPORT_STOP_GRACE_SECONDS)
    return settings.SAGEPORT_STOP_GRACE_SECONDS


def _here(job: TrainingJob, states: States) -> dict[str, ContainerState]:
    """The containers of this node's engine among `states` (not those other nodes reported)."""
    elsewhere = spans.remote_states(job)
    return {host: state for host, state in states.items() if state is not None and host not in elsewhere}


def _finish(job: TrainingJob, token: str, final: tuple[str, str]) -> float | None:
    """Upload the artifacts (once), write the terminal status, then remove what the job used."""
    fields = {"training_end_time": timezone.now()}
    if job.artifacts_uploaded_at is None and not spans.parts_uploaded(job):
        failure = spans.member_failure(job)
        if not failure:
            return _poll()  # the other nodes of a job spanning nodes are uploading their instances'
        final, fields["failure_reason"] = t.FAILED, failure
    elif job.artifacts_uploaded_at is None:
        collect_logs(job, _here(job, _observe(job)))
        try:
            with leases.kept_alive(TrainingJob, job.pk, token):
                training_sidecars.finish(job, local_hosts(job))  # helpers stopped, checkpoints synced
                spans.gather_parts(job)
                artifacts.upload(job, containers.hosts(job))
                spans.delete_parts(job)
            TrainingJob.objects.filter(pk=job.pk).update(artifacts_uploaded_at=timezone.now())
        except StorageError as exc:
            if exc.transient:
                raise  # retried with backoff, within the Uploading deadline
            final = t.FAILED
            fields["failure_reason"] = f"ClientError: could not upload the training artifacts: {exc}"[:1024]
    if not t.transition(job, final, **fields):
        return AT_ONCE
    _remove_resources(job)
    return None


def _remove_resources(job: TrainingJob) -> None:
    # The GPUs first: the job's containers have exited, so waiting work (an elastic job growing,
    # a queued job) need not wait for their removal (capacity/freed.py tells it at once).
    scheduler.release(job)
    cleanup.remove_resources(get_runtime(), kind.identity(job))


def _observe(job: TrainingJob) -> States:
    """This node's containers as its engine shows them; those of other nodes as reported."""
    remote = spans.remote_states(job)
    local = observe(job, [host for host in containers.hosts(job) if host not in remote])
    return {host: local[host] if host in local else remote[host] for host in containers.hosts(job)}


def observe(job: TrainingJob, hosts: list[str]) -> States:
    found = get_runtime().find(containers.job_labels(job))
    by_host = {state.labels.get(labels.HOST): state for state in found}
    return {host: by_host.get(host) for host in hosts}


def collect_logs(job: TrainingJob, states: States) -> None:
    """Copy the new output of these containers of this node's (other nodes collect their own)."""
    log_streams.collect(get_runtime(), kind.identity(job), states, partial(metrics.TrainingMetrics, job))


def publish_metrics(job: TrainingJob, states: States) -> None:
    """This minute's instance metrics of these containers of this node's, in
    /aws/sagemaker/TrainingJobs under Host=<job>/algo-N (other nodes publish their own)."""
    volume_size_gb = job.request["ResourceConfig"].get("VolumeSizeInGB")
    instance_metrics.publish(get_runtime(), kind.identity(job), states, volume_size_gb)


def _decide(job: TrainingJob, **fields) -> None:
    """Record a decision that is not a status change, only if the job is still where we saw it."""
    TrainingJob.objects.filter(
        pk=job.pk, training_job_status=job.training_job_status, secondary_status=job.secondary_status
    ).update(**fields)
    for name, value in fields.items():
        setattr(job, name, value)


STEPS = {
    t.STARTING: _start,
    t.PENDING: _start,
    t.RESTARTING: _restart,
    t.DOWNLOADING: _download,
    t.TRAINING: _train,
    t.UPLOADING: _upload,
    t.STOPPING_STATE: _stop,
}
