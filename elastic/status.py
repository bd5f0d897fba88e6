"""The only writer of a HyperPodPyTorchJob's phase and of the Kubernetes `status` it shows.

`move(job, phase, condition, **fields)` changes the phase by compare-and-set (False when another
writer moved it first) and rewrites `status` from the row in the same update, so the API never
shows a status that disagrees with the phase. Conditions keep one entry per type; the phase's
own condition becomes True and the others of the phase family False, each with the time it last
changed (`hyp list` shows the newest True one)."""
import logging

from django.db.models import F
from django.utils import timezone

from elastic import replicas, restarts, sizing
from elastic.models import HyperPodJob, JobPhase
from elastic.spec import JobSpec

log = logging.getLogger(__name__)

CREATED, RUNNING, RESTARTING, SUCCEEDED, FAILED = "Created", "Running", "Restarting", "Succeeded", "Failed"
# Not a phase: False (reason CheckpointWriteFailed) once a replica's checkpointing library reported
# a failed write, so that `hyp list` (the newest True condition) still shows the phase.
CHECKPOINTS_SAVED = "CheckpointsSaved"
CHECKPOINT_WRITE_FAILED = "CheckpointWriteFailed"
SUSPENDED = "Suspended"
_PHASE_CONDITIONS = (RUNNING, RESTARTING, SUSPENDED, SUCCEEDED, FAILED)


def move(
    job: HyperPodJob, spec: JobSpec, phase: str, condition: tuple[str, str, str] | None, **fields
) -> bool:
    """Phase `job.phase` → `phase`, with `condition` (type, reason, message) made the current one."""
    source, now = job.phase, timezone.now()
    for name, value in fields.items():
        setattr(job, name, value)
    job.phase = phase
    if phase != source:
        job.phase_since = now
    conditions = _with_condition(job.status.get("conditions", []), condition, now) if condition else None
    status = compose(job, spec, conditions if conditions is not None else job.status.get("conditions", []))
    updated = HyperPodJob.objects.filter(pk=job.pk, phase=source).update(
        phase=phase, phase_since=job.phase_since, status=status, resource_version=F("resource_version") + 1,
        **fields,
    )
    if updated:
        job.status = status
        if phase != source:
            log.info("hyperpod job %s: %s -> %s", job, source, phase)
    else:
        job.refresh_from_db()
    return bool(updated)


def refresh(job: HyperPodJob, spec: JobSpec, **fields) -> None:
    """Write columns and the status they imply, without a phase change."""
    move(job, spec, job.phase, None, **fields)


def say(job: HyperPodJob, spec: JobSpec, message: str) -> None:
    """Record what the job waits for as the message of its newest True condition (which keeps
    its type and reason: Created while queued, Restarting after an eviction or a fault)."""
    conditions = [dict(c) for c in job.status.get("conditions", [])]
    current = next((c for c in reversed(conditions) if c["status"] == "True"), None)
    if current is None or current.get("message") == message[:1024]:
        return
    current.update(message=message[:1024], lastProbeTime=_iso(timezone.now()))
    job.status = {**job.status, "conditions": conditions}
    refresh(job, spec)


def report_checkpoint_failure(job: HyperPodJob, spec: JobSpec, message: str) -> bool:
    """Make `CheckpointsSaved` False with the failure as its message; False when it already says so."""
    conditions = [dict(c) for c in job.status.get("conditions", [])]
    current = next((c for c in conditions if c["type"] == CHECKPOINTS_SAVED), None)
    if current is not None and current.get("message") == message[:1024]:
        return False
    now = timezone.now()
    if current is None:
        failed = _condition(CHECKPOINTS_SAVED, "False", CHECKPOINT_WRITE_FAILED, message[:1024], now)
        conditions.append(failed)
    else:
        current.update(message=message[:1024], lastProbeTime=_iso(now))
    job.status = {**job.status, "conditions": conditions}
    refresh(job, spec)
    return True


def resume(job: HyperPodJob, spec: JobSpec) -> bool:
    """Suspended → Pending, its `Suspended` condition turned False with reason `JobResumed` (the
    Kubernetes Job's and Kubeflow's suspend/resume conditions)."""
    now = timezone.now()
    conditions = [dict(c) for c in job.status.get("conditions", [])]
    for entry in conditions:
        if entry["type"] == SUSPENDED and entry["status"] == "True":
            entry.update(status="False", reason="JobResumed", message="The job was resumed.",
                         lastTransitionTime=_iso(now), lastProbeTime=_iso(now))
    job.status = {**job.status, "conditions": conditions}
    return move(job, spec, JobPhase.PENDING, None)


def initial_status(now) -> dict:
    return {"conditions": [_condition(CREATED, "True", "Created", "The job was accepted.", now)]}


def compose(job: HyperPodJob, spec: JobSpec, conditions: list[dict]) -> dict:
    status = {
        "conditions": conditions,
        "restartCount": job.restart_count,
        "elasticScalingStatus": {
            "targetReplicas": sizing.group_counts(spec, job.target_replicas),
            "lastScalingTime": _iso(job.last_scaling_at),
            "lastUpdated": _iso(timezone.now()),
        },
        "jobPods": _pods(job, spec),
        "restartStatus": restarts.restart_status(spec, restarts.Window.load(job.restarts)),
    }
    if job.started_at:
        status["startTime"] = _iso(job.started_at)
    if job.completed_at:
        status["completionTime"] = _iso(job.completed_at)
    if job.world_size:
        first = sizing.slots(spec, job.world_size)[0]
        status["masterAddr"] = replicas.pod_name(job, first[0].name, first[1])
        status["masterPort"] = str(replicas.MASTER_PORT)
    faulty = job.status.get("latestFaultyPodInstanceList")
    if faulty:
        status["latestFaultyPodInstanceList"] = faulty
    return {key: value for key, value in status.items() if value is not None}


def _pods(job: HyperPodJob, spec: JobSpec) -> list[dict]:
    """The job's replicas as the object references HyperPod lists (in rank order): while the job
    is Running, exactly the pods of its world."""
    order = {group.name: position for position, group in enumerate(spec.groups)}
    rows = sorted(job.replicas.all(), key=lambda r: (order.get(r.group, len(order)), r.index))
    return [
        {"apiVersion": "v1", "kind": "Pod", "namespace": job.namespace,
         "name": replicas.pod_name(job, r.group, r.index)}
        for r in rows
    ]


def _with_condition(conditions: list[dict], condition: tuple[str, str, str], now) -> list[dict]:
    kind, reason, message = condition
    result = [dict(c) for c in conditions]
    for entry in result:
        if entry["type"] in _PHASE_CONDITIONS and entry["type"] != kind and entry["status"] == "True":
            entry.update(status="False", lastTransitionTime=_iso(now))
    existing = next((c for c in result if c["type"] == kind), None)
    if existing is None:
        result.append(_condition(kind, "True", reason, message, now))
    else:
        if existing["status"] != "True":
            existing["lastTransitionTime"] = _iso(now)
        existing.update(status="True", reason=reason, message=message[:1024], lastProbeTime=_iso(now))
        result.remove(existing)
        result.append(existing)  # the newest True condition last, as `hyp list` reads it
    return result


def _condition(kind: str, state: str, reason: str, message: str, now) -> dict:
    return {"type": kind, "status": state, "reason": reason, "message": message,
            "lastTransitionTime": _iso(now), "lastProbeTime": _iso(now)}


def _iso(moment) -> str | None:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None
