"""The elastic-training image on its own (no stack): two replicas, each a container running AWS's
elastic agent (`hyperpodrun`, the image's default command), driven over the agent's HTTP API as
HyperPod's operator drives them, through the agents' ports published on 127.0.0.1. The job
starts on two replicas, scales down to one and up to two again, each time with a graceful stop
(the example saves a checkpoint and exits) and a /start of the new world, which resumes from that
checkpoint: every sample is trained exactly once. `ElasticAgent`, `start_world` and `stop_world`
are the minimal driving sequence an operator needs."""
import json
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest
from django.conf import settings

from runtime import labels

AGENT_PORT = "8080/tcp"
MASTER_PORT = 29500  # the workers' TCPStore, on the rank-0 replica
CONTAINER_CHECKPOINT_DIR = "/opt/ml/checkpoints"  # the example's default --checkpoint-dir
TEST_LABEL = "sageport.test"  # what this test's containers and network are removed by
HTTP_TIMEOUT_SECONDS = 10
POLL_SECONDS = 0.25
READY_TIMEOUT_SECONDS = 120  # two containers importing torch at once on a small machine
# What /stop gives the workers before SIGKILL: far longer than the test waits for `ready`, so a
# worker that does not exit by itself (e.g. hangs while tearing down gloo) fails the test.
GRACEFUL_STOP_TIMEOUT_SECONDS = 600
STOPPED_TIMEOUT_SECONDS = 90
COMPLETED_TIMEOUT_SECONDS = 180
EXIT_TIMEOUT_SECONDS = 60
# One sample per rank per step, 50 ms apart: the data would last 50 steps on two replicas, 100 on
# one, while the test scales the job a few steps into each world (its graceful stop lands two or
# three steps after the fifth it waits for, even with the machine loaded twenty times over); what
# is left (some 80 samples) is the last world's to train, within COMPLETED_TIMEOUT_SECONDS.
TOTAL_SAMPLES = 100
CHECKPOINT_EVERY = 4
STEPS_BEFORE_SCALING = CHECKPOINT_EVERY + 1  # a periodic checkpoint precedes the first elastic one
TRAINING_ENV = {
    "NNODES": "2",  # the agent reads it at startup; the world's size comes with /start
    "HYPERPOD_SIGNAL_COORDINATION": "distributed",  # elastic_event_detected() agrees across ranks
    "TOTAL_SAMPLES": str(TOTAL_SAMPLES),
    "BATCH_PER_RANK": "1",
    "STEP_SECONDS": "0.05",
    "CHECKPOINT_EVERY": str(CHECKPOINT_EVERY),
}


class ElasticAgent:
    """One replica's elastic agent, reached at its published port on 127.0.0.1. Every POST carries
    a JSON body with `Content-Type: application/json`: without the header FastAPI does not parse
    the body and the agent answers 500."""

    def __init__(self, port: int):
        self.base_url = f"http://127.0.0.1:{port}"

    def status(self) -> dict:
        with urllib.request.urlopen(self.base_url + "/status", timeout=HTTP_TIMEOUT_SECONDS) as response:
            return json.load(response)

    def _post(self, path: str, body: dict) -> None:
        request = urllib.request.Request(
            self.base_url + path, data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_SECONDS) as response:
            assert response.status == 200, f"POST {path}: {response.status}"

    def start(self, rank: int, nnodes: int, master_addr: str, fault_count: int) -> None:
        """Becomes `running` at once; the workers start on the agent's next monitor tick with
        RANK, WORLD_SIZE (nnodes x processes per node), MASTER_ADDR/PORT and
        TORCHELASTIC_RESTART_COUNT = fault_count."""
        self._post("/start", {
            "rank": rank, "nnodes": nnodes, "faultCount": fault_count,
            "master_addr": master_addr, "master_port": MASTER_PORT,
        })

    def stop_gracefully(self) -> None:
        """SIGUSR1 to the workers (the elastic event), SIGKILL after the timeout; `ready` again
        once they are gone."""
        self._post("/stop", {"is_graceful": True, "timeout": GRACEFUL_STOP_TIMEOUT_SECONDS})

    def shutdown(self) -> None:
        self._post("/shutdown", {})

    def wait_for(self, wanted: str, timeout: float) -> dict:
        """Polls /status until it says `wanted`; connection errors (server not up yet) are retried,
        `faulted` ends the wait at once."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.status()
            except (urllib.error.URLError, ConnectionError):
                last = None
            else:
                if last["status"] == wanted:
                    return last
                assert last["status"] != "faulted", f"{self.base_url} faulted: {last}"
            time.sleep(POLL_SECONDS)
        raise AssertionError(f"{self.base_url} not {wanted} within {timeout}s; last status: {last}")


@dataclass(frozen=True)
class Replica:
    container: docker.models.containers.Container
    alias: str  # its name on the job's network: rank 0's is the workers' MASTER_ADDR
    agent: ElasticAgent


@pytest.fixture
def checkpoint_dir(tmp_path) -> Path:
    """Shared by both replicas, as a job's shared file system would be."""
    return tmp_path / "checkpoints"


