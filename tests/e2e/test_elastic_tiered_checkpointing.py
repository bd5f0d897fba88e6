"""Managed tiered checkpointing for HyperPodPyTorchJobs, the way HyperPod serves it: the replicas of
an elastic job on a node of a cluster whose TieredStorageConfig enables the tier reach the node's
tier service by the fixed name of AWS's `amzn-sagemaker-checkpointing` library, which saves to RAM
(and S3) and, after the job grew, resumes from RAM at the new world size: DCP reshards the step
saved by a world of 1 into a world of 2 (examples/elastic-training/train.py, `TIER_NAMESPACE`,
in the pytorch-elastic image with AWS's elastic agent). Seed 001: managed tiered checkpointing
runs on HyperPod EKS clusters, i.e. for these jobs.

The library never raises when its memory write fails and S3 takes the step, so such a job used to
end Succeeded with nothing in memory and nothing said: a failed write now shows in the job's
status, as the condition `CheckpointsSaved` False with the library's own error line."""
import uuid

import pytest

from tests.e2e.conftest import unique_name
from tests.e2e.hosting import wait_until
from tests.e2e.test_elastic_training import (  # noqa: F401 (kube_jobs is a fixture)
    GROUP,
    NAMESPACE,
    NODE_TYPE,
    PLURAL,
    ROLE,
    VERSION,
    assert_every_sample_trained_once,
    claim_directory,
    condition,
    hold_gpus,
    job_manifest,
    kube_jobs,
    records,
    status_of,
    submit,
    wait_condition,
    wait_running_at,
    wait_trained_at,
    world_sizes,
)
from tests.e2e.test_tiered_checkpointing import tier_a  # noqa: F401 (a fixture)

OTHER_ACCOUNT = "210987654321"


@pytest.fixture(scope="module")
def tier_cluster(sagemaker, stack, tier_a):  # noqa: F811 (the fixture imported above)
    """A cluster of the test node with the tier on; deleted afterwards (which turns it off)."""
    name = unique_name("hpj-tier")
    group = {"InstanceGroupName": "gpus", "InstanceType": NODE_TYPE, "InstanceCount": 1,
             "ExecutionRole": ROLE}
    sagemaker.create_cluster(ClusterName=name, InstanceGroups=[group],
                             TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 10})
    wait_until(lambda: sagemaker.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService",
               timeout=60, what="the cluster in service")
    wait_until(lambda: tier_a.answers(stack.account_id), timeout=60, what="the node's tier service")
    yield name, group
    sagemaker.delete_cluster(ClusterName=name)
    wait_until(lambda: all(c["ClusterName"] != name for c in sagemaker.list_clusters()["ClusterSummaries"]),
               timeout=60, what="the cluster deleted")


def tier_environment(namespace: str, bucket: str) -> dict:
    return {"TIER_NAMESPACE": namespace, "TIER_S3_BASE_PATH": f"s3://{bucket}/elastic-tier",
            "TIER_MAX_WORLD_SIZE": "2", "CHECKPOINT_EVERY": "5"}


def s3_steps(s3, bucket: str, namespace: str) -> set[int]:
    """The steps rank 0 saved under the library's S3 layout: <base>/<namespace>/rank_0/step_<N>/."""
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"elastic-tier/{namespace}/rank_0/")
    return {int(item["Key"].split("/step_")[1].split("/")[0]) for item in listed.get("Contents", [])}


