"""HyperPodJob rows as Kubernetes objects (explicit fields, no reflection)."""

from datetime import UTC, datetime

from elastic.models import HyperPodJob
from elastic.spec import API_VERSION, KIND

LIST_KIND = f"{KIND}List"


def job_object(job: HyperPodJob) -> dict:
    stored = job.manifest.get("metadata", {})
    metadata = {
        "name": job.name,
        "namespace": job.namespace,
        "uid": job.uid,
        "resourceVersion": str(job.resource_version),
        "generation": 1,
        "creationTimestamp": timestamp(job.created_at),
    }
    for key in ("labels", "annotations"):
        if stored.get(key):
            metadata[key] = stored[key]
    if job.deletion_requested_at is not None:
        metadata["deletionTimestamp"] = timestamp(job.deletion_requested_at)
        metadata["deletionGracePeriodSeconds"] = 0
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": job.spec,
        "status": job.status or {},
    }


def job_list(jobs: list[HyperPodJob], continue_token: str = "") -> dict:
    metadata = {"resourceVersion": str(max((job.resource_version for job in jobs), default=0))}
    if continue_token:
        metadata["continue"] = continue_token
    return {
        "apiVersion": API_VERSION,
        "kind": LIST_KIND,
        "metadata": metadata,
        "items": [job_object(job) for job in jobs],
    }


def timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC to the second, as the API server writes metadata times."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
