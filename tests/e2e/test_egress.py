"""Unmodified SageMaker code needs nothing but Sageport: the README's SDK recipes and AWS's
bring-your-own-container notebook run with the stack's env file as their only configuration, in
processes whose every attempt to resolve or reach a host other than loopback is refused and
recorded (the egress guard, tests/e2e/egress_guard/sitecustomize.py). Each test counts those
attempts; the goal is none (issue 23: "0 attempts to leave the machine for every README recipe").

Nothing is faked in these processes: the SDKs, boto3 and botocore find every endpoint in the env
file (`AWS_ENDPOINT_URL_<SERVICE>`, botocore's service-specific endpoint variables,
https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html) or make the attempt the
guard records."""

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from devstack.stack import PROJECT_DIR
from tests.conftest import read_env_file
from tests.e2e.sdk import ROLE
from tests.e2e.test_script_mode import CODE_DIR, SDK_V3_SCRIPT, sdk_v3_python  # noqa: F401 (a fixture)

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # serve_image

GUARD_DIR = Path(__file__).parent / "egress_guard"
RECIPES = Path(__file__).parent / "egress_recipes"
TRAIN_CSV = PROJECT_DIR / "examples" / "linear_regression" / "train.csv"


@dataclass
class GuardedRun:
    completed: subprocess.CompletedProcess
    attempts: list[dict]  # what the guard refused, in order

    def report(self) -> str:
        destinations = sorted({f"{a['host']}:{a['port']}" for a in self.attempts})
        return (f"{len(self.attempts)} attempts to leave the machine {destinations}\n"
                + "\n".join(json.dumps(attempt) for attempt in self.attempts)
                + f"\n--- stdout ---\n{self.completed.stdout[-3000:]}"
                + f"\n--- stderr ---\n{self.completed.stderr[-3000:]}")


