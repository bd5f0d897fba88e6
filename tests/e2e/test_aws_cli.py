"""The stock AWS CLI, configured only by `<data>/env`, drives training jobs."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import read_env_file
from tests.e2e.conftest import shell_job, unique_name, wait_for_status

AWS_CLI = Path(sys.executable).with_name("aws")


def aws(stack, *arguments: str, **variables: str) -> dict:
    """The CLI's JSON answer, configured by the env file (and `variables` over it)."""
    completed = subprocess.run(
        [str(AWS_CLI), *arguments, "--output", "json"],
        env={**cli_environment(stack), **variables},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(completed.stdout) if completed.stdout.strip() else {}


def cli_environment(stack) -> dict[str, str]:
    """This process's environment without its AWS settings, and the env file's."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    environment.update(read_env_file(stack.data_dir / "env"))
    return environment


def test_aws_cli_creates_describes_and_lists_a_training_job(
    stack, sagemaker, bucket, shell_algo_image, tmp_path
):
    name = unique_name("cli")
    request = tmp_path / "request.json"
    request.write_text(json.dumps(shell_job(name, shell_algo_image, bucket, "echo hi > /opt/ml/model/m")))

    created = aws(stack, "sagemaker", "create-training-job", "--cli-input-json", f"file://{request}")
    wait_for_status(sagemaker, name)  # the CLI's own waiter polls every 120 s: too slow for a test
    described = aws(stack, "sagemaker", "describe-training-job", "--training-job-name", name)
    listed = aws(stack, "sagemaker", "list-training-jobs", "--name-contains", name)

    assert created["TrainingJobArn"].endswith(f":training-job/{name}")
    assert described["TrainingJobStatus"] == "Completed"
    assert [job["TrainingJobName"] for job in listed["TrainingJobSummaries"]] == [name]
    listing = aws(stack, "s3api", "list-objects-v2", "--bucket", bucket, "--prefix", f"output/{name}/")
    assert f"output/{name}/output/model.tar.gz" in [item["Key"] for item in listing["Contents"]]
