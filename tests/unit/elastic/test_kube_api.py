"""The Kubernetes-style API through Django's test client: discovery, bearer tokens, Status errors
(never an AWS error body), and create/get/list/delete of HyperPodPyTorchJobs per account."""

import json

import pytest

from accounts.accesskeys import create_access_key
from elastic.models import HyperPodJob, JobPhase
from tests.unit.elastic.manifests import job_manifest

JOBS = "/apis/sagemaker.amazonaws.com/v1/namespaces/{ns}/hyperpodpytorchjobs"
ALL_JOBS = "/apis/sagemaker.amazonaws.com/v1/hyperpodpytorchjobs"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.fixture(autouse=True)
def no_key_cache(settings):
    settings.SAGEPORT_ACCESS_KEY_CACHE_SECONDS = 0  # a deactivated key is refused at once


@pytest.fixture
def token(db) -> str:
    key = create_access_key("123456789012")
    return f"{key.access_key_id}.{key.secret_access_key}"


@pytest.fixture
def other_token(db) -> str:
    key = create_access_key("210987654321")
    return f"{key.access_key_id}.{key.secret_access_key}"


class Kube:
    def __init__(self, client, token: str):
        self.client, self.token = client, token

    def request(self, method: str, path: str, body=None, content_type="application/json", **headers):
        data = body if isinstance(body, (str, bytes)) or body is None else json.dumps(body)
        kwargs = {"data": data, "content_type": content_type} if data is not None else {}
        if self.token is not None:
            headers.setdefault("HTTP_AUTHORIZATION", f"Bearer {self.token}")
        return self.client.generic(method, path, **kwargs, **headers)

    def create(self, manifest: dict, ns: str = "default", query: str = ""):
        return self.request("POST", JOBS.format(ns=ns) + query, manifest)

    def get(self, path: str):
        return self.request("GET", path)

    def delete(self, name: str, ns: str = "default"):
        return self.request("DELETE", f"{JOBS.format(ns=ns)}/{name}", {"propagationPolicy": "Foreground"})


@pytest.fixture
def kube(client, token) -> Kube:
    return Kube(client, token)


def assert_status(response, code: int, reason: str) -> dict:
    assert response.status_code == code, response.content
    assert response["Content-Type"] == "application/json" and "X-Amzn-ErrorType" not in response
    body = response.json()
    assert {k: body[k] for k in ("kind", "apiVersion", "status", "reason", "code")} == {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code
    }
    assert body["metadata"] == {} and body["message"]
    return body


# --- Discovery ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/version", "/version/"])  # the kubernetes client asks the second
def test_version_answers_a_kubernetes_version_without_credentials(client, db, path):
    body = client.get(path).json()

    assert (body["major"], body["minor"], body["gitVersion"]) == ("1", "34", "v1.34.0-sageport")
    assert body["platform"]


def test_discovery_names_the_group_and_the_resource(client, db):
    groups = client.get("/apis").json()
    resources = client.get("/apis/sagemaker.amazonaws.com/v1").json()

    assert groups["kind"] == "APIGroupList"
    assert groups["groups"][0]["preferredVersion"]["groupVersion"] == "sagemaker.amazonaws.com/v1"
    assert client.get("/apis/sagemaker.amazonaws.com").json()["name"] == "sagemaker.amazonaws.com"
    assert client.get("/api").json()["versions"] == ["v1"]
    [resource] = resources["resources"]
    assert (resource["name"], resource["kind"], resource["namespaced"]) == (
        "hyperpodpytorchjobs", "HyperPodPyTorchJob", True
    )
    assert set(resource["verbs"]) == {"create", "get", "list", "delete", "patch"}


def test_hyp_finds_the_crd_and_any_namespace(kube):
    crd = kube.get(f"{CRDS}/hyperpodpytorchjobs.sagemaker.amazonaws.com")
    namespace = kube.get("/api/v1/namespaces/team-a").json()

    assert crd.json()["spec"]["names"]["kind"] == "HyperPodPyTorchJob"
    assert (namespace["kind"], namespace["metadata"]["name"], namespace["status"]["phase"]) == (
        "Namespace", "team-a", "Active"
    )
    assert_status(kube.get(f"{CRDS}/pods"), 404, "NotFound")
    assert_status(kube.get("/api/v1/namespaces/Team_A"), 404, "NotFound")
    assert_status(Kube(kube.client, None).get("/api/v1/namespaces/team-a"), 401, "Unauthorized")