@pytest.fixture
def run_guarded(stack, tmp_path):
    """Run a Python program with the env file's variables only (a fresh HOME: no AWS or SDK
    configuration of this machine's user), under the egress guard."""
    log = tmp_path / "egress.jsonl"
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **read_env_file(stack.data_dir / "env"),
        "PATH": os.environ["PATH"], "HOME": str(home),
        "PYTHONPATH": str(GUARD_DIR), "SAGEPORT_EGRESS_LOG": str(log),
    }

    def run(python: str, *args: str, cwd: Path = PROJECT_DIR) -> GuardedRun:
        completed = subprocess.run(
            [python, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=480
        )
        attempts = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        log.unlink(missing_ok=True)
        run = GuardedRun(completed, attempts)
        print(f"{Path(args[0]).name if args[0] != '-c' else 'script'}: {run.report()}")
        return run

    return run


def test_the_guard_refuses_and_records_what_would_leave(run_guarded):
    """The guard itself: a host name and an IP literal refused and recorded, loopback served."""
    program = (
        "import socket, urllib.request\n"
        "assert socket.getaddrinfo('127.0.0.1', 9)\n"
        "for target in ('http://sts.amazonaws.com/', 'http://169.254.169.254/latest/api/token'):\n"
        "    try:\n"
        "        urllib.request.urlopen(target, timeout=1)\n"
        "    except OSError:\n"
        "        pass\n"
        "assert socket.socket().connect_ex(('192.0.2.1', 443)) != 0\n"
    )

    run = run_guarded(sys.executable, "-c", program)

    assert run.completed.returncode == 0, run.report()
    assert [(a["call"], a["host"], a["port"]) for a in run.attempts] == [
        ("getaddrinfo", "sts.amazonaws.com", 80),
        ("getaddrinfo", "169.254.169.254", 80),
        ("connect_ex", "192.0.2.1", 443),
    ]


def test_the_readme_sdk_v2_recipe_fits_deploys_and_predicts_without_leaving_the_machine(
    run_guarded, python_image, serve_image
):
    run = run_guarded(sys.executable, str(RECIPES / "readme_sdk_v2.py"), python_image, serve_image)

    assert run.completed.returncode == 0, run.report()
    assert "prediction:" in run.completed.stdout
    assert run.attempts == [], run.report()


def test_the_readme_script_mode_recipe_fits_and_attaches_without_leaving_the_machine(
    run_guarded, toolkit_image
):
    run = run_guarded(sys.executable, str(RECIPES / "readme_script_mode.py"), toolkit_image, str(CODE_DIR))

    assert run.completed.returncode == 0, run.report()
    assert "training on algo-1 with lr=0.5" in run.completed.stdout
    assert run.attempts == [], run.report()


def test_the_sdk_v3_model_trainer_recipe_trains_without_leaving_the_machine(
    run_guarded, toolkit_image, sdk_v3_python  # noqa: F811 (the fixture imported above)
):
    """ModelTrainer.train looks the role up in IAM (SimulatePrincipalPolicy, GetRole) even with
    SAGEMAKER_VALIDATE_ROLE=false: AWS_ENDPOINT_URL_IAM keeps those lookups on Sageport."""
    run = run_guarded(sdk_v3_python, "-c", SDK_V3_SCRIPT, toolkit_image, str(CODE_DIR), ROLE)

    assert run.completed.returncode == 0, run.report()
    assert run.attempts == [], run.report()


BYO_NAME = "sagemaker-decision-trees"  # the notebook's algorithm_name
# One image that trains (`train`) and serves (`serve`), as the notebook's image does: the
# linear-regression example's programs, the data in the notebook's `training` channel.
BYO_DOCKERFILE = """
FROM {serve_image}
COPY train.py /opt/program/train.py
COPY byo.sh /opt/program/byo.sh
ENTRYPOINT ["/bin/sh", "/opt/program/byo.sh"]
"""
BYO_ENTRYPOINT = """
case "$1" in
train) ln -s training /opt/ml/input/data/train && exec python3 /opt/program/train.py "$@" ;;
*) exec python3 /opt/program/serve.py "$@" ;;
esac
"""


@pytest.fixture(scope="module")
def byo_image(stack, serve_image, tmp_path_factory) -> str:
    """The notebook's image, under the ECR name its cells compute from STS and the region: the
    local engine has it, so Sageport uses it as it is (README "Images")."""
    context = tmp_path_factory.mktemp("byo")
    (context / "Dockerfile").write_text(BYO_DOCKERFILE.format(serve_image=serve_image))
    (context / "byo.sh").write_text(BYO_ENTRYPOINT)
    shutil.copy(PROJECT_DIR / "examples" / "linear_regression" / "train.py", context / "train.py")
    tag = f"{stack.account_id}.dkr.ecr.{stack.region}.amazonaws.com/{BYO_NAME}:latest"
    subprocess.run(["docker", "build", "-q", "-t", tag, str(context)], check=True, capture_output=True)
    return tag


def test_the_bring_your_own_container_notebook_runs_without_leaving_the_machine(
    run_guarded, byo_image, sagemaker, tmp_path
):
    (tmp_path / "data").mkdir()
    shutil.copy(TRAIN_CSV, tmp_path / "data" / "train.csv")

    run = run_guarded(sys.executable, str(RECIPES / "scikit_bring_your_own.py"), cwd=tmp_path)

    assert run.completed.returncode == 0, run.report()
    [job] = sagemaker.list_training_jobs(SortBy="CreationTime", SortOrder="Descending", MaxResults=1)[
        "TrainingJobSummaries"]
    described = sagemaker.describe_training_job(TrainingJobName=job["TrainingJobName"])
    assert described["AlgorithmSpecification"]["TrainingImage"] == byo_image
    predictions = [float(line) for line in run.completed.stdout.split() if _is_number(line)]
    assert len(predictions) == 5, run.completed.stdout
    assert run.attempts == [], run.report()


def test_get_execution_role_outside_a_notebook_instance(run_guarded, stack):
    run = run_guarded(sys.executable, str(RECIPES / "get_execution_role.py"))

    assert run.completed.returncode == 0, run.report()
    assert f"role: arn:aws:iam::{stack.account_id}:role/SageMakerRole" in run.completed.stdout
    assert run.attempts == [], run.report()


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
