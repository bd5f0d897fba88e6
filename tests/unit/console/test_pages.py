"""Every page renders for its owner, with what the resource holds (tags, deployment config)."""

import re
from datetime import timedelta

from django.utils import timezone

from batchtransform import services as transform_services
from hosting import async_queue, history
from hosting import services as hosting_services
from hosting.models import DeploymentEventKind, Endpoint, EndpointConfig, EndpointDeployment, SageMakerModel
from tests.unit.console.conftest import (
    ACCOUNT_A,
    ACCOUNT_B,
    ctx,
    in_service_endpoint,
    job_request,
    operator,
    signed_in,
)
from tests.unit.hosting.runtime_api.test_routing import container
from training import services as training_services
from training.models import TrainingJob


def test_every_page_of_an_account_renders(account_a):
    job = training_services.create_training_job(
        ctx(ACCOUNT_A), {**job_request("tagged"), "Tags": [{"Key": "team", "Value": "vision"}]}
    )
    model = hosting_services.create_model(
        ctx(ACCOUNT_A), {"ModelName": "m1", "PrimaryContainer": {"Image": "serve:latest"}}
    )
    config = hosting_services.create_endpoint_config(
        ctx(ACCOUNT_A),
        {
            "EndpointConfigName": "c1",
            "ProductionVariants": [
                {
                    "VariantName": "AllTraffic",
                    "ModelName": "m1",
                    "InstanceType": "ml.m5.large",
                    "InitialInstanceCount": 1,
                }
            ],
        },
    )
    endpoint = in_service_endpoint(ACCOUNT_A).endpoint
    policy = {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 0}
        }
    }
    Endpoint.objects.filter(pk=endpoint.pk).update(last_deployment_config=policy)

    pages = {
        f"/console/training-jobs/{job.training_job_name}/": "team=vision",
        f"/console/endpoints/{endpoint.endpoint_name}/": "BlueGreenUpdatePolicy",
        f"/console/models/{model.model_name}/": "serve:latest",
        f"/console/endpoint-configs/{config.endpoint_config_name}/": "m1",
        "/console/models/": "m1",
        "/console/endpoint-configs/": "c1",
        "/console/endpoints/": endpoint.endpoint_name,
    }
    for url, shown in pages.items():
        response = account_a.get(url)
        assert response.status_code == 200, url
        assert shown in response.content.decode(), url


def test_the_capacity_page_shows_the_pending_queue_with_what_each_job_waits_for(db):
    job = training_services.create_training_job(ctx(ACCOUNT_A), job_request("queued"))
    job.training_job_status, job.secondary_status = "InProgress", "Pending"
    job.save()
    job.transitions.update(status_message="Waiting for 8 GPUs (4 free on test-node-a)")

    page = operator().get("/console/capacity/").content.decode()

    assert "queued" in page and "Waiting for 8 GPUs (4 free on test-node-a)" in page


def test_the_endpoint_page_shows_its_deployment_history_newest_first(account_a):
    endpoint = in_service_endpoint(ACCOUNT_A).endpoint
    history.record(endpoint, DeploymentEventKind.FLEET_CREATED, "config", "CreateEndpoint: AllTraffic 1")
    rolled_back = "The update to endpoint configuration config-2 was rolled back: <exit 3>"
    history.record(endpoint, DeploymentEventKind.ROLLED_BACK, "config-2", rolled_back)

    page = account_a.get(f"/console/endpoints/{endpoint.endpoint_name}/").content.decode()
    live = account_a.get(f"/console/endpoints/{endpoint.endpoint_name}/live").json()["history_html"]

    for shown in (page, live):
        assert shown.index('data-kind="RolledBack"') < shown.index('data-kind="FleetCreated"')
        assert "rolled back: &lt;exit 3&gt;" in shown  # escaped, as every message is


def test_transform_job_pages_render_for_their_account_only(account_a):
    hosting_services.create_model(
        ctx(ACCOUNT_A), {"ModelName": "m1", "PrimaryContainer": {"Image": "serve:latest"}}
    )
    job = transform_services.create_transform_job(
        ctx(ACCOUNT_A),
        {
            "TransformJobName": "batch-1",
            "ModelName": "m1",
            "TransformInput": {
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://b/in/"}}
            },
            "TransformOutput": {"S3OutputPath": "s3://b/out/"},
            "TransformResources": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
        },
    )
    assert "batch-1" in account_a.get("/console/transform-jobs/").content.decode()
    page = account_a.get(f"/console/transform-jobs/{job.transform_job_name}/").content.decode()
    assert "s3://b/out/" in page and "InProgress" in page
    assert signed_in(ACCOUNT_B).get(f"/console/transform-jobs/{job.transform_job_name}/").status_code == 404
    account_a.post(f"/console/transform-jobs/{job.transform_job_name}/stop")
    job.refresh_from_db()
    assert job.transform_job_status == "Stopping"


def test_an_unknown_console_address_is_the_consoles_own_not_found_page(account_a, client):
    page = account_a.get("/console/no-such-page/at/all/")
    assert page.status_code == 404 and "Nothing here is visible to account" in page.content.decode()
    assert "Nothing here is visible" in account_a.get("/console/training-jobs").content.decode()
    assert client.get("/console/no-such-page").status_code == 302  # signed out: the sign-in first


