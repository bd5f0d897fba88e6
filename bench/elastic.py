"""Elastic training's resizes: capacity freed → the job running at the larger size, and a
high-priority submission → its start, each next to the agents' own graceful-stop time, in one run.

Each round, on a running Sageport whose node declares four GPUs:
1. a training job of 3 instances of one GPU each (`sageport-examples/busybox:latest` running
   `sleep`, ending on SIGTERM) holds three GPUs; an elastic HyperPodPyTorchJob (min 1, max 4, low
   priority, `scalingTimeoutInSeconds` 5) of `sageport-examples/pytorch-elastic:2.11.0-1.1.3` running
   examples/elastic-training/train.py starts at 1 and trains a step (its records, in a
   persistentVolumeClaim directory of the data dir);
2. once the job's scalingTimeoutInSeconds has passed since it started (what is timed is the
   operator, not the job's own pause), StopTrainingJob frees the three GPUs; timed from the
   holder reported Stopped to the elastic job's `Running` condition with 4 `jobPods`, and to the
   first step trained at world size 4 (the records' own time); that time broken down from the
   agents' transitions: until the first agent enters STOPPING (the operator's reaction), until
   the last new agent is up (the new replicas' containers and agents starting), and from the last
   agent READY to `Running`;
3. a high-priority job of 2 replicas (same image) is submitted: the elastic job shrinks to 2 for
   it; timed from the submission to its `Running` condition and to its first trained step;
4. for each resize, the agents' graceful stop: from their `/status` `transitions` (the time each
   agent entered STOPPING and then READY again: workers signalled, checkpoint saved, exited),
   the slowest agent of the stopped world. Each agent is read through its port 8080 published on
   127.0.0.1 (containers found by the labels `sageport.role=elastic` and the stack's
   `sageport.stack`), every --poll-seconds while the bench waits, so that the agents a shrink
   removes are read before they go.
Prints each round, the medians, each time over its resize's graceful stop, and one summary line.
Bounded: at most --repeat rounds, none starts after --max-seconds, and every wait gives up after
--phase-timeout (the bench fails). Everything it created is removed at the end, also on failure:
the HyperPodPyTorchJobs (deleted, and waited gone), the holders (stopped), the cluster that
defines the priority classes, the claim directories, and the bucket of the holders' output.

    SAGEPORT_NODE_GPUS=0,1,2,3 SAGEPORT_GPU_DEVICE_MODE=env-only \\
        SAGEPORT_NODE_INSTANCE_TYPE=ml.g5.12xlarge make up
    . .sageport/env && .venv/bin/python -m bench.elastic [--repeat 3]

(`make up` passes its environment on to the stack's worker; env-only passes the GPU ids to the
containers without asking Docker for devices, for a machine without NVIDIA GPUs.) Run it as a
module from the repository root. The stack is found through <data>/env: KUBECONFIG (the
HyperPodPyTorchJob API; its directory is the data dir), AWS_ENDPOINT_URL_SAGEMAKER and the
access key; the stack id is SAGEPORT_STACK_ID, or derived from the data dir as the stack does.
"""

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

import boto3
import docker
import kubernetes
import urllib3
from kubernetes import client as kube

from bench.common import delete_bucket

GROUP, VERSION, PLURAL, NAMESPACE = "sagemaker.amazonaws.com", "v1", "hyperpodpytorchjobs", "default"
IMAGE = "sageport-examples/pytorch-elastic:2.11.0-1.1.3"
HOLDER_IMAGE = "sageport-examples/busybox:latest"
HOLDER_INSTANCE_TYPE = "ml.p3.2xlarge"  # one GPU per instance
# A process 1 ignores SIGTERM unless it handles it: a bare `sleep` would stop only at the SIGKILL
# after the grace period, as a training script that ignores StopTrainingJob would.
HOLDER_COMMAND = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
CLASSES = [{"Name": "high", "Weight": 100}, {"Name": "low", "Weight": 10}]
CLAIM_PATH = "/checkpoints"
GROUP_NAME = "pods"
AGENT_PORT = "8080/tcp"
LOOPBACK = "127.0.0.1"
SCALING_TIMEOUT = 5  # the elastic job's scalingTimeoutInSeconds
CAPACITY, HELD, URGENT = 4, 3, 2  # the node's GPUs, what the holder takes, what the urgent job needs

