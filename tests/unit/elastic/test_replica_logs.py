"""A HyperPodPyTorchJob's replica output in CloudWatch Logs (a group per job, a stream per pod,
elastic/replica_logs.py) and the pod log API `hyp get-logs` reads (elastic/kube/pod_logs.py).

`hyp get-logs` (sagemaker-hyperpod 3.12.0, HyperPodPytorchJob.get_logs_from_pod) calls the
kubernetes client's `read_namespaced_pod_log(name, namespace, timestamps=True, container=<the
template's first container>)`: GET /api/v1/namespaces/{ns}/pods/{pod}/log, answered in plain text,
each line prefixed by its RFC 3339 time and a space when `timestamps=true` (the kubelet's format);
an unknown pod is a 404 `Status` (`pods "x" not found`)."""
import pytest
from django.utils import timezone

from accounts.accesskeys import create_access_key
from elastic import replica_logs
from elastic.models import ElasticReplica, HyperPodJob, JobPhase
from logs.models import LogEvent, LogStream
from tests.unit.elastic.fakes import manifest, submit
from tests.unit.elastic.test_operator import (  # noqa: F401 (autouse fixtures)
    agents,
    complete,
    engine,
    node,
    settle,
    weights,
)

pytestmark = pytest.mark.django_db(transaction=True)

POD_LOG = "/api/v1/namespaces/{ns}/pods/{pod}/log"


def test_the_group_is_the_jobs_and_the_stream_the_pods():
    assert replica_logs.group_name("team-a", "llama") == "/aws/sagemaker/HyperPodPyTorchJobs/team-a/llama"


def _job(replicas: int = 2) -> HyperPodJob:
    return submit(manifest(name="llama", groups=[{"name": "pods", "replicas": replicas}]))


def _lines(job: HyperPodJob, pod: str) -> list[str]:
    group = replica_logs.group_name(job.namespace, job.name)
    stream = LogStream.objects.get(group_name=group, stream_name=pod)
    return list(LogEvent.objects.filter(stream=stream).values_list("message", flat=True))


def _container(job: HyperPodJob, index: int) -> str:
    return ElasticReplica.objects.get(job=job, index=index).container_name


def test_each_replicas_output_lands_in_its_pods_stream(engine, agents):  # noqa: F811
    job = _job()
    (job,) = settle(job)
    engine.print(_container(job, 0), "rank 0 says hello")
    engine.print(_container(job, 1), "rank 1 warns", stream="stderr")
    (job,) = settle(job, looks=2)
    assert _lines(job, "llama-pods-0") == ["rank 0 says hello"]
    assert _lines(job, "llama-pods-1") == ["rank 1 warns"]


def test_a_replaced_replica_keeps_its_last_lines_and_its_new_container_appends(engine, agents):  # noqa: F811
    job = _job()
    (job,) = settle(job)
    first = _container(job, 1)
    engine.print(first, "step 1")
    engine.print(first, "CUDA error: the last words")
    engine.exit(first, 1)
    (job,) = settle(job)
    assert (job.phase, job.fault_count) == (JobPhase.RUNNING, 1)
    engine.print(_container(job, 1), "resumed at step 1")
    (job,) = settle(job, looks=2)
    assert _lines(job, "llama-pods-1") == ["step 1", "CUDA error: the last words", "resumed at step 1"]


def test_a_finished_jobs_output_is_kept_after_its_containers_go(engine, agents):  # noqa: F811
    job = _job(replicas=1)
    (job,) = settle(job)
    engine.print(_container(job, 0), "done")
    complete(agents, engine, job)
    (job,) = settle(job)
    assert job.phase == JobPhase.SUCCEEDED and engine.find({"sageport.role": "elastic"}) == []
    assert _lines(job, "llama-pods-0") == ["done"]


@pytest.fixture
def kube(client):
    key = create_access_key("123456789012")
    token = f"{key.access_key_id}.{key.secret_access_key}"
    return lambda path: client.get(path, HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def ran(engine, agents) -> HyperPodJob:  # noqa: F811
    job = _job(replicas=1)
    (job,) = settle(job)
    for line in ("one", "two", "three"):
        engine.print(_container(job, 0), line)
    (job,) = settle(job, looks=1)
    return job


def test_the_pod_log_api_serves_the_pods_stream(kube, ran):
    response = kube(POD_LOG.format(ns="default", pod="llama-pods-0") + "?container=pytorch")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == "one\ntwo\nthree\n"


def test_timestamps_prefix_each_line_as_the_kubelet_does_and_tail_lines_keeps_the_newest(kube, ran):
    text = kube(POD_LOG.format(ns="default", pod="llama-pods-0") + "?timestamps=true&tailLines=2").content
    lines = text.decode().splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["two", "three"]
    for line in lines:
        stamp = line.split(" ", 1)[0]
        assert stamp.endswith("Z") and timezone.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_an_unknown_pod_or_another_namespace_is_not_found(kube, ran):
    for ns, pod in (("default", "llama-pods-9"), ("other", "llama-pods-0")):
        response = kube(POD_LOG.format(ns=ns, pod=pod))
        assert response.status_code == 404 and response.json()["reason"] == "NotFound"
        assert response.json()["message"] == f'pods "{pod}" not found'


def test_a_deleted_jobs_pods_are_gone_from_the_api_but_their_stream_stays(kube, ran):
    HyperPodJob.objects.filter(pk=ran.pk).update(deletion_requested_at=timezone.now())
    settle(ran, looks=1)
    assert kube(POD_LOG.format(ns="default", pod="llama-pods-0")).status_code == 404
    assert _lines(ran, "llama-pods-0") == ["one", "two", "three"]


def test_another_accounts_pod_is_not_found(client, ran):
    key = create_access_key("210987654321")
    response = client.get(POD_LOG.format(ns="default", pod="llama-pods-0"),
                          HTTP_AUTHORIZATION=f"Bearer {key.access_key_id}.{key.secret_access_key}")
    assert response.status_code == 404


def test_a_bad_tail_lines_is_a_bad_request(kube, ran):
    response = kube(POD_LOG.format(ns="default", pod="llama-pods-0") + "?tailLines=-1")
    assert response.status_code == 400 and response.json()["reason"] == "BadRequest"


def test_a_new_job_of_a_deleted_ones_name_shows_only_its_own_lines(kube, ran, engine, agents):  # noqa: F811
    HyperPodJob.objects.filter(pk=ran.pk).update(deletion_requested_at=timezone.now())
    settle(ran, looks=1)
    again = _job(replicas=1)
    (again,) = settle(again)
    engine.print(_container(again, 0), "second life")
    settle(again, looks=1)
    assert kube(POD_LOG.format(ns="default", pod="llama-pods-0")).content == b"second life\n"
