"""Uploading what a processing job's containers leave in their output directories: every
instance's files of one output merged under its S3Uri, as they are (jobs/outputs.py), never
following a link, never reading a FIFO or a device (storage/safe_files).

S3UploadMode EndOfJob: once the containers have ended. Continuous: while the job runs, at every
look of the reconciler, each file new or changed since its last upload (by size and modification
time), and once more at the end, so the last version of every file is in S3."""
from accounts import s3_tenancy
from jobs import outputs as job_outputs
from processing import containers, workspace
from processing.models import ProcessingJob
from storage import s3, safe_files

CONTINUOUS = "Continuous"


def upload_continuous(job: ProcessingJob, hosts: list[str]) -> int:
    """Upload the Continuous outputs' new and changed files; returns how many went up. What was
    uploaded is recorded on the job, so a later look (any worker) sends only what changed."""
    uploaded = dict(job.continuous_uploads)
    count = 0
    for index, item in workspace.outputs(job):
        if item["S3Output"]["S3UploadMode"] == CONTINUOUS:
            count += _upload_changed(job, index, item["S3Output"]["S3Uri"], hosts, uploaded)
    if count:
        ProcessingJob.objects.filter(pk=job.pk).update(continuous_uploads=uploaded)
        job.continuous_uploads = uploaded
    return count


def upload_at_end(job: ProcessingJob) -> None:
    """Every output of every instance: EndOfJob ones whole, Continuous ones what changed."""
    hosts = containers.hosts(job)
    for index, item in workspace.outputs(job):
        destination = item["S3Output"]
        if destination["S3UploadMode"] != CONTINUOUS:
            directories = [workspace.host_workspace(job, host).output_data_dir(index) for host in hosts]
            job_outputs.upload_files(directories, job_outputs.location(job.account_id, destination["S3Uri"]))
    upload_continuous(job, hosts)


def _upload_changed(job: ProcessingJob, index: int, uri: str, hosts: list[str], uploaded: dict) -> int:
    where = job_outputs.location(job.account_id, uri)
    count = 0
    for host in hosts:
        root = workspace.host_workspace(job, host).output_data_dir(index)
        changed = {}
        for entry in safe_files.walk(root):
            if entry.kind != safe_files.FILE:
                continue
            mark = f"{index}/{host}/{entry.relative}"
            version = [entry.status.st_size, entry.status.st_mtime_ns]
            if uploaded.get(mark) != version:
                changed[entry.relative] = (mark, version)
        items = [(relative, where.bucket, _key(where, relative)) for relative in changed]
        for relative in s3.upload_contained(root, items):
            mark, version = changed[relative]
            uploaded[mark] = version
            count += 1
    return count


def _key(where: s3_tenancy.S3Location, relative: str) -> str:
    prefix = where.key if not where.key or where.key.endswith("/") else where.key + "/"
    return prefix + relative