GROW_RUNNING = "capacity freed → Running at 4"
GROW_STEP = "capacity freed → first step at 4"
GROW_STOP = "agents' graceful stop (1 → 4)"
GROW_REACTION = "  of which: freed → the stop sent"
GROW_NEW_AGENTS = "  of which: freed → new agents up"
GROW_REFORM = "  of which: all agents ready → Running"
URGENT_RUNNING = "high-priority submitted → Running"
URGENT_STEP = "high-priority submitted → first step"
SHRINK_STOP = "agents' graceful stop (4 → 2)"
MEASURED = {  # each time, and the graceful stop of its resize
    GROW_RUNNING: GROW_STOP, GROW_STEP: GROW_STOP, URGENT_RUNNING: SHRINK_STOP, URGENT_STEP: SHRINK_STOP,
}
ORDER = [GROW_RUNNING, GROW_STEP, GROW_STOP, URGENT_RUNNING, URGENT_STEP, SHRINK_STOP]
BREAKDOWN = [GROW_REACTION, GROW_NEW_AGENTS, GROW_REFORM]  # printed under GROW_RUNNING

_http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=1.0, read=2.0))


class PhaseTimeout(Exception):
    pass


# --- What the bench reads: pure functions ------------------------------------------------------

def condition(status: dict) -> str:
    """The newest condition whose status is True ("" before the operator wrote any)."""
    true = [c["type"] for c in status.get("conditions", []) if c.get("status") == "True"]
    return true[-1] if true else ""


def running_size(status: dict) -> int:
    """How many replicas the job runs: its `jobPods` while its condition is Running, else 0."""
    if condition(status) != "Running":
        return 0
    return len(status.get("jobPods", []))


def first_step_time(records: list[dict], world_size: int, since: float) -> float | None:
    """When the first step at `world_size` was trained at or after `since` (epoch seconds)."""
    times = [r["time"] for r in records
             if "samples" in r and r.get("world_size") == world_size and r.get("time", -1) >= since]
    return min(times, default=None)


def graceful_stop_seconds(transitions: dict[str, dict[str, str]], since: float) -> float | None:
    """The slowest agent's graceful stop after `since`: from its entering STOPPING to its entering
    READY again, among the agents (`transitions` of each, as /status gives them: the ISO time
    each state was last entered) that stopped after `since` and are READY again; None if none."""
    stops = []
    for states in transitions.values():
        if "STOPPING" not in states or "READY" not in states:
            continue
        stopping = datetime.fromisoformat(states["STOPPING"]).timestamp()
        ready = datetime.fromisoformat(states["READY"]).timestamp()
        if stopping >= since and ready > stopping:
            stops.append(ready - stopping)
    return max(stops, default=None)


def growth_breakdown(transitions: dict[str, dict[str, str]], freed: float, running: float) -> dict:
    """Where the growth's time went, from the agents' own `transitions` (ISO times each state was
    last entered): from the capacity freed to the first agent entering STOPPING (the operator's
    reaction: sending /stop), to the last agent that came up after it (INIT: the new replicas'
    containers started, their agents running), and from the last agent READY to `Running` seen
    (the operator's look and /start). The first may be negative: the bench polls for Stopped."""
    def times(state: str) -> list[float]:
        return [datetime.fromisoformat(states[state]).timestamp() for states in transitions.values()
                if state in states]
    stopped = [t for t in times("STOPPING") if t >= freed - 5]
    new = [t for t in times("INIT") if t >= freed - 5]
    ready = [t for t in times("READY") if t <= running]
    return {
        GROW_REACTION: min(stopped) - freed if stopped else float("nan"),
        GROW_NEW_AGENTS: max(new) - freed if new else float("nan"),
        GROW_REFORM: running - max(ready) if ready else float("nan"),
    }


