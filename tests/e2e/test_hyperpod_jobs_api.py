"""HyperPodPyTorchJobs through the real `kubernetes` Python client against the live stack,
configured by nothing but the kubeconfig the stack writes (`KUBECONFIG` in `.sageport/env`):
create, get, list by label, patch of `spec.runPolicy.suspend`, delete; Kubernetes `Status` errors
(422 naming the field, 409, 404, 401); another account's token sees nothing."""

import json
import time
import uuid

import kubernetes
import pytest
from kubernetes.client.rest import ApiException

from tests.conftest import read_env_file

GROUP, VERSION, PLURAL = "sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs"
# No node has this many GPUs: whatever operator runs leaves the job without replicas.
UNPLACEABLE_GPUS = 64


@pytest.fixture(scope="module")
def api_client(stack):
    kubeconfig = read_env_file(stack.data_dir / "env")["KUBECONFIG"]
    return kubernetes.config.new_client_from_config(config_file=kubeconfig)


@pytest.fixture(scope="module")
def jobs(api_client):
    return kubernetes.client.CustomObjectsApi(api_client)


def client_with_token(stack, token: str) -> kubernetes.client.CustomObjectsApi:
    configuration = kubernetes.client.Configuration()
    configuration.host = stack.endpoint_url
    configuration.api_key = {"authorization": f"Bearer {token}"}
    return kubernetes.client.CustomObjectsApi(kubernetes.client.ApiClient(configuration))


def manifest(name: str, labels: dict | None = None, **elastic) -> dict:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "replicaSpecs": [{
                "name": "pods",
                "replicas": 1,
                "maxReplicas": 2,
                "template": {"spec": {"containers": [{
                    "name": "pytorch",
                    "image": "sageport-test/none:latest",
                    "command": ["hyperpodrun", "--nnodes=1", "train.py"],
                    "resources": {"limits": {"nvidia.com/gpu": UNPLACEABLE_GPUS}},
                }]}},
            }],
            "elasticPolicy": {"minReplicas": 1, "maxReplicas": 2, **elastic},
        },
    }


def create(jobs, body: dict, namespace: str) -> dict:
    return jobs.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)


def get(jobs, namespace: str, name: str) -> dict:
    return jobs.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)


def listed(jobs, namespace: str, selector: str = "") -> list[str]:
    answer = jobs.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, label_selector=selector)
    return [item["metadata"]["name"] for item in answer["items"]]


def delete(jobs, namespace: str, name: str) -> dict:
    return jobs.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)


def refused(call) -> tuple[int, dict]:
    with pytest.raises(ApiException) as error:
        call()
    return error.value.status, json.loads(error.value.body)


