"""Training jobs and endpoints on the test cluster (tests/e2e/cluster.py): several engines, as on
several hosts, one Sageport node each, a Docker Swarm of them. The session's one cluster, handed
over as a fresh one.

An endpoint of two instances has one container on each of two engines (a variant's containers are
spread over the nodes). When the host of one is lost, InvokeEndpoint keeps answering: a request
routed to the lost container waits the 250 ms connect timeout and goes to the live one, and once
the node is declared lost its container is replaced on the third engine, as SageMaker replaces an
instance that stops passing its health checks while the endpoint stays InService (Developer
Guide, your-algorithms-inference-code.html, "How Your Container Should Respond to Health Check
(Ping) Requests").

The lost host then comes back: Sageport removed its engine from the swarm when it declared the
node lost, and its worker joins the new engine to the swarm again as it registers. A job of two
instances whose type has as many GPUs as a node declares (one) cannot be packed on one node: its
instances run on two engines, the returned one included, joined by the job's overlay network
(VXLAN between the engines' namespaces), and train one model with PyTorch DDP over gloo. SageMaker uploads one
model.tar.gz per job: what the instances wrote to /opt/ml/model, together (AWS's distributed
examples save the model from rank 0 only, so the files do not clash); Sageport's job node merges
the other nodes' hand-over into that one archive (docs/operations.md, "Multi-instance jobs and
several hosts")."""
import json
import uuid
from pathlib import Path

import pytest
from botocore.exceptions import BotoCoreError, ClientError

from tests.e2e import engines
from tests.e2e.conftest import read_tar_gz, training_request, unique_name, wait_for_status
from tests.e2e.hosting import NO_RETRIES, Hosting, wait_for_endpoint, wait_until
from tests.e2e.test_two_nodes import hostnames_answering

pytest_plugins = ["tests.e2e.cluster", "tests.e2e.hosting_fixtures"]
pytestmark = pytest.mark.cluster

DDP_SCRIPT = Path(__file__).parent / "ddp" / "train.py"
ONE_GPU = "ml.p3.2xlarge"  # each node declares one GPU (tests/e2e/cluster.py)


@pytest.fixture(scope="module")
def cluster_images(pytorch_mpi_image, probe_image):
    return (pytorch_mpi_image, probe_image)


def start_ddp_job(cluster, image: str, environment: dict | None = None, **overrides) -> tuple[str, str]:
    """A two-instance DDP job of ddp/train.py (its code in a bucket of its own): (name, bucket)."""
    sagemaker, s3 = cluster.client("sagemaker"), cluster.client("s3")
    bucket = f"cluster-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="code/train.py", Body=DDP_SCRIPT.read_bytes())
    name = unique_name("ddp")
    request = training_request(
        name, image, bucket,
        AlgorithmSpecification={"TrainingImage": image, "TrainingInputMode": "File",
                                "ContainerEntrypoint": ["python3", "/opt/ml/input/data/code/train.py"]},
        ResourceConfig={"InstanceType": ONE_GPU, "InstanceCount": 2, "VolumeSizeInGB": 10},
        InputDataConfig=[{"ChannelName": "code", "DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/code/",
            "S3DataDistributionType": "FullyReplicated",
        }}}],
        Environment={"CODE_BUCKET": bucket, **(environment or {})},
        **overrides,
    )
    sagemaker.create_training_job(**request)
    return name, bucket


