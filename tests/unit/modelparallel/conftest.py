"""Model-parallel library tests: the library is imported from libraries/smdistributed-modelparallel
(not installed), and multi-process worlds of gloo processes on the CPU are shared per session.
Every test module skips itself when torch is missing (a conftest cannot skip)."""

import pytest

from .library_path import LIBRARY_DIR  # noqa: F401 (on sys.path now; test_aws_example uses it)


def _world(size, launcher="torchrun", **parameters):
    from .world import World  # needs torch, which only the test modules check for

    world = World(size, parameters, launcher)
    yield world
    world.close()


@pytest.fixture(scope="session")
def world4_cluster():
    yield from _world(4, partitions=2, microbatches=2, placement_strategy="cluster", ddp=True)


@pytest.fixture(scope="session")
def world4_spread():
    """Started as mpirun starts ranks: OMPI_COMM_WORLD_* and the master from SM_HOSTS."""
    yield from _world(4, launcher="mpirun", partitions=2, microbatches=2, placement_strategy="spread")


@pytest.fixture(scope="session")
def world2_dp():
    """Two replicas of one partition (pure data parallelism), two microbatches."""
    yield from _world(2, partitions=1, microbatches=2)


@pytest.fixture(scope="session")
def world2_mp():
    """One replica in two partitions, four microbatches, given as pipeline_parallel_degree."""
    yield from _world(2, pipeline_parallel_degree=2, microbatches=4)


@pytest.fixture(scope="session")
def world4_pp():
    """One replica in four partitions, four microbatches."""
    yield from _world(4, partitions=4, microbatches=4)


@pytest.fixture(scope="session")
def world8_pp_dp():
    """Two replicas, each in four partitions, two microbatches."""
    yield from _world(8, partitions=4, microbatches=2)


@pytest.fixture(scope="session")
def world1_no_launcher():
    """One process without a launcher, its parameters given to smp.init()."""
    yield from _world(1, launcher="none", partitions=1, microbatches=4)
