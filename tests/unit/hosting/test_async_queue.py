"""The asynchronous endpoint's queue: what a claim starts and where, what an expired request
becomes, what a worker that died leaves behind, and the endpoint config's AsyncInferenceConfig."""

from datetime import timedelta

import pytest
from django.utils import timezone

from hosting import async_config, async_queue
from hosting.async_metrics import Backlog, values
from hosting.async_queue import Waiting, plan
from hosting.models import AsyncInvocation, EndpointDeployment
from tests.unit.hosting.runtime_api.test_routing import container, deployment, endpoint

NOW = timezone.now()
CONFIG = {
    "OutputConfig": {"S3OutputPath": "s3://out/results/", "S3FailurePath": "s3://out/failures"},
    "ClientConfig": {"MaxConcurrentInvocationsPerInstance": 2},
}


def waiting(pk: int, attempts: int = 0, ttl: float = 60.0) -> Waiting:
    return Waiting(pk, NOW + timedelta(seconds=ttl), attempts)


def test_the_oldest_requests_take_the_free_slots_spread_over_the_instances():
    decided = plan([waiting(1), waiting(2), waiting(3), waiting(4)], {"a": 2, "b": 1, "c": 0}, NOW)
    assert decided.runs == [(1, "a"), (2, "a"), (3, "b")]  # a has 2 free, then a and b 1 each
    assert decided.expired == []


def test_a_request_whose_ttl_ended_before_it_started_fails_without_a_slot():
    decided = plan([waiting(1, ttl=-1), waiting(2)], {"a": 1}, NOW)
    assert decided == async_queue.Plan(runs=[(2, "a")], expired=[1])


def test_a_request_started_before_its_ttl_ended_runs_again_after_its_worker_died():
    assert plan([waiting(1, attempts=1, ttl=-1)], {"a": 1}, NOW).runs == [(1, "a")]


def test_nothing_starts_without_capacity():
    assert plan([waiting(1)], {}, NOW).runs == []
    assert plan([waiting(1)], async_queue.free_slots(1, ["a"], {"a": 1}), NOW).runs == []


def test_the_output_keys_are_the_inference_ids():
    assert async_config.output_location(CONFIG, "id-1") == "s3://out/results/id-1.out"
    assert async_config.failure_location(CONFIG, "id-1") == "s3://out/failures/id-1-error.out"
    without_failure_path = {"OutputConfig": {"S3OutputPath": "s3://out/r"}}
    assert async_config.failure_location(without_failure_path, "x") == "s3://out/r/x-error.out"


def test_notifications_kms_and_a_missing_output_path_are_refused():
    problems = async_config.problems(
        {"OutputConfig": {"NotificationConfig": {"SuccessTopic": "arn:aws:sns:us-east-1:123456789012:t"},
                          "KmsKeyId": "k"}}
    )
    assert any("NotificationConfig is not supported by Sageport: there is no SNS" in p for p in problems)
    assert any("KmsKeyId is not supported" in p for p in problems)
    assert any("S3OutputPath is required" in p for p in problems)
    assert async_config.problems(CONFIG) == []


def _async_endpoint(containers: int = 1):
    owner = endpoint("InService")
    fleet = deployment(owner, "Active", {"A": 1.0})
    snapshot = {"EndpointConfig": {"AsyncInferenceConfig": CONFIG}}
    EndpointDeployment.objects.filter(pk=fleet.pk).update(snapshot=snapshot)
    for n in range(containers):
        container(fleet, "A", f"c{n}")
    return owner


def _accept(owner, inference_id: str, **request):
    return async_queue.accept(
        owner, CONFIG, {"InferenceId": inference_id, "InputLocation": "s3://in/x", "Headers": {}, **request}
    )


@pytest.mark.django_db
def test_the_same_inference_id_again_is_the_same_request():
    owner = _async_endpoint()
    first = _accept(owner, "same")
    again = _accept(owner, "same", InputLocation="s3://in/other")
    assert again.pk == first.pk and again.input_location == "s3://in/x"
    assert first.output_location == "s3://out/results/same.out"


@pytest.mark.django_db
def test_a_claim_fills_each_instance_up_to_its_max_concurrent_invocations():
    owner = _async_endpoint(containers=2)
    for n in range(6):
        _accept(owner, f"r{n}")

    first = async_queue.claim(owner.pk)
    second = async_queue.claim(owner.pk)

    assert sorted(name for _, name in first.runs) == ["c0", "c0", "c1", "c1"]
    assert second.runs == []  # every slot is leased
    assert AsyncInvocation.objects.filter(status="Pending").count() == 2


@pytest.mark.django_db
def test_a_lease_that_ends_with_its_worker_gives_the_request_to_the_next_claim():
    owner = _async_endpoint()
    row = _accept(owner, "r", InvocationTimeoutSeconds=5)
    (claimed,) = async_queue.claim(owner.pk).runs

    later = timezone.now() + timedelta(seconds=5) + async_queue.LEASE_SLACK + timedelta(seconds=1)
    assert async_queue.claim(owner.pk, now=later).runs == [claimed]
    assert AsyncInvocation.objects.get(pk=row.pk).attempts == 2


@pytest.mark.django_db
def test_a_finished_request_frees_its_slot_and_is_never_claimed_again():
    owner = _async_endpoint()
    for name in "abc":
        _accept(owner, name)
    (pk, _), (other, _) = async_queue.claim(owner.pk).runs  # two slots on the one instance
    async_queue.finish(pk, "Completed")
    async_queue.finish(other, "Failed", "the model said no")
    ((last, _),) = async_queue.claim(owner.pk).runs
    assert last not in (pk, other)
    async_queue.finish(last, "Completed")
    assert async_queue.claim(owner.pk).runs == [] and async_queue.endpoints_with_work() == []


@pytest.mark.django_db
def test_a_real_time_endpoint_has_no_async_config():
    owner = endpoint("InService")
    fleet = deployment(owner, "Active", {"A": 1.0})
    EndpointDeployment.objects.filter(pk=fleet.pk).update(snapshot={"EndpointConfig": {}})
    assert async_queue.endpoint_async_config(owner) is None


def test_the_backlog_metrics_of_an_endpoint():
    busy = values(Backlog(size=6, instances=2, oldest=NOW - timedelta(seconds=30)), NOW)
    assert busy[("ApproximateBacklogSize", "None")] == 6
    assert busy[("ApproximateBacklogSizePerInstance", "None")] == 3
    assert busy[("ApproximateAgeOfOldestRequest", "Seconds")] == 30
    assert busy[("HasBacklogWithoutCapacity", "None")] == 0
    stranded = values(Backlog(size=2, instances=0, oldest=NOW), NOW)
    assert stranded[("HasBacklogWithoutCapacity", "None")] == 1
    assert values(Backlog(0, 0, None), NOW)[("HasBacklogWithoutCapacity", "None")] == 0
