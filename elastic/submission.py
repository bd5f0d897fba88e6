"""What the Kubernetes-style API changes: a job submitted, suspended or resumed, a deletion
requested.

A submission stores the manifest (metadata and the spec with the CRD's defaults) as a Pending
row and has the operator look at it. A deletion follows Kubernetes: the row stays, with its
deletionTimestamp, until the operator has stopped the replicas and removed it — except a job the
operator has never placed (Pending, no node, no replica, not held by a worker), which holds
nothing and goes at once."""

import secrets
import string
import uuid

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from elastic import spec, status, tasks
from elastic.models import HyperPodJob, JobPhase
from reconcile import leases

_SUFFIX_ALPHABET = string.ascii_lowercase + string.digits


class NameTaken(Exception):
    pass


def submit(account_id: str, namespace: str, manifest: dict, dry_run: bool = False) -> HyperPodJob:
    """Store a valid manifest (spec.validate found nothing) in the account's namespace;
    NameTaken if a job of that name is there. A dry run stores nothing and returns the job as it
    would be."""
    metadata = manifest["metadata"]
    name = metadata.get("name") or _generated(metadata["generateName"])
    stored_metadata = {"name": name, "namespace": namespace}
    for key in ("labels", "annotations"):
        if metadata.get(key):
            stored_metadata[key] = metadata[key]
    now = timezone.now()
    job = HyperPodJob(
        account_id=account_id,
        region=settings.SAGEPORT_REGION,
        namespace=namespace,
        name=name,
        uid=str(uuid.uuid4()),
        manifest={"metadata": stored_metadata, "spec": spec.defaulted_spec(manifest)},
        created_at=now,
        phase=JobPhase.PENDING,
        phase_since=now,
        next_check_at=now,
        # Created from the start, so that a queued job shows what it waits for (the operator
        # writes it as this condition's message) and `hyp list` its age.
        status=status.initial_status(now),
    )
    if dry_run:
        if HyperPodJob.objects.filter(account_id=account_id, namespace=namespace, name=name).exists():
            raise NameTaken(name)
        return job
    try:
        with transaction.atomic():
            job.save(force_insert=True)
    except IntegrityError:
        raise NameTaken(name) from None
    tasks.nudge(job.pk)
    return job


def set_suspend(job: HyperPodJob, suspend: bool) -> HyperPodJob:
    """Store `spec.runPolicy.suspend` (the one field a patch may change) and have the operator
    look now; returns the job as stored. The operator reads the spec afresh at every look."""
    manifest = with_suspend(job.manifest, suspend)
    if manifest != job.manifest:
        HyperPodJob.objects.filter(pk=job.pk).update(
            manifest=manifest, resource_version=F("resource_version") + 1, next_check_at=timezone.now()
        )
        tasks.nudge(job.pk)
    return HyperPodJob.objects.filter(pk=job.pk).first() or job


def with_suspend(manifest: dict, suspend: bool) -> dict:
    """The stored manifest with `spec.runPolicy.suspend` set (a copy)."""
    run_policy = {**manifest["spec"]["runPolicy"], "suspend": suspend}
    return {**manifest, "spec": {**manifest["spec"], "runPolicy": run_policy}}


def request_deletion(job: HyperPodJob) -> HyperPodJob:
    """Delete the job the Kubernetes way; returns it as last seen (deletionTimestamp set).
    Asking twice changes nothing more."""
    now = timezone.now()
    if _delete_if_never_placed(job):
        job.deletion_requested_at = job.deletion_requested_at or now
        return job
    if job.deletion_requested_at is None:
        HyperPodJob.objects.filter(pk=job.pk, deletion_requested_at__isnull=True).update(
            deletion_requested_at=now, resource_version=F("resource_version") + 1, next_check_at=now
        )
        tasks.nudge(job.pk)
        job.deletion_requested_at = now
        job.resource_version += 1
        # The row as it is now: another request may have asked first (its time is the one kept);
        # the operator may have removed it already (then the object answered is the last seen).
        current = HyperPodJob.objects.filter(pk=job.pk).first()
        return current or job
    return job


def _delete_if_never_placed(job: HyperPodJob) -> bool:
    """Under the job's lease, so that no worker places it meanwhile; a job a worker holds is left
    to the operator."""
    token = leases.claim(HyperPodJob, job.pk)
    if token is None:
        return False
    never_placed = HyperPodJob.objects.filter(
        pk=job.pk, lease_token=token, phase=JobPhase.PENDING, node__isnull=True, world_size=0
    ).exclude(replicas__isnull=False)
    if never_placed.exists():
        HyperPodJob.objects.filter(pk=job.pk, lease_token=token).delete()
        return True
    leases.release(HyperPodJob, job.pk, token, next_check_in=0)
    return False


def _generated(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))