def test_an_unknown_kubernetes_path_is_a_not_found_status(kube):
    assert_status(kube.get("/api/v1/namespaces/default/pods"), 404, "NotFound")
    assert_status(kube.get("/apis/batch/v1/jobs"), 404, "NotFound")


# --- Authentication -------------------------------------------------------------------------


@pytest.mark.parametrize("header", [
    None, "", "Bearer", "Bearer AKIANOTAKEY.secret", "Basic dXNlcjpwYXNz", "Bearer nodot",
])
def test_missing_or_unknown_tokens_are_unauthorized(client, token, header):
    kwargs = {} if header is None else {"HTTP_AUTHORIZATION": header}

    body = assert_status(client.get(JOBS.format(ns="default"), **kwargs), 401, "Unauthorized")

    assert body["message"] == "Unauthorized"


def test_a_wrong_secret_is_unauthorized(client, token):
    key_id = token.split(".")[0]

    assert_status(Kube(client, f"{key_id}.wrong").get(ALL_JOBS), 401, "Unauthorized")


def test_a_deactivated_key_is_unauthorized(client, token):
    from accounts.models import AccessKey

    AccessKey.objects.filter(access_key_id=token.split(".")[0]).update(active=False)

    assert_status(Kube(client, token).get(ALL_JOBS), 401, "Unauthorized")


# --- Create ---------------------------------------------------------------------------------


def test_create_stores_a_pending_job_and_answers_the_object_with_defaults(kube, settings):
    response = kube.create(job_manifest("train"), ns="team-a")

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["apiVersion"], body["kind"]) == ("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJob")
    metadata = body["metadata"]
    assert (metadata["name"], metadata["namespace"], metadata["generation"]) == ("train", "team-a", 1)
    assert metadata["labels"] == {"team": "vision", "kueue.x-k8s.io/queue-name": "q-a"}
    assert metadata["resourceVersion"] == "1" and metadata["creationTimestamp"].endswith("Z")
    assert "deletionTimestamp" not in metadata
    assert body["spec"]["elasticPolicy"]["gracefulShutdownTimeoutInSeconds"] == 600
    assert body["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    [created] = body["status"]["conditions"]
    assert (created["type"], created["status"], created["reason"]) == ("Created", "True", "Created")
    job = HyperPodJob.objects.get()
    assert (job.account_id, job.region, job.namespace, job.name, job.uid) == (
        "123456789012", settings.SAGEPORT_REGION, "team-a", "train", metadata["uid"]
    )
    assert job.phase == JobPhase.PENDING and job.next_check_at is not None
    assert job.manifest["spec"] == body["spec"]


def test_a_generate_name_gets_a_suffix(kube):
    manifest = job_manifest()
    manifest["metadata"] = {"generateName": "sweep-"}

    name = kube.create(manifest).json()["metadata"]["name"]

    assert name.startswith("sweep-") and len(name) == len("sweep-") + 5


def test_unknown_fields_are_pruned_with_a_warning(kube):
    manifest = job_manifest()
    manifest["spec"]["colour"] = "blue"

    response = kube.create(manifest)

    assert response.status_code == 201
    assert "colour" not in response.json()["spec"]
    assert response["Warning"] == '299 - "unknown field spec.colour"'


def test_an_invalid_spec_is_a_422_naming_each_field_and_stores_nothing(kube):
    manifest = job_manifest(
        elasticPolicy={"maxReplicas": 4, "replicaIncrementStep": 1, "replicaDiscreteValues": [2]}
    )
    manifest["spec"]["replicaSpecs"][0]["template"]["spec"]["volumes"] = [
        {"name": "etc", "hostPath": {"path": "/etc"}}
    ]

    body = assert_status(kube.create(manifest), 422, "Invalid")

    assert body["details"]["name"] == "train" and body["details"]["kind"] == "HyperPodPyTorchJob"
    assert [cause["field"] for cause in body["details"]["causes"]] == [
        "spec.replicaSpecs[0].template.spec.volumes[0].hostPath",
        "spec.elasticPolicy.replicaDiscreteValues",
    ]
    assert "mutually exclusive" in body["message"]
    assert not HyperPodJob.objects.exists()


def test_a_name_taken_in_the_namespace_is_a_409(kube):
    assert kube.create(job_manifest("train")).status_code == 201

    body = assert_status(kube.create(job_manifest("train")), 409, "AlreadyExists")

    assert body["details"]["name"] == "train"
    assert kube.create(job_manifest("train"), ns="other").status_code == 201


def test_a_dry_run_stores_nothing(kube):
    response = kube.create(job_manifest(), query="?dryRun=All")

    assert response.status_code == 201 and response.json()["metadata"]["name"] == "train"
    assert not HyperPodJob.objects.exists()


def test_a_body_naming_another_namespace_is_a_bad_request(kube):
    manifest = job_manifest()
    manifest["metadata"]["namespace"] = "elsewhere"

    assert_status(kube.create(manifest, ns="default"), 400, "BadRequest")


@pytest.mark.parametrize("namespace", ["Default", "a_b", "x" * 64])
def test_a_namespace_that_is_not_a_dns_label_is_a_bad_request(kube, namespace):
    assert_status(kube.create(job_manifest(), ns=namespace), 400, "BadRequest")


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b'{"a": NaN}', b""])
def test_malformed_bodies_are_bad_requests(kube, body):
    assert_status(kube.request("POST", JOBS.format(ns="default"), body), 400, "BadRequest")


