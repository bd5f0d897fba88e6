"""S3UploadMode Continuous (botocore: "Whether to upload the results of the processing job
continuously or after the job completes"): at every look, each file new or changed since its last
upload goes up, under the output's S3Uri merged over the instances, and nothing else; links and
FIFOs are never uploaded."""
import os

import pytest
from django.utils import timezone

from accounts.s3_tenancy import S3Location
from processing import outputs, workspace
from processing.models import ProcessingJob


@pytest.fixture
def uploaded(monkeypatch) -> list[tuple[str, str]]:
    """(key, body) of every upload, in order; the bucket's ownership taken as checked."""
    sent = []

    def upload_contained(root, items):
        for relative, _bucket, key in items:
            sent.append((key, (root / relative).read_text()))
        return [item[0] for item in items]

    monkeypatch.setattr(outputs.s3, "upload_contained", upload_contained)
    monkeypatch.setattr(outputs.job_outputs, "location", lambda account, uri: S3Location("b", "live"))
    return sent


def make_job(settings, tmp_path) -> ProcessingJob:
    settings.DATA_DIR = str(tmp_path)
    now = timezone.now()
    return ProcessingJob.objects.create(
        account_id="123456789012", region="us-east-1", processing_job_name="cont",
        processing_job_arn="arn:aws:sagemaker:us-east-1:123456789012:processing-job/cont",
        request={
            "ProcessingResources": {"ClusterConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 2}},
            "ProcessingOutputConfig": {"Outputs": [{
                "OutputName": "live",
                "S3Output": {"S3Uri": "s3://b/live", "LocalPath": "/opt/ml/processing/live",
                             "S3UploadMode": "Continuous"},
            }]},
        },
        creation_time=now, last_modified_time=now,
    )


def test_only_new_or_changed_files_go_up_at_each_look(db, settings, tmp_path, uploaded):
    job = make_job(settings, tmp_path)
    hosts = ["algo-1", "algo-2"]
    workspace.prepare(job, hosts)
    first = workspace.host_workspace(job, "algo-1").output_data_dir(0)
    second = workspace.host_workspace(job, "algo-2").output_data_dir(0)
    (first / "a.txt").write_text("a1")
    (second / "b.txt").write_text("b1")

    assert outputs.upload_continuous(job, hosts) == 2
    assert outputs.upload_continuous(job, hosts) == 0  # nothing changed since
    (first / "a.txt").write_text("a2, longer")
    (first / "sub").mkdir()
    (first / "sub" / "c.txt").write_text("c1")
    os.symlink("/etc/passwd", first / "passwd")
    os.mkfifo(first / "pipe")
    assert outputs.upload_continuous(job, hosts) == 2

    assert uploaded == [
        ("live/a.txt", "a1"), ("live/b.txt", "b1"), ("live/a.txt", "a2, longer"), ("live/sub/c.txt", "c1")
    ]
    job.refresh_from_db()
    assert sorted(job.continuous_uploads) == ["0/algo-1/a.txt", "0/algo-1/sub/c.txt", "0/algo-2/b.txt"]
