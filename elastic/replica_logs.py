"""A HyperPodPyTorchJob's replica output in CloudWatch Logs: a log group per job, a stream per pod.

HyperPod EKS ships pod output with Container Insights' Fluent Bit to one group per cluster
(`/aws/containerinsights/<cluster>/application`), a stream per container log file. Sageport's jobs
belong to no named EKS cluster, so each job gets a group of its own, in SageMaker's `/aws/sagemaker/`
family: `/aws/sagemaker/HyperPodPyTorchJobs/<namespace>/<job name>`, a stream named after the pod
(`<job>-<replica group>-<index>`). A replica's later containers (fault restarts, resizes) are the
same pod to its users: they append to its stream (the copy's cursor is a timestamp, so a new
container's lines follow the old one's). The copy reuses logs/container_logs.py, as training
and hosting do; the pod log API (`hyp get-logs`) reads the same stream (elastic/kube/pod_logs.py)."""
from elastic import replicas
from elastic.models import HyperPodJob
from logs import container_logs, store
from logs.models import LogStream
from runtime import labels
from runtime.base import ContainerRuntime

GROUP_PREFIX = replicas.LOG_GROUP_PREFIX


def group_name(namespace: str, job_name: str) -> str:
    return f"{GROUP_PREFIX}/{namespace}/{job_name}"


def stream(job: HyperPodJob, pod: str) -> LogStream:
    return store.get_stream(job.account_id, job.region, group_name(job.namespace, job.name), pod)


def collect(job: HyperPodJob, runtime: ContainerRuntime) -> None:
    """Copy the new output of every container the job has on the engine, running or exited (each
    labelled with its pod name): called on each look of the operator and before it removes
    containers, so that a replica's last lines are kept."""
    for state in runtime.find(replicas.job_labels(job)):
        pod = state.labels.get(labels.HOST)
        if pod:
            container_logs.collect(runtime, state.name, stream(job, pod))
