"""What the library does before smp.init(), and an init() that must refuse to start."""

import json

import pytest

torch = pytest.importorskip("torch")
import smdistributed.modelparallel.torch as smp  # noqa: E402


@pytest.mark.parametrize("call", [
    smp.rank, smp.size, smp.mp_rank, smp.dp_size, smp.local_rank, smp.get_mp_group, smp.barrier,
    lambda: smp.send("x", 1, smp.RankType.WORLD_RANK), lambda: smp.allgather("x", smp.WORLD),
    lambda: smp.step(lambda x: x)(torch.ones(2)), lambda: smp.DistributedModel(torch.nn.Linear(1, 1)),
])
def test_the_api_before_init_says_to_call_init(call):
    with pytest.raises(RuntimeError, match=r"smp.init\(\) must be called"):
        call()


def test_init_refuses_a_world_not_divisible_by_the_partitions(monkeypatch):
    monkeypatch.setenv("SM_HP_MP_PARAMETERS", json.dumps({"partitions": 2}))
    for name, value in {"RANK": "0", "WORLD_SIZE": "3", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "3",
                        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=r"processes \(3\) must be divisible .* partitions \(2\)"):
        smp.init()
    assert not smp.is_initialized() and not torch.distributed.is_initialized()
