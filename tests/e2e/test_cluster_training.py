"""Training jobs on the test cluster (tests/e2e/cluster.py): several engines, as on several hosts,
one Sageport node each, a Docker Swarm of them.

A job of two instances whose type has as many GPUs as a node declares (one) cannot be packed on
one node: its instances run on two engines, joined by the job's overlay network (VXLAN between the
engines' namespaces), and train one model with PyTorch DDP over gloo. SageMaker uploads one
model.tar.gz per job: what the instances wrote to /opt/ml/model, together (AWS's distributed
examples save the model from rank 0 only, so the files do not clash); Sageport's job node merges
the other nodes' hand-over into that one archive (docs/operations.md, "Multi-instance jobs and
several hosts")."""
import json
import uuid
from pathlib import Path

import pytest

from tests.e2e.conftest import read_tar_gz, training_request, unique_name, wait_for_status
from tests.e2e.hosting import wait_until

pytest_plugins = ["tests.e2e.cluster"]
pytestmark = pytest.mark.cluster

DDP_SCRIPT = Path(__file__).parent / "ddp" / "train.py"
ONE_GPU = "ml.p3.2xlarge"  # each node declares one GPU (tests/e2e/cluster.py)


@pytest.fixture(scope="module")
def cluster_images(pytorch_mpi_image):
    return (pytorch_mpi_image,)


def test_a_two_instance_ddp_job_runs_on_two_engines_and_uploads_one_merged_model(cluster, pytorch_mpi_image):
    sagemaker, s3 = cluster.client("sagemaker"), cluster.client("s3")
    bucket = f"cluster-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="code/train.py", Body=DDP_SCRIPT.read_bytes())
    name = unique_name("ddp")
    request = training_request(
        name, pytorch_mpi_image, bucket,
        AlgorithmSpecification={"TrainingImage": pytorch_mpi_image, "TrainingInputMode": "File",
                                "ContainerEntrypoint": ["python3", "/opt/ml/input/data/code/train.py"]},
        ResourceConfig={"InstanceType": ONE_GPU, "InstanceCount": 2, "VolumeSizeInGB": 10},
        InputDataConfig=[{"ChannelName": "code", "DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": f"s3://{bucket}/code/",
            "S3DataDistributionType": "FullyReplicated",
        }}}],
        Environment={"CODE_BUCKET": bucket},
    )
    sagemaker.create_training_job(**request)
    arn = sagemaker.describe_training_job(TrainingJobName=name)["TrainingJobArn"]

    both = wait_until(lambda: (found := cluster.containers(arn)) and len(found) == 2 and found, timeout=120,
                      what="the containers of both instances")
    placed = {container.labels["sageport.host"]: container.engine_node for container in both}
    assert len(set(placed.values())) == 2, placed  # two engines, one instance each
    for container in both:  # each node started its own instance, on its own engine
        assert container.labels["sageport.node"] == container.engine_node

    job = wait_for_status(sagemaker, name, timeout=240)

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
