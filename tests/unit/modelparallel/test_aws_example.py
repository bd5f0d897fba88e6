"""AWS's own smp v1 example, unchanged: the deep-learning-containers repository's
`smmodelparallel_pt_mnist.py` (test/sagemaker_tests/pytorch/training/resources/mnist/, Apache
License 2.0, https://github.com/aws/deep-learning-containers), run as AWS's CI ran it on every
PyTorch image: partitions 2, microbatches 4, pipeline interleaved, optimize speed, ddp, here in
one world of 4 gloo processes under torchrun. It must pass its own assertions (the DP replicas'
test losses equal, and below 0.18), save partial and full checkpoints, and resume from each.

The script is not part of this repository: set SMP_AWS_EXAMPLES_DIR to the folder that holds it.
It needs torchvision (datasets.MNIST) and torchnet (SplitDataset) importable (PYTHONPATH); the
test skips otherwise. Its MNIST is a synthetic one in MNIST's files (synthetic_mnist.py), as the
script reads it from --data-dir; it runs on the CPU through aws_example/cuda_on_cpu.py, because
the script requires CUDA."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from .aws_example import synthetic_mnist  # noqa: E402
from .conftest import LIBRARY_DIR  # noqa: E402
from .world import free_port  # noqa: E402

SCRIPT_NAME = "smmodelparallel_pt_mnist.py"
EXAMPLES = os.environ.get("SMP_AWS_EXAMPLES_DIR", "")
RUNNER = Path(__file__).parent / "aws_example" / "cuda_on_cpu.py"
# The parameters of AWS's CI (smmodelparallel_mnist_multigpu_multinode: 2 instances x 2 processes).
MP_PARAMETERS = {"partitions": 2, "microbatches": 4, "pipeline": "interleaved", "optimize": "speed",
                 "ddp": True}

pytestmark = pytest.mark.skipif(
    not (EXAMPLES and (Path(EXAMPLES) / SCRIPT_NAME).is_file()
         and importlib.util.find_spec("torchvision") and importlib.util.find_spec("torchnet")),
    reason=f"needs SMP_AWS_EXAMPLES_DIR holding {SCRIPT_NAME}, and torchvision and torchnet",
)


def run_example(workdir, *arguments):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SM_HP_MP_PARAMETERS": json.dumps(MP_PARAMETERS),
           "PYTHONPATH": os.pathsep.join([str(LIBRARY_DIR), os.environ.get("PYTHONPATH", "")])}
    completed = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "4", "--master-addr", "127.0.0.1",
         "--master-port", str(free_port()), str(RUNNER), str(Path(EXAMPLES) / SCRIPT_NAME),
         "--assert-losses", "1", "--ddp", "1", "--data-dir", "data", *arguments],
        env=env, cwd=workdir, capture_output=True, text=True, timeout=300, check=False,
    )
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-6000:]
    return completed.stdout


def test_awss_mnist_example_trains_saves_and_resumes_unchanged(tmp_path):
    # 2 x 128 training images: each DP replica reads one half, two batches of 64 per epoch.
    synthetic_mnist.write(tmp_path / "data", train_count=256, test_count=64)

    output = run_example(tmp_path, "--epochs", "2", "--save-partial-model", "--save-full-model")

    assert output.count("SMP training finished successfully") == 4
    assert sorted(p.name for p in tmp_path.glob("pt_mnist_checkpoint.pt*")) == [
        "pt_mnist_checkpoint.pt", "pt_mnist_checkpoint.pt_0_0", "pt_mnist_checkpoint.pt_1_0"]
    for checkpoint in ("--partial-checkpoint", "--full-checkpoint"):
        resumed = run_example(tmp_path, "--epochs", "1", checkpoint, "pt_mnist_checkpoint.pt")
        assert resumed.count("SMP training finished successfully") == 4
