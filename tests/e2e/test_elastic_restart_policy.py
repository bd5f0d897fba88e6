"""runPolicy.restartPolicy end to end, with AWS's real `hyperpod-elastic-agent` in both replicas of
a HyperPodPyTorchJob: a replica whose worker fails is restarted at the process level (every pod
keeps its container, the agents restart the workers with the next faultCount), the next failure
past `numRestartBeforeFullJobRestart` is a full job restart (every pod created again), and a
failure that would need more than `maxFullJobRestarts` full restarts fails the job.

AWS: the HyperPod training operator guide's run-policy table ("numRestartBeforeFullJobRestart:
Maximum number of restarts at the process level before the operator restarts at the job level";
"maxFullJobRestarts: Maximum number of full job restarts before the job fails"), the CRD's status
(`restartStatus`, `latestFaultyPodInstanceList.restartType` "PLR or JLR"); elastic/restarts.py.

The replicas run a tiny script instead of torch training (no torch import: the test waits only
for the agents): each worker writes which container it runs in (a token in the container's
/tmp, kept while the container lives) and the restart count the agent gave it; rank 1 then
fails, every time."""
import json
import uuid
from pathlib import Path

from tests.e2e.conftest import unique_name
from tests.e2e.test_elastic_training import (  # noqa: F401 (fixtures)
    claim_directory,
    kube_jobs,
    status_of,
    submit,
    wait_condition,
)

CLAIM_PATH = "/claim"
FAILING_WORKER = """\
import json, os, pathlib, sys, uuid
token = pathlib.Path("/tmp/container-token")  # gone with the container, kept across its restarts
if not token.exists():
    token.write_text(uuid.uuid4().hex)
rank, restart = os.environ["RANK"], os.environ["JOB_RESTART_COUNT"]
record = pathlib.Path(os.environ["CLAIM"]) / f"rank-{rank}-restart-{restart}.json"
record.write_text(json.dumps({"container": token.read_text()}))
sys.exit(1 if rank == "1" else 0)
"""


def failing_job(name: str, image: str, claim: str) -> dict:
    container = {
        "name": "pytorch",
        "image": image,
        "command": ["hyperpodrun", "--nnodes=1", "--nproc-per-node=1", "--server-port=8080",
                    "--server-log-level=warning", f"{CLAIM_PATH}/worker.py"],
        "env": [{"name": "CLAIM", "value": CLAIM_PATH}],
        "volumeMounts": [{"name": "claim", "mountPath": CLAIM_PATH}],
    }
    return {
        "apiVersion": "sagemaker.amazonaws.com/v1",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "replicaSpecs": [{"name": "pods", "replicas": 2, "template": {"spec": {
                "containers": [container],
                "volumes": [{"name": "claim", "persistentVolumeClaim": {"claimName": claim}}],
            }}}],
            "runPolicy": {
                "jobMaxRetryCount": 10,
                "restartPolicy": {"evalPeriodSeconds": 3600, "numRestartBeforeFullJobRestart": 1,
                                  "maxFullJobRestarts": 1},
            },
        },
    }


def containers_by_restart(claim_dir: Path) -> dict[int, tuple[str, str]]:
    """{restart count: (rank 0's container token, rank 1's)} for every restart both ranks ran."""
    seen = {}
    for path in claim_dir.glob("rank-*-restart-*.json"):
        _, rank, _, restart = path.stem.split("-")
        seen.setdefault(int(restart), {})[rank] = json.loads(path.read_text())["container"]
    return {restart: (ranks["0"], ranks["1"]) for restart, ranks in seen.items() if len(ranks) == 2}


def test_failures_restart_in_place_then_the_whole_job_then_fail_the_job(
    stack, pytorch_elastic_image, kube_jobs  # noqa: F811
):
    claim = f"claim-{uuid.uuid4().hex[:8]}"
    claim_dir = claim_directory(stack, claim)
    claim_dir.mkdir(parents=True)
    (claim_dir / "worker.py").write_text(FAILING_WORKER)
    name = submit(kube_jobs, failing_job(unique_name("restarts"), pytorch_elastic_image, claim))

    failed = wait_condition(kube_jobs, name, "Failed")

    # restart 1: process level (the same containers); 2: a full job restart (new containers);
    # 3: process level again (standard restarts count from the last full one); then a fourth
    # failure would need a second full restart: Failed.
    containers = containers_by_restart(claim_dir)
    assert sorted(containers) == [0, 1, 2, 3], containers
    assert containers[1] == containers[0]
    assert set(containers[2]).isdisjoint(containers[0])
    assert containers[3] == containers[2]
    last = next(c for c in failed["conditions"] if c["type"] == "Failed")
    assert last["reason"] == "MaxFullJobRestartsReached", last
    assert failed["restartStatus"]["restartCount"] == 1
    assert failed["restartStatus"]["fullJobRestartCount"] == 1
    assert failed["latestFaultyPodInstanceList"]["faultyPodList"] == [f"{name}-pods-1"]
    assert status_of(kube_jobs, name)["restartCount"] == 3
