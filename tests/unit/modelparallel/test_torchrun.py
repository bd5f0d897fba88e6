"""A script run by the real torchrun (whose agent may host the rendezvous store itself)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from .conftest import LIBRARY_DIR  # noqa: E402
from .world import free_port  # noqa: E402

SCRIPT = Path(__file__).with_name("torchrun_script.py")


def test_a_script_launched_by_torchrun_joins_the_world_and_communicates(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(LIBRARY_DIR), "OMP_NUM_THREADS": "1",
           "SM_HP_MP_PARAMETERS": json.dumps({"partitions": 2, "placement_strategy": "cluster"})}
    completed = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
         "--master-addr", "127.0.0.1", "--master-port", str(free_port()), str(SCRIPT)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=90, check=False,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    reports = [json.loads((tmp_path / f"report-{rank}.json").read_text()) for rank in range(2)]
    assert reports == [
        {"rank": 0, "size": 2, "mp_rank": 0, "dp_rank": 0, "local_rank": 0, "mp_allgather": [0, 1],
         "received": None},
        {"rank": 1, "size": 2, "mp_rank": 1, "dp_rank": 0, "local_rank": 1, "mp_allgather": [0, 1],
         "received": "from rank 0"},
    ]
