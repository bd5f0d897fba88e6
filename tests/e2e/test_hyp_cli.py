"""AWS's HyperPod CLI (`hyp`, sagemaker-hyperpod 3.12.0, in its own virtualenv made by
scripts/hyp-venv.sh) against the live stack with the kubeconfig the stack writes: create an
elastic job, list, describe and delete it, as on an EKS cluster with the training operator."""

import os
import subprocess
import uuid
from pathlib import Path

import kubernetes
import pytest

from tests.conftest import read_env_file
from tests.e2e.egress import GUARD_DIR
from tests.e2e.test_hyperpod_jobs_api import get, wait_gone

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hyp_path() -> str:
    try:
        completed = subprocess.run([str(PROJECT_DIR / "scripts" / "hyp-venv.sh")], check=True,
                                   stdout=subprocess.PIPE, text=True, timeout=900)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"the hyp virtualenv cannot be made: {error}")
    return completed.stdout.strip()


@pytest.fixture
def hyp(stack, hyp_path, tmp_path):
    kubeconfig = read_env_file(stack.data_dir / "env")["KUBECONFIG"]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "KUBECONFIG": kubeconfig,
           "PYTHONPATH": str(GUARD_DIR)}

    def run(*args: str) -> str:
        completed = subprocess.run([hyp_path, *args], env=env, capture_output=True, text=True, timeout=120)
        output = f"{completed.stdout}\n{completed.stderr[-3000:]}"
        assert completed.returncode == 0, f"hyp {' '.join(args)}: {output}"
        return completed.stdout

    return run


@pytest.fixture(scope="module")
def jobs(stack):
    kubeconfig = read_env_file(stack.data_dir / "env")["KUBECONFIG"]
    api_client = kubernetes.config.new_client_from_config(config_file=kubeconfig)
    return kubernetes.client.CustomObjectsApi(api_client)


def test_hyp_creates_lists_describes_and_deletes_an_elastic_job(hyp, jobs):
    name, namespace = f"hyp-{uuid.uuid4().hex[:8]}", f"team-{uuid.uuid4().hex[:6]}"

    hyp("create", "hyp-pytorch-job", "--job-name", name, "--namespace", namespace,
        "--image", "sageport-test/none:latest", "--command", "[hyperpodrun, train.py]",
        "--replica-count", "1", "--max-replica-count", "2", "--elastic-replica-increment-step", "1")

    stored = get(jobs, namespace, name)
    assert stored["spec"]["elasticPolicy"]["minReplicas"] == 1
    assert stored["spec"]["elasticPolicy"]["maxReplicas"] == 2
    assert stored["spec"]["elasticPolicy"]["replicaIncrementStep"] == 1
    [group] = stored["spec"]["replicaSpecs"]
    assert (group["replicas"], group["maxReplicas"]) == (1, 2)
    assert group["template"]["spec"]["containers"][0]["command"] == ["hyperpodrun", "train.py"]
    assert name in hyp("list", "hyp-pytorch-job", "--namespace", namespace)
    described = hyp("describe", "hyp-pytorch-job", "--job-name", name, "--namespace", namespace)
    assert f"Name:           {name}" in described and f"Namespace:      {namespace}" in described

    hyp("delete", "hyp-pytorch-job", "--job-name", name, "--namespace", namespace)

    wait_gone(jobs, namespace, name)
    assert "No jobs found" in hyp("list", "hyp-pytorch-job", "--namespace", namespace)
