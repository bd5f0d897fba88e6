"""A HyperPodPyTorchJob's replica output, end to end: a one-replica job of the example image
(AWS's `hyperpodrun` and torch, a few samples) runs to completion; its pod's output is read back
with CloudWatch Logs' GetLogEvents from the job's group (`/aws/sagemaker/HyperPodPyTorchJobs/
<namespace>/<job>`, a stream per pod: elastic/replica_logs.py) and with AWS's HyperPod CLI
`hyp get-logs hyp-pytorch-job --job-name … --pod-name …`, which reads the Kubernetes pod log API
(sagemaker-hyperpod 3.12.0: HyperPodPytorchJob.get_logs_from_pod → read_namespaced_pod_log)."""
import uuid

from tests.e2e.conftest import unique_name
from tests.e2e.test_elastic_training import (  # noqa: F401 (fixtures)
    NAMESPACE,
    job_manifest,
    kube_jobs,
    submit,
    wait_condition,
)
from tests.e2e.test_hyp_cli import hyp, hyp_path  # noqa: F401 (fixtures)

# What examples/elastic-training/train.py prints when its samples are all trained.
COMPLETED = "Training completed at step"


def test_a_replicas_output_is_in_its_pods_log_stream_and_hyp_get_logs_shows_it(
    stack, pytorch_elastic_image, kube_jobs, hyp  # noqa: F811
):
    name = submit(kube_jobs, job_manifest(
        unique_name("logs"), pytorch_elastic_image, f"claim-{uuid.uuid4().hex[:8]}", replicas=1,
        TOTAL_SAMPLES=8, STEP_SECONDS=0,  # no pause between steps: only the end is looked at
    ))
    wait_condition(kube_jobs, name, "Succeeded")
    pod = f"{name}-pods-0"

    events = stack.client("logs").get_log_events(
        logGroupName=f"/aws/sagemaker/HyperPodPyTorchJobs/{NAMESPACE}/{name}", logStreamName=pod,
        startFromHead=True,
    )["events"]
    assert any(COMPLETED in event["message"] for event in events), [e["message"] for e in events][-20:]

    shown = hyp("get-logs", "hyp-pytorch-job", "--job-name", name, "--pod-name", pod,
                "--namespace", NAMESPACE)
    assert COMPLETED in shown