def test_replicas_save_to_the_tier_and_a_grown_world_resumes_from_it_resharded(
    stack, sagemaker, s3, bucket, shell_algo_image, pytorch_elastic_image, kube_jobs, tier_cluster, tier_a  # noqa: F811
):
    # Three of the four GPUs are held: the job starts at 1, saving to <namespace>-world-1.
    blocker = hold_gpus(sagemaker, bucket, shell_algo_image, 3)
    namespace, claim = unique_name("hpj"), f"claim-{uuid.uuid4().hex[:8]}"
    name = submit(kube_jobs, job_manifest(
        unique_name("tiered"), pytorch_elastic_image, claim, replicas=1,
        elastic={"minReplicas": 1, "maxReplicas": 2, "replicaIncrementStep": 1,
                 "scalingTimeoutInSeconds": 5, "gracefulShutdownTimeoutInSeconds": 90},
        **tier_environment(namespace, bucket),
    ))
    claim_dir = claim_directory(stack, claim)
    wait_running_at(kube_jobs, name, 1)
    wait_trained_at(claim_dir, 1)

    # Capacity frees: the world of 1 saves its step to the tier on the elastic event, and the world
    # of 2 loads it from there (read at world size 1, resharded by DCP).
    sagemaker.stop_training_job(TrainingJobName=blocker)
    wait_running_at(kube_jobs, name, 2)
    wait_trained_at(claim_dir, 2)
    conditions = {c["type"] for c in status_of(kube_jobs, name)["conditions"]}
    api, _ = kube_jobs
    api.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)

    entries = records(claim_dir)
    assert world_sizes(entries)[:2] == [1, 2]
    [saved] = [e for e in entries if e.get("event") == "elastic"]
    resumed = [e for e in entries if e.get("event") == "started" and e["world_size"] == 2]
    first_world = f"{namespace}-world-1"
    assert {(e["checkpoint"], e["step"]) for e in resumed} == {(saved["checkpoint"], saved["step"])}
    assert saved["checkpoint"] == f"tier:{first_world}/step_{saved['step']}"
    assert_every_sample_trained_once(entries)
    # The step is in the node's memory, in the job's account only; S3 got it too (the image's
    # CRT client starts: it has the CA bundle); nothing failed.
    assert saved["step"] in tier_a.latest(first_world, stack.account_id)
    # The world of 2 read the step's metadata (rank 1: the saving world's size) and rank 0's data
    # from memory, not S3 (the service logs each read).
    service_log = (tier_a.files_dir / "service.log").read_text()
    for rank in (0, 1):
        read = f"account={stack.account_id} namespace={first_world} rank={rank} step={saved['step']} "
        assert f"tier read {read}" in service_log
    assert tier_a.latest(first_world, OTHER_ACCOUNT) == []
    assert saved["step"] in s3_steps(s3, bucket, first_world)
    assert "CheckpointsSaved" not in conditions


def test_a_failed_memory_write_is_in_the_jobs_status_though_s3_saved_the_step(
    stack, sagemaker, s3, bucket, pytorch_elastic_image, kube_jobs, tier_cluster  # noqa: F811
):
    # The tier off: the library's name resolves nowhere, every memory write fails, S3 takes each.
    cluster, group = tier_cluster
    sagemaker.update_cluster(ClusterName=cluster, InstanceGroups=[group],
                             TieredStorageConfig={"Mode": "Disable"})
    namespace, claim = unique_name("hpj-notier"), f"claim-{uuid.uuid4().hex[:8]}"
    # No pause between steps: nothing here waits to watch the job while it trains.
    name = submit(kube_jobs, job_manifest(
        unique_name("notier"), pytorch_elastic_image, claim, replicas=1, TOTAL_SAMPLES=20, STEP_SECONDS=0,
        **tier_environment(namespace, bucket),
    ))
    finished = wait_condition(kube_jobs, name, "Succeeded")

    assert condition(finished) == "Succeeded"  # what `hyp list` shows is still the phase
    [failed] = [c for c in finished["conditions"] if c["type"] == "CheckpointsSaved"]
    assert (failed["status"], failed["reason"]) == ("False", "CheckpointWriteFailed")
    assert failed["message"].startswith(f"{name}-pods-0: ")
    assert "[sagemaker.checkpointing.writer.rank_0] [ERROR]" in failed["message"]
    assert s3_steps(s3, bucket, f"{namespace}-world-1") == {5, 10}