def summarize(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Median of each measure over the rounds, and each time over its resize's graceful stop."""
    measured = ORDER + [what for what in BREAKDOWN if all(what in r for r in rounds)]
    median = {what: statistics.median(r[what] for r in rounds) for what in measured}
    return median | {f"{what} / stop": median[what] / median[stop] if median[stop] else float("nan")
                     for what, stop in MEASURED.items()}


def report(summary: dict[str, float], rounds: int) -> str:
    lines = [f"{rounds} rounds; medians:"]
    for what in ORDER:
        ratio = f"   {summary[what + ' / stop']:>5.1f}x the graceful stop" if what in MEASURED else ""
        lines.append(f"{what:<38}{summary[what]:>7.2f} s{ratio}")
        if what == GROW_RUNNING:
            lines += [f"{part:<38}{summary[part]:>7.2f} s" for part in BREAKDOWN if part in summary]
    lines.append(
        f"summary: capacity freed → running at 4 in {summary[GROW_RUNNING]:.1f} s "
        f"({summary[GROW_RUNNING + ' / stop']:.1f}x the agent's {summary[GROW_STOP]:.1f} s graceful stop; "
        f"first step at 4 after {summary[GROW_STEP]:.1f} s); high-priority job Running "
        f"{summary[URGENT_RUNNING]:.1f} s after its submission ({summary[URGENT_RUNNING + ' / stop']:.1f}x "
        f"the {summary[SHRINK_STOP]:.1f} s graceful stop of the shrink; first step after "
        f"{summary[URGENT_STEP]:.1f} s)"
    )
    return "\n".join(lines)


def read_records(claim_dir: Path) -> list[dict]:
    """The JSON lines train.py wrote under <claim>/records; a line being written is skipped."""
    entries = []
    for path in sorted((claim_dir / "records").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
    return entries


def stack_id(data_dir: Path) -> str:
    """SAGEPORT_STACK_ID, or what the stack derives from its data dir (controlplane/settings.py)."""
    derived = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:12]
    return os.environ.get("SAGEPORT_STACK_ID") or derived


def manifest(
    name: str, claim: str, replicas: int, priority: str, elastic: dict | None = None, *,
    image: str = IMAGE, retries: int = 0, **environment,
) -> dict:
    """A job of the example image, one GPU per replica, its records and checkpoints in the claim
    (also the end-to-end tests' jobs). Without TOTAL_SAMPLES it trains until it is deleted."""
    env = {"CHECKPOINT_DIR": CLAIM_PATH, "STEP_SECONDS": "0.2", "BATCH_PER_RANK": "2",
           "TOTAL_SAMPLES": "1000000", **environment}
    container = {
        "name": "pytorch",
        "image": image,
        "env": [{"name": key, "value": str(value)} for key, value in env.items()],
        "resources": {"limits": {"nvidia.com/gpu": 1}},
        "volumeMounts": [{"name": "checkpoints", "mountPath": CLAIM_PATH}],
    }
    spec = {
        "replicaSpecs": [{
            "name": GROUP_NAME,
            "replicas": replicas,
            "maxReplicas": (elastic or {}).get("maxReplicas", replicas),
            "template": {"spec": {
                "containers": [container],
                "volumes": [{"name": "checkpoints", "persistentVolumeClaim": {"claimName": claim}}],
            }},
        }],
        "runPolicy": {"jobMaxRetryCount": retries},
    }
    if elastic:
        spec["elasticPolicy"] = elastic
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/priority-class": priority}},
        "spec": spec,
    }


# --- The stack ---------------------------------------------------------------------------------