def test_the_endpoint_page_shows_its_async_config_and_backlog(account_a):
    deployment = in_service_endpoint(ACCOUNT_A)
    snapshot = deployment.snapshot
    snapshot["EndpointConfig"]["AsyncInferenceConfig"] = {"OutputConfig": {"S3OutputPath": "s3://b/out"}}
    EndpointDeployment.objects.filter(pk=deployment.pk).update(snapshot=snapshot)
    async_queue.accept(
        deployment.endpoint, snapshot["EndpointConfig"]["AsyncInferenceConfig"],
        {"InferenceId": "r1", "InputLocation": "s3://b/in", "Headers": {}},
    )

    page = account_a.get(f"/console/endpoints/{deployment.endpoint.endpoint_name}/").content.decode()

    assert "<code>s3://b/out</code>" in page
    assert "1 request waiting or running" in page


def test_the_endpoint_page_shows_a_serverless_config_and_its_containers_now(account_a):
    deployment = in_service_endpoint(ACCOUNT_A)
    config = {"MemorySizeInMB": 2048, "MaxConcurrency": 4, "ProvisionedConcurrency": 1}
    desired = {"AllTraffic": {"DesiredWeight": 1.0, "DesiredInstanceCount": 2, "ServerlessConfig": config}}
    EndpointDeployment.objects.filter(pk=deployment.pk).update(desired=desired)

    page = account_a.get(f"/console/endpoints/{deployment.endpoint.endpoint_name}/").content.decode()

    assert "<dd>2048 MB</dd>" in page and "<dd>4</dd>" in page
    assert '<dd data-testid="serverless-containers">0 / 2</dd>' in page


def test_a_stopping_jobs_page_counts_down_to_sigkill_then_says_it_was_killed(account_a, settings):
    settings.SAGEPORT_STOP_GRACE_SECONDS = 120
    job = training_services.create_training_job(ctx(ACCOUNT_A), job_request("stopping"))
    signalled = timezone.now() - timedelta(seconds=9)
    TrainingJob.objects.filter(pk=job.pk).update(training_job_status="Stopping", stop_signalled_at=signalled)

    pages = {
        "page": account_a.get(f"/console/training-jobs/{job.training_job_name}/").content.decode(),
        "live": account_a.get(f"/console/training-jobs/{job.training_job_name}/live").json()["status_html"],
    }
    for which, page in pages.items():
        assert re.search(r'SIGKILL: <strong data-testid="kill-countdown">in 11[01] s', page), which

    TrainingJob.objects.filter(pk=job.pk).update(
        training_job_status="Stopped", stop_killed_at=signalled + timedelta(seconds=120)
    )
    page = account_a.get(f"/console/training-jobs/{job.training_job_name}/").content.decode()
    assert "did not exit within 120 s of SIGTERM" in page and "killed with SIGKILL at" in page


def test_a_models_page_shows_its_container_and_configs_and_deletes_it(account_a, account_b):
    hosting_services.create_model(ctx(ACCOUNT_A), {
        "ModelName": "m2",
        "PrimaryContainer": {
            "Image": "serve:2", "ModelDataUrl": "s3://models/m2/model.tar.gz", "Environment": {"WORKERS": "3"}
        },
    })
    config = hosting_services.create_endpoint_config(ctx(ACCOUNT_A), {
        "EndpointConfigName": "uses-m2",
        "ProductionVariants": [
            {"VariantName": "A", "ModelName": "m2", "InstanceType": "ml.m5.large", "InitialInstanceCount": 1}
        ],
    })
    model = SageMakerModel.objects.get(model_name="m2")
    page = account_a.get(f"/console/models/{model.model_name}/").content.decode()
    shown_links = ('href="/console/s3/models/m2/model.tar.gz"', "/console/endpoint-configs/uses-m2/")
    for shown in ("serve:2", "WORKERS", *shown_links):
        assert shown in page, shown

    assert account_b.post(f"/console/models/{model.model_name}/delete").status_code == 404
    assert account_a.post("/console/endpoint-configs/uses-m2/delete").status_code == 302
    assert account_a.post(f"/console/models/{model.model_name}/delete").status_code == 302
    assert not SageMakerModel.objects.exists() and not EndpointConfig.objects.filter(pk=config.pk).exists()
    again = account_a.post(f"/console/models/{model.model_name}/delete")
    assert again.status_code == 404  # gone: the console's own not-found page


def test_the_endpoint_page_links_its_config_and_names_the_nodes_of_its_containers(account_a):
    deployment = in_service_endpoint(ACCOUNT_A)
    endpoint = deployment.endpoint
    container(deployment, "AllTraffic", "c1", node="gpu-host-2")
    container(deployment, "AllTraffic", "c2", node="gpu-host-1")

    page = account_a.get(f"/console/endpoints/{endpoint.endpoint_name}/").content.decode()
    assert 'data-testid="nodes">gpu-host-1, gpu-host-2<' in page
    assert f"{endpoint.endpoint_config_name} <small>(deleted)</small>" in page  # never created here