def test_a_form_encoded_post_is_an_unsupported_media_type_not_the_query_protocol(kube):
    form, form_type = "Action=ListTrainingJobs&Version=2017-07-24", "application/x-www-form-urlencoded"
    response = kube.request("POST", JOBS.format(ns="default"), form, content_type=form_type)

    assert_status(response, 415, "UnsupportedMediaType")


def test_a_body_over_the_limit_is_a_413(kube, settings):
    settings.SAGEPORT_MAX_REQUEST_BYTES = 1000
    manifest = job_manifest()
    manifest["metadata"]["annotations"] = {"note": "x" * 2000}

    assert_status(kube.create(manifest), 413, "RequestEntityTooLarge")


@pytest.mark.parametrize(("method", "path"), [
    ("PUT", JOBS.format(ns="default") + "/train"),
    ("DELETE", JOBS.format(ns="default")),
    ("POST", ALL_JOBS),
    ("POST", "/version"),
])
def test_other_methods_are_not_allowed(kube, method, path):
    assert_status(kube.request(method, path, {}), 405, "MethodNotAllowed")


# --- Get and list ---------------------------------------------------------------------------


def test_get_answers_the_stored_object_and_its_status(kube):
    kube.create(job_manifest("train"))
    HyperPodJob.objects.update(status={"conditions": [{"type": "Created", "status": "True"}]})

    body = kube.get(JOBS.format(ns="default") + "/train").json()

    assert body["metadata"]["name"] == "train"
    assert body["status"] == {"conditions": [{"type": "Created", "status": "True"}]}


def test_an_unknown_job_is_not_found(kube):
    body = assert_status(kube.get(JOBS.format(ns="default") + "/nothing"), 404, "NotFound")

    assert body["details"]["name"] == "nothing"


def test_another_accounts_token_sees_nothing(kube, client, other_token):
    kube.create(job_manifest("train"))
    theirs = Kube(client, other_token)

    assert_status(theirs.get(JOBS.format(ns="default") + "/train"), 404, "NotFound")
    assert theirs.get(JOBS.format(ns="default")).json()["items"] == []
    assert theirs.get(ALL_JOBS).json()["items"] == []
    assert_status(theirs.delete("train"), 404, "NotFound")
    assert theirs.create(job_manifest("train")).status_code == 201  # their own namespace "default"


def labelled(kube, name: str, labels: dict, ns: str = "default") -> None:
    manifest = job_manifest(name)
    manifest["metadata"]["labels"] = labels
    assert kube.create(manifest, ns=ns).status_code == 201


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["apiVersion"], body["kind"]) == ("sagemaker.amazonaws.com/v1", "HyperPodPyTorchJobList")
    return [item["metadata"]["name"] for item in body["items"]]


