"""What a processing container finds: its config files (AWS: "How Amazon SageMaker Processing
Configures Your Processing Container": processingjobconfig.json is the job's request,
resourceconfig.json names the current host and every host) and what its exit message becomes
("Save and Access Metadata Information About Your Processing Job": the first 1 KB of
/opt/ml/output/message, which must be UTF-8)."""
import os

import pytest

from processing import workspace
from processing.models import ProcessingJob


def test_resourceconfig_names_this_host_and_every_host():
    assert workspace.resource_config("algo-2", ["algo-1", "algo-2"]) == {
        "current_host": "algo-2", "hosts": ["algo-1", "algo-2"]
    }


def test_processingjobconfig_is_the_request_with_the_jobs_arn():
    job = ProcessingJob(
        processing_job_arn="arn:aws:sagemaker:us-east-1:123456789012:processing-job/j",
        request={"ProcessingJobName": "j", "AppSpecification": {"ImageUri": "img"}},
    )
    assert workspace.processing_job_config(job) == {
        "ProcessingJobArn": "arn:aws:sagemaker:us-east-1:123456789012:processing-job/j",
        "ProcessingJobName": "j",
        "AppSpecification": {"ImageUri": "img"},
    }


def host_with_message(tmp_path, body: bytes) -> workspace.HostWorkspace:
    host = workspace.HostWorkspace(tmp_path)
    host.output_dir.mkdir()
    (host.output_dir / "message").write_bytes(body)
    return host


def test_the_exit_message_is_the_first_kilobyte(tmp_path):
    assert host_with_message(tmp_path, b"x" * 3000).exit_message() == "x" * 1024


def test_a_character_cut_by_the_limit_is_dropped_not_an_error(tmp_path):
    body = b"x" * 1023 + "é".encode()  # its second byte is past the 1 KB
    assert host_with_message(tmp_path, body).exit_message() == "x" * 1023


def test_a_message_that_is_not_utf8_fails_the_job(tmp_path):
    with pytest.raises(workspace.UndecodableMessage):
        host_with_message(tmp_path, b"\xff\xfe bad").exit_message()


def test_a_link_or_fifo_as_the_message_is_no_message(tmp_path):
    host = workspace.HostWorkspace(tmp_path)
    host.output_dir.mkdir()
    secret = tmp_path / "secret"
    secret.write_text("host secret")
    (host.output_dir / "message").symlink_to(secret)
    assert host.exit_message() == ""
    (host.output_dir / "message").unlink()
    os.mkfifo(host.output_dir / "message")
    assert host.exit_message() == ""
