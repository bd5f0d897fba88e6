"""The console's processing-job pages: the list and a job's page render for its owner with what
the job holds, and another account sees neither."""
from datetime import timedelta

from django.utils import timezone

from capacity import single_node
from processing import placement
from processing import services as processing_services
from processing.models import ProcessingJob
from tests.unit.console.conftest import ACCOUNT_A, ctx, make_job, operator
from tests.unit.training.test_scheduler import make_node
from training import scheduler


def processing_request(name: str) -> dict:
    return {
        "ProcessingJobName": name,
        "AppSpecification": {"ImageUri": "prep:latest", "ContainerArguments": ["--split", "0.2"]},
        "RoleArn": f"arn:aws:iam::{ACCOUNT_A}:role/r",
        "ProcessingResources": {
            "ClusterConfig": {"InstanceCount": 2, "InstanceType": "ml.m5.large", "VolumeSizeInGB": 1}
        },
        "ProcessingInputs": [{
            "InputName": "raw",
            "S3Input": {
                "S3Uri": "s3://bucket/raw", "LocalPath": "/opt/ml/processing/raw", "S3DataType": "S3Prefix"
            },
        }],
        "ProcessingOutputConfig": {"Outputs": [{
            "OutputName": "clean",
            "S3Output": {"S3Uri": "s3://bucket/clean", "LocalPath": "/opt/ml/processing/clean",
                         "S3UploadMode": "Continuous"},
        }]},
        "Tags": [{"Key": "team", "Value": "data"}],
    }


def test_the_list_and_the_page_of_a_processing_job_render_for_its_owner(account_a, account_b):
    job = processing_services.create_processing_job(ctx(ACCOUNT_A), processing_request("prep"))
    ProcessingJob.objects.filter(pk=job.pk).update(
        processing_job_status="Failed", phase="Ended", exit_message="bad row 17",
        failure_reason="AlgorithmError: See job logs for more information",
    )

    listed = account_a.get("/console/processing-jobs/").content.decode()
    page = account_a.get(f"/console/processing-jobs/{job.processing_job_name}/").content.decode()

    assert "prep" in listed and "ml.m5.large × 2" in listed
    for shown in ("prep:latest", "--split 0.2", "s3://bucket/raw", "/opt/ml/processing/clean", "Continuous",
                  "team=data", "bad row 17", "AlgorithmError: See job logs for more information"):
        assert shown in page, shown
    assert account_b.get(f"/console/processing-jobs/{job.processing_job_name}/").status_code == 404
    assert "prep" not in account_b.get("/console/processing-jobs/").content.decode()


def test_the_capacity_page_names_the_processing_and_training_instances_and_their_gpus(db):
    make_node("node-a", gpus=2)
    processing = processing_services.create_processing_job(ctx(ACCOUNT_A), processing_request("prep-gpu"))
    training = make_job(ACCOUNT_A, "train-gpu")
    training.request["ResourceConfig"]["InstanceType"] = "ml.p3.2xlarge"
    training.save()
    processing.request["ProcessingResources"]["ClusterConfig"] = {
        "InstanceType": "ml.p3.2xlarge", "InstanceCount": 1
    }
    processing.save()
    assert placement.place(processing) == single_node.Placed("node-a")
    assert scheduler.place(training) == scheduler.Placed("node-a")

    page = operator().get("/console/capacity/").content.decode()

    scope = f"/console/accounts/{ACCOUNT_A}/us-east-1"  # an operator's links name the account
    assert f'href="{scope}/processing-jobs/prep-gpu/">prep-gpu (algo-1)' in page
    assert f'href="{scope}/training-jobs/train-gpu/">train-gpu (algo-1)' in page
    assert f'<a href="{scope}/processing-jobs/prep-gpu/">prep-gpu</a> algo-1' in page


def test_a_processing_jobs_page_says_its_containers_were_killed(account_a, settings):
    settings.SAGEPORT_STOP_GRACE_SECONDS = 120
    job = processing_services.create_processing_job(ctx(ACCOUNT_A), processing_request("killed"))
    signalled = timezone.now() - timedelta(seconds=200)
    ProcessingJob.objects.filter(pk=job.pk).update(
        processing_job_status="Stopped", phase="Ended", stop_signalled_at=signalled,
        stop_killed_at=signalled + timedelta(seconds=120),
    )
    page = account_a.get(f"/console/processing-jobs/{job.processing_job_name}/").content.decode()
    assert "did not exit within 120 s of SIGTERM" in page