@pytest.mark.parametrize(("selector", "expected"), [
    ("", ["a", "b", "c"]),
    ("team=vision", ["a", "b"]),
    ("team==vision", ["a", "b"]),
    ("team!=vision", ["c"]),
    ("tier", ["a"]),
    ("!tier", ["b", "c"]),
    ("team in (nlp, audio)", ["c"]),
    ("team notin (nlp)", ["a", "b"]),
    ("team=vision,tier=gold", ["a"]),
])
def test_lists_filter_by_label_selector(kube, selector, expected):
    labelled(kube, "a", {"team": "vision", "tier": "gold"})
    labelled(kube, "b", {"team": "vision"})
    labelled(kube, "c", {"team": "nlp"})

    assert names(kube.get(f"{JOBS.format(ns='default')}?labelSelector={selector}")) == expected


def test_an_unreadable_selector_is_a_bad_request(kube):
    assert_status(kube.get(f"{JOBS.format(ns='default')}?labelSelector=a b c"), 400, "BadRequest")


def test_the_cluster_wide_list_has_every_namespace_of_the_account(kube):
    labelled(kube, "a", {}, ns="one")
    labelled(kube, "b", {}, ns="two")

    assert names(kube.get(ALL_JOBS)) == ["a", "b"]
    assert names(kube.get(JOBS.format(ns="two"))) == ["b"]
    assert names(kube.get(f"{ALL_JOBS}?fieldSelector=metadata.namespace=one")) == ["a"]


def test_a_limited_list_continues_where_it_stopped(kube):
    for name in ("a", "b", "c"):
        labelled(kube, name, {})

    first = kube.get(f"{ALL_JOBS}?limit=2").json()
    second = kube.get(f"{ALL_JOBS}?limit=2&continue={first['metadata']['continue']}").json()

    assert [item["metadata"]["name"] for item in first["items"]] == ["a", "b"]
    assert [item["metadata"]["name"] for item in second["items"]] == ["c"]
    assert "continue" not in second["metadata"]
    assert_status(kube.get(f"{ALL_JOBS}?continue=garbage"), 400, "BadRequest")
    for limit in ("-1", "x", "²"):
        assert_status(kube.get(f"{ALL_JOBS}?limit={limit}"), 400, "BadRequest")


# --- Delete ---------------------------------------------------------------------------------


def test_deleting_a_job_never_placed_removes_it_at_once(kube):
    kube.create(job_manifest("train"))

    response = kube.delete("train")

    assert response.status_code == 200
    assert response.json()["metadata"]["deletionTimestamp"].endswith("Z")
    assert not HyperPodJob.objects.exists()
    assert_status(kube.delete("train"), 404, "NotFound")


def test_deleting_a_running_job_marks_it_for_the_operator(kube):
    kube.create(job_manifest("train"))
    HyperPodJob.objects.update(phase=JobPhase.RUNNING, world_size=1)

    first = kube.delete("train").json()
    again = kube.delete("train").json()

    job = HyperPodJob.objects.get()
    assert job.deletion_requested_at is not None and job.resource_version == 2
    assert first["metadata"]["deletionTimestamp"] == again["metadata"]["deletionTimestamp"]
    assert again["metadata"]["resourceVersion"] == "2"
    assert kube.get(JOBS.format(ns="default") + "/train").json()["metadata"]["deletionTimestamp"]


def test_a_job_a_worker_holds_is_left_to_the_operator(kube):
    from datetime import timedelta

    from django.utils import timezone

    kube.create(job_manifest("train"))
    HyperPodJob.objects.update(lease_token="worker", lease_expires_at=timezone.now() + timedelta(minutes=1))

    assert kube.delete("train").status_code == 200

    assert HyperPodJob.objects.get().deletion_requested_at is not None


def test_a_page_of_djangos_on_a_kubernetes_path_becomes_a_status(client, db):
    response = client.get("/version", HTTP_HOST="not a host!")

    assert response.status_code == 400 and "X-Amzn-ErrorType" not in response
    assert response.json()["kind"] == "Status" and response.json()["code"] == 400


def test_a_broker_outage_does_not_fail_a_committed_create_or_delete(client, transactional_db, monkeypatch):
    from kombu.exceptions import OperationalError

    from elastic import tasks

    def broker_down(pk):
        raise OperationalError("connection refused")

    monkeypatch.setattr(tasks.reconcile_hyperpod_job, "delay", broker_down)
    key = create_access_key("123456789012")
    kube = Kube(client, f"{key.access_key_id}.{key.secret_access_key}")

    assert kube.create(job_manifest("train")).status_code == 201
    HyperPodJob.objects.update(phase=JobPhase.RUNNING)
    assert kube.delete("train").status_code == 200

    assert HyperPodJob.objects.get().deletion_requested_at is not None