def test_an_endpoint_spread_over_engines_answers_through_the_loss_of_one_and_is_replaced_on_another(
    cluster, probe_image
):
    sagemaker = cluster.client("sagemaker")
    runtime = cluster.client("sagemaker-runtime", config=NO_RETRIES)
    endpoint = Hosting(sagemaker).probe_endpoint(probe_image, count=2)
    arn = sagemaker.describe_endpoint(EndpointName=endpoint)["EndpointArn"]
    serving = {container.engine_node: container for container in cluster.containers(arn)}
    assert len(serving) == 2, serving  # one container on each of two engines
    hostnames = {node: container.attrs["Config"]["Hostname"] for node, container in serving.items()}
    assert hostnames_answering(runtime, endpoint) == set(hostnames.values())  # both, across engines
    lost, survivor = sorted(serving)
    (spare,) = {node.name for node in cluster.nodes} - set(serving)

    cluster.lose(lost)

    failures = []

    def replaced_and_answering() -> bool:
        """Invoked all along (each request must be answered); true once the replacement on the
        spare engine answers beside the survivor."""
        try:
            seen = hostnames_answering(runtime, endpoint, attempts=10)
        except (ClientError, BotoCoreError) as error:  # counted, then asserted none
            failures.append(repr(error))
            return False
        on_spare = [c for c in cluster.containers(arn) if c.engine_node == spare and c.status == "running"]
        return bool(on_spare) and seen == {hostnames[survivor], on_spare[0].attrs["Config"]["Hostname"]}

    wait_until(replaced_and_answering, timeout=120, what="a replacement on the spare engine to answer")
    assert failures == []  # every request was answered, through the loss
    assert wait_for_endpoint(sagemaker, endpoint)["EndpointStatus"] == "InService"


def test_a_lost_host_back_rejoins_the_swarm_by_itself_and_a_ddp_job_over_two_engines_trains_on_it(
    cluster, pytorch_mpi_image
):
    """The host the test above lost (lost here when run alone) was removed from the swarm by
    Sageport; back as a new engine, its worker joins it to the swarm again (no hand on the swarm:
    `Cluster.revive` restarts the engine and the worker only), and a job's instance there trains
    over the overlay with one on another engine. The scheduler spreads a job over the nodes that
    hold the most of it, by name among equals (training/scheduler.py): the first two, and the
    lost one is the first of the two the endpoint was on, so one of them."""
    sagemaker, s3 = cluster.client("sagemaker"), cluster.client("s3")
    returning = next((node for node in cluster.nodes if node.lost), None)
    if returning is None:
        returning = cluster.nodes[0]
        cluster.lose(returning.name)
    live = next(node.engine for node in cluster.nodes if not node.lost)
    # Declared lost, then removed from the swarm by a sweep on a manager (capacity/swarm.py).
    wait_until(lambda: engines.swarm_ready(live, len(cluster.nodes) - 1), timeout=90,
               what=f"{returning.name}'s engine to be removed from the swarm")
    cluster.revive(returning)
    assert returning.name in sorted(node.name for node in cluster.nodes)[:2]

    name, bucket = start_ddp_job(cluster, pytorch_mpi_image)
    arn = sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobArn"]
    both = wait_until(lambda: (found := cluster.containers(arn)) and len(found) == 2 and found, timeout=120,
                      what="the containers of both instances")
    placed = {container.labels["sageport.host"]: container.engine_node for container in both}
    assert len(set(placed.values())) == 2 and returning.name in placed.values(), placed
    for container in both:  # each node started its own instance, on its own engine
        assert container.labels["sageport.node"] == container.engine_node
    # Bounded by the script's rendezvous wait (the instances may start a minute apart on two busy
    # cores) and its training, a few seconds.
    job = wait_for_status(sagemaker, name, timeout=360)

    assert job["TrainingJobStatus"] == "Completed", job.get("FailureReason")
    model = read_tar_gz(s3, bucket, f"output/{name}/output/model.tar.gz")
    assert sorted(model) == ["model.pt", "rank-0.json", "rank-1.json"]  # one archive, both instances'
    ranks = [json.loads(model[f"rank-{rank}.json"]) for rank in (0, 1)]
    assert [(r["host"], r["world_size"]) for r in ranks] == [("algo-1", 2), ("algo-2", 2)]
    # DDP averaged the gradients over the overlay: both ranks ended with the same parameters,
    # though each trained on its own data.
    assert ranks[0]["parameters"] == ranks[1]["parameters"]
    assert all(r["loss"] < 1.0 for r in ranks), ranks
    # Each container reached S3 and the API (its role credentials) through its engine's gateway.
    assert [r["code_objects_seen"] for r in ranks] == [1, 1]
    wait_until(lambda: not cluster.containers(arn), timeout=60, what="the job's containers to be removed")