class Stack:
    """The clients of one running stack, and everything the bench created in it (to remove)."""

    def __init__(self, options):
        kubeconfig = Path(os.environ["KUBECONFIG"])
        self.data_dir = kubeconfig.parent
        self.stack_id = stack_id(self.data_dir)
        self.options = options
        self.sagemaker = boto3.client("sagemaker")
        api_client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        self.jobs = kube.CustomObjectsApi(api_client)
        self.engine = docker.from_env()
        self.clusters: list[str] = []
        self.holders: list[str] = []
        self.kube_jobs: list[str] = []
        self.claims: list[str] = []
        self.agents: dict[str, dict[str, str]] = {}  # container name → its latest transitions

    # Waiting: every wait polls, reads the agents, and gives up after --phase-timeout.
    def wait(self, probe, what: str, pods: list[str]):
        deadline = time.monotonic() + self.options.phase_timeout
        while time.monotonic() < deadline:
            self.read_agents(pods)
            answer = probe()
            if answer:
                return answer
            time.sleep(self.options.poll_seconds)
        raise PhaseTimeout(f"{what}: not reached within {self.options.phase_timeout:g} s")

    def read_agents(self, pods: list[str]) -> None:
        """The transitions of the agents of these pods, through their ports on 127.0.0.1."""
        if not pods:
            return
        labels = ["sageport.role=elastic", f"sageport.stack={self.stack_id}"]
        for container in self.engine.containers.list(filters={"label": labels}):
            if container.labels.get("sageport.host") not in pods:
                continue
            port = _loopback_port(container.attrs["NetworkSettings"]["Ports"] or {})
            if port is None:
                continue
            try:
                answer = json.loads(_http.request("GET", f"http://{LOOPBACK}:{port}/status").data)
            except (urllib3.exceptions.HTTPError, ValueError):
                continue  # starting or going: the next look asks again
            if isinstance(answer, dict) and isinstance(answer.get("transitions"), dict):
                self.agents[container.name] = answer["transitions"]

    def status(self, name: str) -> dict:
        job = self.jobs.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
        return job.get("status", {})

    def submit(self, body: dict) -> str:
        name = body["metadata"]["name"]
        self.kube_jobs.append(name)
        self.jobs.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, body)
        return name

    def claim_dir(self, claim: str) -> Path | None:
        found = sorted(self.data_dir.glob(f"volumes/*/{NAMESPACE}/{claim}"))
        return found[0] if found else None

    def records(self, claim: str) -> list[dict]:
        directory = self.claim_dir(claim)
        return read_records(directory) if directory else []

    def training_status(self, name: str) -> str:
        return self.sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobStatus"]


def _loopback_port(ports: dict) -> int | None:
    for binding in ports.get(AGENT_PORT) or []:
        if binding.get("HostIp") == LOOPBACK and binding.get("HostPort"):
            return int(binding["HostPort"])
    return None


# --- One round ---------------------------------------------------------------------------------

def create_priorities(stack: Stack) -> None:
    """A cluster of the node whose scheduler config defines the `high` and `low` classes."""
    name = f"bench-elastic-{uuid.uuid4().hex[:8]}"
    arn = stack.sagemaker.create_cluster(
        ClusterName=name,
        InstanceGroups=[{"InstanceGroupName": "gpus", "InstanceType": stack.options.instance_type,
                         "InstanceCount": 1, "ExecutionRole": ROLE}],
    )["ClusterArn"]
    stack.clusters.append(arn)
    stack.sagemaker.create_cluster_scheduler_config(
        Name=f"{name}-priorities", ClusterArn=arn, SchedulerConfig={"PriorityClasses": CLASSES}
    )