@pytest.fixture
def replicas(docker_engine, pytorch_elastic_image, checkpoint_dir) -> Iterator[list[Replica]]:
    """Two containers of the image on their own bridge network, each with the agent's port
    published on 127.0.0.1; removed (with the network) by label at the end."""
    checkpoint_dir.mkdir()
    test_id = uuid.uuid4().hex[:12]
    owned = {labels.STACK: settings.SAGEPORT_STACK_ID, TEST_LABEL: f"elastic-image-{test_id}"}
    network = docker_engine.networks.create(
        f"sageport-elastic-image-{test_id}", driver="bridge", labels=owned
    )
    try:
        yield [
            start_replica(
                docker_engine, pytorch_elastic_image, network.name, f"replica-{index}", owned, checkpoint_dir
            )
            for index in range(2)
        ]
    finally:
        selector = {"label": f"{TEST_LABEL}={owned[TEST_LABEL]}"}
        for container in docker_engine.containers.list(all=True, filters=selector):
            container.remove(force=True)
        for leftover in docker_engine.networks.list(filters=selector):
            leftover.remove()


def start_replica(engine, image: str, network: str, alias: str, owned: dict, checkpoint_dir: Path) -> Replica:
    container = engine.containers.run(
        image, detach=True, labels=owned, environment=TRAINING_ENV,
        network=network, networking_config={network: engine.api.create_endpoint_config(aliases=[alias])},
        ports={AGENT_PORT: ("127.0.0.1", None)},
        volumes={str(checkpoint_dir): {"bind": CONTAINER_CHECKPOINT_DIR, "mode": "rw"}},
    )
    container.reload()
    port = int(container.ports[AGENT_PORT][0]["HostPort"])
    return Replica(container=container, alias=alias, agent=ElasticAgent(port))


def read_records(checkpoint_dir: Path) -> dict[str, list[dict]]:
    """The example's records, by file name (one file per worker process)."""
    return {
        path.name: [json.loads(line) for line in path.read_text().splitlines()]
        for path in sorted((checkpoint_dir / "records").glob("*.jsonl"))
    }