def wait_gone(jobs, namespace: str, name: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            get(jobs, namespace, name)
        except ApiException as error:
            assert error.status == 404, error.body
            return
        assert time.monotonic() < deadline, f"{namespace}/{name} still there after {timeout}s"
        time.sleep(0.5)


@pytest.fixture
def namespace() -> str:
    return f"team-{uuid.uuid4().hex[:8]}"


def test_the_server_answers_a_kubernetes_version(api_client):
    assert kubernetes.client.VersionApi(api_client).get_code().git_version == "v1.34.0-sageport"


def test_a_job_is_created_read_listed_by_label_and_deleted(jobs, namespace):
    created = create(jobs, manifest("elastic", {"team": "vision"}, replicaIncrementStep=1), namespace)
    create(jobs, manifest("other", {"team": "nlp"}), namespace)

    job = get(jobs, namespace, "elastic")
    everywhere = jobs.list_cluster_custom_object(GROUP, VERSION, PLURAL, label_selector="team")

    assert job["metadata"]["uid"] == created["metadata"]["uid"]
    assert job["spec"]["elasticPolicy"] == {
        "minReplicas": 1, "maxReplicas": 2, "replicaIncrementStep": 1,
        "gracefulShutdownTimeoutInSeconds": 600, "scalingTimeoutInSeconds": 60,
        "faultyScaleDownTimeoutInSeconds": 30,
    }
    assert job["spec"]["nprocPerNode"] == "auto"
    assert job["status"] == {} or isinstance(job["status"]["conditions"], list)
    assert listed(jobs, namespace, "team=vision") == ["elastic"]
    assert {"elastic", "other"} <= {item["metadata"]["name"] for item in everywhere["items"]}

    deleted = delete(jobs, namespace, "elastic")

    assert deleted["metadata"]["deletionTimestamp"]
    wait_gone(jobs, namespace, "elastic")
    assert listed(jobs, namespace) == ["other"]
    delete(jobs, namespace, "other")


def test_a_spec_with_both_an_increment_step_and_discrete_values_is_refused_naming_the_field(jobs, namespace):
    status, body = refused(lambda: create(
        jobs, manifest("both", replicaIncrementStep=1, replicaDiscreteValues=[1, 2]), namespace
    ))

    assert (status, body["kind"], body["reason"]) == (422, "Status", "Invalid")
    [cause] = body["details"]["causes"]
    assert cause["field"] == "spec.elasticPolicy.replicaDiscreteValues"
    assert refused(lambda: get(jobs, namespace, "both"))[0] == 404


def test_a_host_path_volume_is_refused(jobs, namespace):
    body = manifest("host")
    pod = body["spec"]["replicaSpecs"][0]["template"]["spec"]
    pod["volumes"] = [{"name": "root", "hostPath": {"path": "/"}}]
    pod["containers"][0]["volumeMounts"] = [{"name": "root", "mountPath": "/host"}]

    status, answer = refused(lambda: create(jobs, body, namespace))

    assert status == 422
    assert answer["details"]["causes"][0]["field"] == "spec.replicaSpecs[0].template.spec.volumes[0].hostPath"


def test_run_policy_fields_the_operator_does_not_act_on_are_refused_naming_them(jobs, namespace):
    # HyperPod's RunPolicy has faultDeadlineSeconds and workloadMode (sagemaker-hyperpod 3.12.0);
    # Sageport has no fault-time clock and one workload mode, so it refuses them, never ignores.
    body = manifest("policy")
    body["spec"]["runPolicy"] = {"faultDeadlineSeconds": 600, "workloadMode": "Deployment"}

    status, answer = refused(lambda: create(jobs, body, namespace))

    assert (status, answer["reason"]) == (422, "Invalid")
    fields = {cause["field"] for cause in answer["details"]["causes"]}
    assert fields == {"spec.runPolicy.faultDeadlineSeconds", "spec.runPolicy.workloadMode"}


def test_a_patch_may_change_suspend_only(jobs, namespace):
    create(jobs, manifest("patched"), namespace)
    def patch(body: dict) -> dict:  # a JSON merge patch, from a dict body
        return jobs.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "patched", body)

    suspended = patch({"spec": {"runPolicy": {"suspend": True}}})
    status, answer = refused(lambda: patch({"spec": {"nprocPerNode": "8"}}))

    assert suspended["spec"]["runPolicy"]["suspend"] is True
    assert (status, answer["reason"]) == (422, "Invalid")
    assert [cause["field"] for cause in answer["details"]["causes"]] == ["spec.nprocPerNode"]
    assert get(jobs, namespace, "patched")["spec"]["nprocPerNode"] == "auto"
    delete(jobs, namespace, "patched")


def test_a_taken_name_is_a_conflict(jobs, namespace):
    create(jobs, manifest("twice"), namespace)

    status, body = refused(lambda: create(jobs, manifest("twice"), namespace))

    assert (status, body["reason"]) == (409, "AlreadyExists")
    delete(jobs, namespace, "twice")


def test_another_accounts_token_sees_nothing(stack, jobs, namespace):
    create(jobs, manifest("mine"), namespace)
    theirs = client_with_token(stack, ".".join(stack.create_access_key("210987654321")))

    assert refused(lambda: get(theirs, namespace, "mine"))[0] == 404
    assert listed(theirs, namespace) == []
    assert theirs.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"] == []
    assert refused(lambda: delete(theirs, namespace, "mine"))[0] == 404
    assert listed(jobs, namespace) == ["mine"]
    delete(jobs, namespace, "mine")


def test_a_wrong_token_is_unauthorized(stack):
    status, body = refused(lambda: client_with_token(stack, "AKIAUNKNOWN.secret").list_cluster_custom_object(
        GROUP, VERSION, PLURAL
    ))

    assert (status, body["reason"]) == (401, "Unauthorized")