def one_round(stack: Stack) -> dict[str, float]:
    tag = uuid.uuid4().hex[:8]
    holder = _hold_gpus(stack, f"bench-holder-{tag}")
    elastic, claim = f"bench-elastic-{tag}", f"bench-claim-{tag}"
    pods = [f"{elastic}-{GROUP_NAME}-{index}" for index in range(CAPACITY)]
    stack.claims.append(claim)
    stack.submit(manifest(elastic, claim, 1, "low", elastic={
        "minReplicas": 1, "maxReplicas": CAPACITY, "replicaIncrementStep": 1,
        "scalingTimeoutInSeconds": SCALING_TIMEOUT, "gracefulShutdownTimeoutInSeconds": 90,
    }))
    stack.wait(lambda: running_size(stack.status(elastic)) == 1, f"{elastic} running at 1", pods)
    started = time.time()
    stack.wait(lambda: first_step_time(stack.records(claim), 1, 0), f"{elastic} trained at 1", pods)
    # The job may grow only scalingTimeoutInSeconds after it started: the capacity is freed after
    # that, so that what is timed is the operator, not the job's own pause.
    time.sleep(max(0.0, SCALING_TIMEOUT - (time.time() - started)))

    stop_sent = time.time()
    stack.sagemaker.stop_training_job(TrainingJobName=holder)
    stack.wait(lambda: stack.training_status(holder) == "Stopped", f"{holder} stopped", pods)
    freed = time.time()
    stack.wait(lambda: running_size(stack.status(elastic)) == CAPACITY, f"{elastic} running at 4", pods)
    grown = time.time()
    grown_step = stack.wait(lambda: first_step_time(stack.records(claim), CAPACITY, freed),
                            f"{elastic} trained at 4", pods)
    grow_stop = _graceful_stop(stack, stop_sent, "the growth")  # the operator may act before we see Stopped
    breakdown = growth_breakdown(stack.agents, freed, grown)

    urgent, urgent_claim = f"bench-urgent-{tag}", f"bench-claim-{tag}-urgent"
    stack.claims.append(urgent_claim)
    submitted = time.time()
    stack.submit(manifest(urgent, urgent_claim, URGENT, "high"))
    stack.wait(lambda: running_size(stack.status(urgent)) == URGENT, f"{urgent} running", pods)
    started = time.time()
    urgent_step = stack.wait(lambda: first_step_time(stack.records(urgent_claim), URGENT, submitted),
                             f"{urgent} trained", pods)
    shrink_stop = _graceful_stop(stack, submitted, "the shrink")
    _delete_jobs(stack, [urgent, elastic])
    return {
        GROW_RUNNING: grown - freed, GROW_STEP: grown_step - freed, GROW_STOP: grow_stop, **breakdown,
        URGENT_RUNNING: started - submitted, URGENT_STEP: urgent_step - submitted, SHRINK_STOP: shrink_stop,
    }


def _hold_gpus(stack: Stack, name: str) -> str:
    stack.holders.append(name)
    stack.sagemaker.create_training_job(
        TrainingJobName=name,
        AlgorithmSpecification={"TrainingImage": HOLDER_IMAGE, "TrainingInputMode": "File",
                                "ContainerEntrypoint": HOLDER_COMMAND},
        RoleArn=ROLE,
        OutputDataConfig={"S3OutputPath": f"s3://{stack.options.bucket}/bench-elastic"},
        ResourceConfig={"InstanceType": HOLDER_INSTANCE_TYPE, "InstanceCount": HELD, "VolumeSizeInGB": 1},
        StoppingCondition={"MaxRuntimeInSeconds": 3600},
    )

    def training() -> bool:
        job = stack.sagemaker.describe_training_job(TrainingJobName=name)
        if job["TrainingJobStatus"] in ("Failed", "Stopped", "Completed"):
            raise RuntimeError(f"{name} ended {job['TrainingJobStatus']}: {job.get('FailureReason', '')}")
        return job.get("SecondaryStatus") == "Training"

    stack.wait(training, f"{name} training", [])
    return name


def _graceful_stop(stack: Stack, since: float, what: str) -> float:
    seconds = graceful_stop_seconds(stack.agents, since)
    if seconds is None:
        raise RuntimeError(f"no agent reported a graceful stop for {what}")
    return seconds