def wait_for_steps(checkpoint_dir: Path, world_size: int, steps: int, timeout: float) -> None:
    """Until every rank of a world of `world_size` has recorded `steps` training steps in it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = Counter(
            line["rank"] for lines in read_records(checkpoint_dir).values() for line in lines
            if "samples" in line and line["world_size"] == world_size
        )
        if all(done[rank] >= steps for rank in range(world_size)):
            return
        time.sleep(POLL_SECONDS)
    raise AssertionError(f"not {steps} steps at world size {world_size} within {timeout}s")


def start_world(replicas: list[Replica], fault_count: int) -> None:
    """/start to every replica of the new world: ranks in order, the first one's alias as
    MASTER_ADDR (the others reach it by that name on the network)."""
    for rank, replica in enumerate(replicas):
        replica.agent.start(
            rank=rank, nnodes=len(replicas), master_addr=replicas[0].alias, fault_count=fault_count
        )
    assert {replica.agent.status()["status"] for replica in replicas} == {"running"}


def stop_world(replicas: list[Replica]) -> None:
    """A graceful stop to every agent of the world; the example checkpoints and exits 0, and each
    agent is `ready` again (for a /start in the next world)."""
    for replica in replicas:
        replica.agent.stop_gracefully()
    for replica in replicas:
        replica.agent.wait_for("ready", STOPPED_TIMEOUT_SECONDS)


def test_a_job_scaled_down_and_up_again_trains_every_sample_exactly_once(replicas, checkpoint_dir):
    first, second = replicas
    for replica in replicas:
        replica.agent.wait_for("ready", READY_TIMEOUT_SECONDS)

    # Each new world is a new attempt: faultCount 1, then 2 (its workers see
    # TORCHELASTIC_RESTART_COUNT = faultCount and log to attempt_<faultCount>/). Repeating 0 works
    # as well, but presents every world as the job's first attempt.
    start_world([first, second], fault_count=0)
    wait_for_steps(checkpoint_dir, world_size=2, steps=STEPS_BEFORE_SCALING, timeout=READY_TIMEOUT_SECONDS)
    stop_world([first, second])

    start_world([first], fault_count=1)
    wait_for_steps(checkpoint_dir, world_size=1, steps=STEPS_BEFORE_SCALING, timeout=READY_TIMEOUT_SECONDS)
    assert second.agent.status()["status"] == "ready"  # left out of this world, it just waits
    stop_world([first])

    start_world([first, second], fault_count=2)
    for rank, replica in enumerate(replicas):
        assert replica.agent.wait_for("completed", COMPLETED_TIMEOUT_SECONDS)["assigned_rank"] == str(rank)
    for replica in replicas:
        replica.agent.shutdown()
    for replica in replicas:
        assert replica.container.wait(timeout=EXIT_TIMEOUT_SECONDS)["StatusCode"] == 0
        assert "Elastic scaling event detected. Checkpoint saved." in replica.container.logs().decode()

    records = read_records(checkpoint_dir)
    lines = [line for file_lines in records.values() for line in file_lines]
    steps = [line for line in lines if "samples" in line]
    assert sorted(sample for line in steps for sample in line["samples"]) == list(range(TOTAL_SAMPLES))

    # Two elastic events: at step `down` (both ranks), at step `up` (the one rank).
    elastic = sorted(
        (line["step"], line["rank"], line["checkpoint"]) for line in lines if line.get("event") == "elastic"
    )
    down, up = elastic[0][0], elastic[-1][0]
    assert elastic == [
        (down, 0, checkpoint_of(down)), (down, 1, checkpoint_of(down)), (up, 0, checkpoint_of(up))
    ]
    assert down > CHECKPOINT_EVERY  # so the resume at `down` took the newest of two checkpoints
    assert (checkpoint_dir / f"step_{CHECKPOINT_EVERY}/.metadata").is_file()

    last = max(line["step"] for line in steps)
    assert sorted((line["step"], line["world_size"], line["rank"]) for line in steps) == (
        [(step, 2, rank) for step in range(1, down + 1) for rank in (0, 1)]
        + [(step, 1, 0) for step in range(down + 1, up + 1)]
        + [(step, 2, rank) for step in range(up + 1, last + 1) for rank in (0, 1)]
    )
    started = sorted(
        (line["step"], line["world_size"], line["rank"], line["checkpoint"])
        for line in lines if line.get("event") == "started"
    )
    assert started == [
        (0, 2, 0, None), (0, 2, 1, None),
        (down, 1, 0, checkpoint_of(down)),
        (up, 2, 0, checkpoint_of(up)), (up, 2, 1, checkpoint_of(up)),
    ]
    completed = sorted((line["rank"], line["step"]) for line in lines if line.get("event") == "completed")
    assert completed == [(0, last), (1, last)]
    assert sorted(name.rsplit("-", 1)[0] for name in records) == [
        "rank-0-restart-0", "rank-0-restart-1", "rank-0-restart-2", "rank-1-restart-0", "rank-1-restart-2",
    ]


def checkpoint_of(step: int) -> str:
    return f"{CONTAINER_CHECKPOINT_DIR}/step_{step}"


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"TOTAL_SAMPLES": "0"}, "argument --total-samples: must be a positive integer, not '0'"),
        ({"STEP_SECONDS": "nan"}, "argument --step-seconds: must be a number of seconds >= 0, not 'nan'"),
    ],
    ids=["total-samples", "step-seconds"],
)
def test_a_bad_setting_stops_the_script_before_training_with_its_reason(
    docker_engine, pytorch_elastic_image, environment, message
):
    container = docker_engine.containers.run(
        pytorch_elastic_image, ["python3", "/opt/ml/code/train.py"], detach=True, network_mode="none",
        labels={labels.STACK: settings.SAGEPORT_STACK_ID}, environment=environment,
    )
    try:
        status = container.wait(timeout=EXIT_TIMEOUT_SECONDS)["StatusCode"]
        assert status == 2  # argparse's usage error, before any process group is set up
        assert message in container.logs().decode()
    finally:
        container.remove(force=True)
