"""SM_HP_MP_PARAMETERS and the launcher's environment, read without processes."""

import json

import pytest

torch = pytest.importorskip("torch")
from smdistributed.modelparallel.torch.config import MPConfig, load_config  # noqa: E402
from smdistributed.modelparallel.torch.launch_env import DEFAULT_MASTER_PORT, read_launch_env  # noqa: E402

OMPI = {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
        "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}


def test_the_parameters_the_sagemaker_sdk_sends_are_read():
    sent = {"partitions": 2, "microbatches": 4, "pipeline": "interleaved", "optimize": "speed", "ddp": True,
            "placement_strategy": "spread"}
    assert load_config(environ={"SM_HP_MP_PARAMETERS": json.dumps(sent)}) == MPConfig(
        2, 4, "spread", True, pipeline="interleaved", optimize="speed", memory_weight=0.2)


def test_pipeline_defaults_are_sagemakers():
    """SageMaker's parameter table: pipeline "interleaved", optimize "memory" (memory_weight 0.8,
    0.2 with "speed"), auto_partition true, default_partition 0."""
    config = load_config({"partitions": 2})
    assert (config.pipeline, config.optimize, config.memory_weight) == ("interleaved", "memory", 0.8)
    assert (config.auto_partition, config.default_partition) == (True, 0)
    manual = load_config({"partitions": 4, "auto_partition": False, "default_partition": 3,
                          "pipeline": "simple"})
    assert (manual.auto_partition, manual.default_partition, manual.pipeline) == (False, 3, "simple")
    assert load_config({"optimize": "speed", "memory_weight": 0.5}).memory_weight == 0.5


def test_defaults_without_parameters_and_pipeline_parallel_degree_as_partitions():
    assert load_config(environ={}) == MPConfig(partitions=1, microbatches=1, placement_strategy="cluster")
    assert load_config({"pipeline_parallel_degree": 4}).partitions == 4
    assert load_config({"partitions": 2, "pipeline_parallel_degree": 2}).partitions == 2


@pytest.mark.parametrize("parameters,message", [
    ({"partitions": 0}, "'partitions' must be a positive integer"),
    ({"microbatches": "2"}, "'microbatches' must be a positive integer"),
    ({"microbatches": True}, "'microbatches' must be a positive integer"),
    ({"placement_strategy": "random"}, "placement_strategy must be one of"),
    ({"ddp": "yes"}, "'ddp' must be true or false"),
    ({"partitions": 2, "pipeline_parallel_degree": 4}, "disagree"),
    ({"pipeline": "gpipe"}, "pipeline must be one of"),
    ({"optimize": "fast"}, "optimize must be one of"),
    ({"auto_partition": 1}, "'auto_partition' must be true or false"),
    ({"partitions": 2, "default_partition": 2}, "'default_partition' must be a partition index 0..1"),
    ({"memory_weight": 1.5}, "'memory_weight' must be a number"),
])
def test_invalid_parameters_are_refused(parameters, message):
    with pytest.raises(ValueError, match=message):
        load_config(parameters)


def test_invalid_json_is_refused():
    with pytest.raises(ValueError, match="SM_HP_MP_PARAMETERS is not valid JSON"):
        load_config(environ={"SM_HP_MP_PARAMETERS": "{partitions: 2"})


def test_torchrun_environment():
    env = read_launch_env({"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2",
                           "MASTER_ADDR": "algo-1", "MASTER_PORT": "1234"})
    assert (env.rank, env.world_size, env.local_rank, env.local_size) == (1, 4, 1, 2)
    assert env.init_method == "env://"
    with pytest.raises(RuntimeError, match="not LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT"):
        read_launch_env({"RANK": "1", "WORLD_SIZE": "4"})


def test_mpirun_environment_takes_the_master_from_sm_hosts_and_the_default_port():
    env = read_launch_env({**OMPI, "SM_HOSTS": '["algo-1", "algo-2"]'})
    assert (env.rank, env.world_size, env.local_rank, env.local_size) == (3, 4, 1, 2)
    assert env.init_method == f"tcp://algo-1:{DEFAULT_MASTER_PORT}"


def test_mpirun_environment_overrides_and_resourceconfig(tmp_path):
    env = read_launch_env({**OMPI, "SM_HOSTS": '["algo-1"]', "SMP_MASTER_ADDR": "10.0.0.5",
                           "SMP_MASTER_PORT": "4000"})
    assert env.init_method == "tcp://10.0.0.5:4000"
    config = tmp_path / "resourceconfig.json"
    config.write_text(json.dumps({"current_host": "algo-2", "hosts": ["algo-1", "algo-2"]}))
    assert read_launch_env(OMPI, resource_config=str(config)).master_addr == "algo-1"
    with pytest.raises(RuntimeError, match="rendezvous address comes from SMP_MASTER_ADDR"):
        read_launch_env(OMPI, resource_config=str(tmp_path / "missing.json"))


def test_without_a_launcher_the_process_is_a_world_of_one():
    env = read_launch_env({})
    assert (env.rank, env.world_size, env.local_rank, env.local_size, env.launcher) == (0, 1, 0, 1, "none")