def test_a_job_the_operator_removes_during_its_deletion_is_answered_as_last_seen(kube, monkeypatch):
    from elastic import submission

    kube.create(job_manifest("train"))
    HyperPodJob.objects.update(phase=JobPhase.RUNNING, world_size=1)
    monkeypatch.setattr(submission.tasks, "nudge", lambda pk: HyperPodJob.objects.filter(pk=pk).delete())

    response = kube.delete("train")

    assert response.status_code == 200
    metadata = response.json()["metadata"]
    assert metadata["deletionTimestamp"] and metadata["resourceVersion"] == "2"
    assert not HyperPodJob.objects.exists()


# --- Patch (suspend and resume) -------------------------------------------------------------
# The kubernetes client patches a custom object with a JSON merge patch
# (`patch_namespaced_custom_object`, Content-Type application/merge-patch+json); Kueue and users
# suspend and resume a training-operator job by patching `spec.runPolicy.suspend`.

MERGE_PATCH = "application/merge-patch+json"


def patch(kube: Kube, name: str, body, content_type=MERGE_PATCH, query: str = ""):
    path = f"{JOBS.format(ns='default')}/{name}{query}"
    return kube.request("PATCH", path, body, content_type=content_type)


def test_a_merge_patch_suspends_and_resumes_a_job(kube):
    kube.create(job_manifest("train"))
    before = HyperPodJob.objects.get().resource_version

    body = patch(kube, "train", {"spec": {"runPolicy": {"suspend": True}}}).json()
    assert body["spec"]["runPolicy"]["suspend"] is True
    assert int(body["metadata"]["resourceVersion"]) == before + 1
    assert HyperPodJob.objects.get().manifest["spec"]["runPolicy"]["suspend"] is True

    body = patch(kube, "train", {"spec": {"runPolicy": {"suspend": None}}}).json()  # null: the default
    assert body["spec"]["runPolicy"]["suspend"] is False


def test_a_patch_built_from_the_read_object_is_accepted(kube):
    kube.create(job_manifest("train"))
    current = kube.get(JOBS.format(ns="default") + "/train").json()
    current["spec"]["runPolicy"]["suspend"] = True

    assert patch(kube, "train", current).status_code == 200  # metadata and status sent back unchanged


def test_a_patch_of_any_other_field_is_a_422_naming_it(kube):
    kube.create(job_manifest("train"))
    change = {"spec": {"nprocPerNode": "4", "runPolicy": {"suspend": True, "jobMaxRetryCount": 9}}}

    body = assert_status(patch(kube, "train", change), 422, "Invalid")
    fields = {c["field"] for c in body["details"]["causes"]}
    assert fields == {"spec.nprocPerNode", "spec.runPolicy.jobMaxRetryCount"}
    assert "suspend" not in HyperPodJob.objects.get().manifest["spec"]["runPolicy"]


def test_a_patch_setting_suspend_to_a_non_boolean_is_a_422(kube):
    kube.create(job_manifest("train"))

    body = assert_status(patch(kube, "train", {"spec": {"runPolicy": {"suspend": "yes"}}}), 422, "Invalid")
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.runPolicy.suspend"]


def test_a_json_patch_is_a_415_and_an_unknown_job_a_404(kube):
    kube.create(job_manifest("train"))

    operations = [{"op": "replace", "path": "/spec/runPolicy/suspend", "value": True}]
    assert_status(patch(kube, "train", operations, content_type="application/json-patch+json"),
                  415, "UnsupportedMediaType")
    assert_status(patch(kube, "other", {"spec": {}}), 404, "NotFound")


def test_a_dry_run_patch_changes_nothing(kube):
    kube.create(job_manifest("train"))

    response = patch(kube, "train", {"spec": {"runPolicy": {"suspend": True}}}, query="?dryRun=All")
    assert response.json()["spec"]["runPolicy"]["suspend"] is True  # the object as it would be
    assert "suspend" not in HyperPodJob.objects.get().manifest["spec"]["runPolicy"]
