"""Unmodified SageMaker code needs nothing but Sageport: the SDK recipes of docs/clients.md and AWS's
bring-your-own-container notebook run with the stack's env file as their only configuration, in
processes whose every attempt to resolve or reach a host other than loopback is refused and
recorded (the egress guard, tests/e2e/egress_guard/sitecustomize.py). Each test counts those
attempts; the goal is none (issue 23: "0 attempts to leave the machine for every README recipe"; they
live in docs/clients.md now).

Nothing is faked in these processes: the SDKs, boto3 and botocore find every endpoint in the env
file (`AWS_ENDPOINT_URL_<SERVICE>`, botocore's service-specific endpoint variables,
https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html) or make the attempt the
guard records."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devstack.stack import PROJECT_DIR
from tests.e2e.egress import GuardedRunner
from tests.e2e.sdk import ROLE
from tests.e2e.test_script_mode import CODE_DIR, SDK_V3_SCRIPT
from tests.e2e.test_sts_iam import SDK_V3_ROLE_SCRIPT

pytest_plugins = ["tests.e2e.hosting_fixtures"]  # serve_image

RECIPES = Path(__file__).parent / "egress_recipes"
TRAIN_CSV = PROJECT_DIR / "examples" / "linear_regression" / "train.csv"


@pytest.fixture
def run_guarded(stack, tmp_path) -> GuardedRunner:
    """The SDKs' fixed waits (30 s before each DescribeEndpoint, ...) pass in well under a second:
    what the recipes call and print stays the same (egress_guard/skip_ahead_clock.py)."""
    return GuardedRunner(stack.data_dir / "env", tmp_path, skip_ahead_sleeps=True)


def test_the_guard_refuses_and_records_what_would_leave(tmp_path):
    """The guard itself: host names and IP literals refused and recorded, loopback let through."""
    env_file = tmp_path / "env"
    env_file.write_text("")
    program = (
        "import socket, urllib.request\n"
        "assert socket.getaddrinfo('127.0.0.1', 9) and socket.gethostbyname('localhost')\n"
        "for target in ('http://sts.amazonaws.com/', 'http://169.254.169.254/latest/api/token'):\n"
        "    try:\n"
        "        urllib.request.urlopen(target, timeout=1)\n"
        "    except OSError:\n"
        "        pass\n"
        "try:\n"
        "    socket.socket().connect(('192.0.2.1', 443))\n"
        "except OSError:\n"
        "    pass\n"
        "assert socket.socket(socket.AF_INET6).connect_ex(('2001:db8::1', 80, 0, 0)) != 0\n"
    )

    run = GuardedRunner(env_file, tmp_path)(sys.executable, "-c", program)

    assert run.completed.returncode == 0, run.report()
    assert [(attempt["call"], attempt["host"], attempt["port"]) for attempt in run.attempts] == [
        ("getaddrinfo", "sts.amazonaws.com", 80),
        ("getaddrinfo", "169.254.169.254", 80),
        ("connect", "192.0.2.1", 443),
        ("connect_ex", "2001:db8::1", 80),
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
    run_guarded, toolkit_image, sdk_v3_python
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
    local engine has it, so Sageport uses it as it is (docs/images.md)."""
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
    # Cell 26 prints one prediction a line, after deploy's progress marks ("-" ... "!").
    lines = run.completed.stdout.splitlines()
    deployed = next(index for index, line in enumerate(lines) if "!" in line)
    printed = lines[deployed : deployed + 5]
    predictions = [float(line.rpartition("!")[2]) for line in printed]
    rows = [[float(value) for value in line.split(",")] for line in TRAIN_CSV.read_text().splitlines()]
    assert predictions == pytest.approx([rows[i][-1] for i in (0, 1, 3, 4, 6)]), printed  # the cells' rows
    # Cell 31 prints the batch transform's output: a prediction for every training row, in order.
    transformed = run.completed.stdout.split("Transform results: \n", 1)[1].split()
    assert [float(value) for value in transformed] == pytest.approx([row[-1] for row in rows]), transformed
    assert run.attempts == [], run.report()


def test_the_sdk_v3s_own_role_lookup_stays_on_the_machine(run_guarded, stack, sdk_v3_python):
    """What ModelTrainer does without `role=` (sagemaker.core.helper.iam_role_resolver): plain
    `sts` and `iam` clients, which AWS_ENDPOINT_URL_STS/_IAM point at the stack."""
    run = run_guarded(sdk_v3_python, "-c", SDK_V3_ROLE_SCRIPT)

    assert run.completed.returncode == 0, run.report()
    assert run.completed.stdout.split()[-1] == f"arn:aws:iam::{stack.account_id}:role/SageMakerRole"
    assert run.attempts == [], run.report()


@pytest.mark.parametrize("sdk", ["v2", "v3"])
def test_get_execution_role_outside_a_notebook_instance_asks_aws_sts_and_nothing_else(
    run_guarded, stack, sdk, request
):
    """Both SDKs build get_caller_identity_arn's STS client with the regional AWS endpoint they
    name themselves (`endpoint_url=sts_regional_endpoint(region)`), and botocore prefers an
    explicit endpoint_url to AWS_ENDPOINT_URL_STS: no variable or config keeps this one call on
    the machine (docs/clients.md, "Nothing leaves the machine"; the SDK's `create_loader()` searches only
    ~/.aws/models and botocore's package for that name, never AWS_DATA_PATH). Under the guard
    the call fails; with a network it reaches AWS with Sageport's key and fails there. What must
    hold: that call is the only one, nothing else tries to leave. The recipes of docs/clients.md pass the
    role ARN instead."""
    python = sys.executable if sdk == "v2" else request.getfixturevalue("sdk_v3_python")

    run = run_guarded(python, str(RECIPES / "get_execution_role.py"))

    assert run.completed.returncode != 0, run.report()
    destinations = {(attempt["host"], attempt["port"]) for attempt in run.attempts}
    assert destinations == {(f"sts.{stack.region}.amazonaws.com", 443)}, run.report()
    assert all("get_caller_identity_arn" in attempt["stack"][0] for attempt in run.attempts), run.report()


def test_the_notebooks_build_and_push_cell_stays_on_the_machine_where_sageport_refuses_ecr(
    run_guarded, stack
):
    """Part 1's AWS CLI calls: STS answers the account (AWS_ENDPOINT_URL_STS); ECR, which Sageport
    does not serve, reaches Sageport through the env file's global AWS_ENDPOINT_URL (botocore's
    variable for every service without its own) and is refused there, naming the operation, instead
    of carrying the key to AWS. The image is tagged locally instead (the `byo_image` fixture)."""
    run = run_guarded("sh", str(RECIPES / "build_and_push_aws_calls.sh"))

    assert f"fullname: {stack.account_id}.dkr.ecr." in run.completed.stdout, run.report()
    assert "(UnknownOperationException) when calling the CreateRepository operation" in run.completed.stderr
    assert "'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken'" in run.completed.stderr
    assert run.attempts == [], run.report()