def _delete_jobs(stack: Stack, names: list[str]) -> None:
    """Delete the jobs and wait until they are gone (their containers removed)."""
    for name in names:
        try:
            stack.jobs.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, name)
        except kube.ApiException as error:
            if error.status != 404:
                raise
    for name in names:
        stack.wait(lambda n=name: _gone(stack, n), f"{name} deleted", [])
        stack.kube_jobs.remove(name)


def _gone(stack: Stack, name: str) -> bool:
    try:
        stack.status(name)
    except kube.ApiException as error:
        if error.status == 404:
            return True
        raise
    return False


# --- Cleaning up -------------------------------------------------------------------------------

def clean_up(stack: Stack) -> None:
    """Remove whatever the bench created; a failure is reported, never hides the results."""
    for step in (_clean_jobs, _clean_holders, _clean_claims, _clean_clusters):
        try:
            step(stack)
        except Exception as error:  # go on with the rest of the cleanup
            print(f"warning: cleanup {step.__name__}: {error}", file=sys.stderr)


def _clean_jobs(stack: Stack) -> None:
    _delete_jobs(stack, list(stack.kube_jobs))


def _clean_holders(stack: Stack) -> None:
    for name in stack.holders:
        if stack.training_status(name) == "InProgress":
            stack.sagemaker.stop_training_job(TrainingJobName=name)
    for name in stack.holders:
        stack.wait(lambda n=name: stack.training_status(n) != "Stopping", f"{name} stopped", [])


def _clean_claims(stack: Stack) -> None:
    for claim in stack.claims:
        directory = stack.claim_dir(claim)
        if directory is not None:
            shutil.rmtree(directory)  # never follows the links a container may have left


def _clean_clusters(stack: Stack) -> None:
    for arn in stack.clusters:
        stack.sagemaker.delete_cluster(ClusterName=arn)

    def listed() -> set[str]:
        return {c["ClusterArn"] for c in stack.sagemaker.list_clusters()["ClusterSummaries"]}

    stack.wait(lambda: not set(stack.clusters) & listed(), "clusters deleted", [])


# --- Main --------------------------------------------------------------------------------------

def main() -> int:
    if not __package__:
        sys.exit("run it from the repository root as: .venv/bin/python -m bench.elastic")
    options = _arguments()
    if "KUBECONFIG" not in os.environ:
        sys.exit("KUBECONFIG is not set: source the stack's env first (. .sageport/env)")
    stack = Stack(options)
    rounds: list[dict[str, float]] = []
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=options.bucket)
    try:
        create_priorities(stack)
        deadline = time.monotonic() + options.max_seconds
        for number in range(1, options.repeat + 1):
            if number > 1 and time.monotonic() > deadline:
                break
            rounds.append(one_round(stack))
            measures = ", ".join(f"{what.strip()} {rounds[-1][what]:.2f} s" for what in ORDER + BREAKDOWN)
            print(f"round {number}: {measures}", flush=True)
    finally:
        clean_up(stack)
        delete_bucket(s3, options.bucket)
    print(report(summarize(rounds), len(rounds)))
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--poll-seconds", type=float, default=0.25,
                        help="interval of the job status, records and agents' /status reads (default 0.25)")
    parser.add_argument("--phase-timeout", type=float, default=300.0,
                        help="seconds any one wait may take before the bench fails (default 300)")
    parser.add_argument("--max-seconds", type=float, default=900.0,
                        help="no round starts after this many seconds (default 900)")
    parser.add_argument("--instance-type", default="ml.g5.12xlarge",
                        help="the node's instance type, for the cluster that defines the priority "
                             "classes (default ml.g5.12xlarge)")
    options = parser.parse_args()
    if options.repeat < 1 or options.poll_seconds <= 0 or options.phase_timeout <= 0:
        parser.error("--repeat must be at least 1, --poll-seconds and --phase-timeout above 0")
    options.bucket = f"bench-elastic-{uuid.uuid4().hex[:8]}"
    return options


if __name__ == "__main__":
    sys.exit(main())
