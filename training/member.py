"""A member node's share of a job spanning nodes (training/spans.py says who does what).

`sync(job_id)` runs on a node that holds some of the job's instances but not algo-1, whenever
the job's node took a step (training.tasks sends it to this node's queue). It looks at the job's
status and does, for this node's instances only, what the job's node does for its own, then
writes what it saw into their `Placement` rows:

- Downloading: workspace, image, File channels staged, Pipe feeders and checkpoints → `ready_at`;
- Training: helpers kept running, missing containers started on the job's overlay network,
  their output collected → `report` (the container as seen, with its FailureReason if it failed);
- Stopping (the job's node set `stop_signalled_at`): SIGTERM once, SIGKILL after the grace;
- once the job is Uploading or Stopping and this node's containers ended: helpers stopped,
  checkpoints synced, model and output uploaded → `parts_uploaded_at`;
- once the job ended: this node's containers and workspace removed; after a retry, before the
  new attempt's containers: the lost attempt's containers (and helpers) here (training/attempts.py).

What it cannot do for good (an image missing, a channel refused, a container the engine will
not start) becomes the placement's `failure_reason`, which fails the job on its next step.
Transient errors are left for the next sync. One sync at a time per job on a node (an flock)."""
import fcntl
import logging
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from capacity import nodes
from reconcile.loop import is_transient
from runtime.base import RuntimeError_
from runtime.docker import get_runtime
from storage.archives import ArchiveError
from storage.s3 import StorageError
from training import attempts, containers, reconciler, spans, workspace
from training import sidecars as training_sidecars
from training import transitions as t
from training.data.channels import ChannelError
from training.models import TrainingJob

log = logging.getLogger(__name__)

_FAILURES = (RuntimeError_, StorageError, ChannelError, ArchiveError)
# No container of the job's current attempt exists yet in these states.
_BEFORE_CONTAINERS = (t.STARTING, t.PENDING, t.RESTARTING, t.DOWNLOADING)


def sync(job_id: int) -> None:
    job = TrainingJob.objects.filter(pk=job_id).first()
    if job is None:
        return
    with _exclusive(job_id) as alone:
        if not alone:
            return  # another sync of this job runs on this node; the next message comes soon
        if job.is_terminal:
            _remove_local(job)
            return
        try:
            _step(job)
        except _FAILURES as exc:
            if is_transient(exc):
                name, node = job.training_job_name, nodes.local_name()
                log.warning("training job %s: node %s retries its share later: %s", name, node, exc)
                return
            spans.report_failure(job, spans.placed_here(job), _reason(exc))


def _reason(exc: Exception) -> str:
    prefix = "InternalServerError" if isinstance(exc, RuntimeError_) else "ClientError"
    return f"{prefix}: {exc} (on node {nodes.local_name()})"


def _step(job: TrainingJob) -> None:
    state = t.state_of(job)
    if state in _BEFORE_CONTAINERS:
        attempts.retire_earlier(get_runtime(), job)
    hosts = spans.placed_here(job)
    if not hosts:
        return
    if state == t.DOWNLOADING:
        _prepare(job, hosts)
    elif state == t.TRAINING:
        _train(job, hosts)
    elif state in (t.STOPPING_STATE, t.UPLOADING):
        _hand_over(job, hosts)


def _prepare(job: TrainingJob, hosts: list[str]) -> None:
    if spans.hosts_ready(job, hosts):
        return
    workspace.prepare(job, hosts)
    reconciler.ensure_image(job, job.request["AlgorithmSpecification"]["TrainingImage"])
    reconciler.stage_inputs(job, hosts)
    spans.mark_ready(job, hosts)


def _train(job: TrainingJob, hosts: list[str]) -> None:
    states = reconciler.observe(job, hosts)
    reconciler.collect_logs(job, states)
    reconciler.publish_metrics(job, states)
    if job.outcome or job.stop_signalled_at:
        _drain(job, states)
    else:
        failure = training_sidecars.ensure_running(job)
        vanished = reconciler.vanished(job, states, hosts)
        missing = any(reconciler.not_running_yet(state) for state in states.values())
        # The job's overlay network is made (and its subnet recorded) by the job's node first.
        if failure is None and not vanished and missing and spans.network_subnet(job):
            failure = reconciler.start_missing(job, states, hosts)
        if failure:
            spans.report_failure(job, hosts, failure)
        for host in vanished:
            spans.report(job, host, None, vanished=True)
            states.pop(host)
    _report(job, states)


def _report(job: TrainingJob, states: reconciler.States) -> None:
    for host, state in states.items():
        failed = state is not None and state.exited and state.exit_code != 0
        reason = containers.failure_reason(job, host, state) if failed else ""
        spans.report(job, host, state, failure_reason=reason)


def _drain(job: TrainingJob, states: reconciler.States) -> bool:
    """Stop this node's containers as the job's node stops its own: SIGTERM once the job's
    `stop_signalled_at` is set, SIGKILL after the grace period. True when none runs."""
    runtime = get_runtime()
    running = {host: state for host, state in states.items() if state is not None and state.running}
    if not running or job.stop_signalled_at is None:
        return not running
    kill = reconciler.stop_grace_over(job, timezone.now())
    for host, state in running.items():
        if kill:
            runtime.signal(state.name, "SIGKILL")
        elif not spans.signalled(job, host):
            runtime.signal(state.name, "SIGTERM")
            spans.mark_signalled(job, host)
    return False


def _hand_over(job: TrainingJob, hosts: list[str]) -> None:
    """Once this node's containers ended: stop the helpers, sync the checkpoints, upload the
    instances' model and output for the job's node to merge."""
    states = reconciler.observe(job, hosts)
    reconciler.collect_logs(job, states)
    drained = _drain(job, states)
    _report(job, states)
    if not drained or spans.parts_uploaded_here(job, hosts):
        return
    training_sidecars.finish(job, hosts)
    spans.upload_parts(job, hosts)


def _remove_local(job: TrainingJob) -> None:
    attempts.remove_containers_here(get_runtime(), job)
    training_sidecars.stop(job)
    workspace.remove(job)
    _lock_path(job.pk).unlink(missing_ok=True)


def _lock_path(job_id: int) -> Path:
    return Path(settings.DATA_DIR) / "member-locks" / f"training-{job_id}.lock"


@contextmanager
def _exclusive(job_id: int):
    path = _lock_path(job_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True

