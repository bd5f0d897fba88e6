"""A container job's instance metrics, as SageMaker publishes them ("Monitor Amazon SageMaker with
Amazon CloudWatch", Processing Job, Training Job and Batch Transform Job Instance Metrics):
CPUUtilization, MemoryUtilization, DiskUtilization (not for batch transform), GPUUtilization and
GPUMemoryUtilization, unit Percent, in /aws/sagemaker/ProcessingJobs (…/TrainingJobs,
…/TransformJobs) under the one dimension Host=<job>/<host>, reported at one-minute intervals;
CPU and GPU values are the cores' (GPUs') percentages added up, 0-400% for four."""
from datetime import UTC, datetime

import pytest

from batchtransform.kind import TRANSFORM
from capacity import gpu_usage
from capacity.gpu_usage import GpuUse
from jobs import instance_metrics
from jobs.identity import JobIdentity, JobKind
from jobs.workspace import host_root
from logs.metrics import SeriesKey, put
from processing.kind import PROCESSING
from runtime.base import ContainerSpec, ContainerStats
from runtime.fake import FakeRuntime
from tests.unit.protocol.conftest import REGION, access_key, make_client  # noqa: F401  (fixtures)
from training.kind import TRAINING

SECOND = 1_000_000_000
MINUTE_MS = 60_000
T0_MS = int(datetime(2026, 11, 28, 4, 0, tzinfo=UTC).timestamp() * 1000)
GIB = 1 << 30


def reading(cpu_s: float = 1.0, at_s: float = 2.0, memory: int = 512 << 20, gpus: tuple[str, ...] = ()):
    """A container started at 0 s, read at `at_s` having used `cpu_s` CPU seconds, with a 2 GiB limit."""
    return ContainerStats(
        read_at_ns=int(at_s * SECOND),
        started_at_ns=0,
        cpu_ns=int(cpu_s * SECOND),
        memory_used_bytes=memory,
        memory_limit_bytes=2 * GIB,
        gpu_device_ids=gpus,
    )


# --- what one reading gives (pure) -------------------------------------------------------------


def test_a_reading_gives_cpu_as_the_cores_added_up_and_memory_over_the_limit():
    # Two cores busy for the whole window: 200%, as SageMaker's 0-400% for four CPUs.
    values = instance_metrics.readings(reading(), (4 * SECOND, 2 * SECOND), 0, None, {})

    assert values == {"CPUUtilization": 200.0, "MemoryUtilization": 25.0}


def test_disk_is_the_workspace_over_the_volume_and_never_above_100_percent():
    quarter = instance_metrics.readings(reading(), (0, SECOND), 5 * GIB // 2, 10, {})
    overfull = instance_metrics.readings(reading(), (0, SECOND), 11 * GIB, 10, {})

    assert quarter["DiskUtilization"] == 25.0
    assert overfull["DiskUtilization"] == 100.0


def test_gpu_metrics_add_up_the_containers_own_gpus_only():
    read = {"0": GpuUse(50.0, 10.0), "1": GpuUse(100.0, 30.0), "2": GpuUse(99.0, 99.0)}

    values = instance_metrics.readings(reading(gpus=("0", "1")), (0, SECOND), 0, None, read)
    without = instance_metrics.readings(reading(), (0, SECOND), 0, None, read)

    assert values["GPUUtilization"] == 150.0 and values["GPUMemoryUtilization"] == 40.0
    assert "GPUUtilization" not in without and "GPUMemoryUtilization" not in without


def test_cpu_is_measured_since_the_previous_reading_else_since_the_container_started():
    earlier, now = reading(cpu_s=1.0, at_s=2.0), reading(cpu_s=4.0, at_s=5.0)

    assert instance_metrics.cpu_window(now, earlier) == (3 * SECOND, 3 * SECOND)
    assert instance_metrics.cpu_window(now, None) == (4 * SECOND, 5 * SECOND)
    # A reading that is not earlier (another container by the same id, a clock step) is not used.
    assert instance_metrics.cpu_window(earlier, now) == (1 * SECOND, 2 * SECOND)


def test_nvidia_smi_rows_it_cannot_fill_are_left_out():
    output = "0, 87, 40960, 81920\n1, [N/A], [N/A], [N/A]\n2, 0, 0, 0\n\n"

    assert gpu_usage.parse(output) == {"0": GpuUse(87.0, 50.0)}


# --- publishing, read back through CloudWatch's API ------------------------------------------


@pytest.fixture
def cloudwatch(make_client):  # noqa: F811
    client, _ = make_client("cloudwatch")
    return client


@pytest.fixture
def engine():
    runtime = FakeRuntime(images=("img",))

    def start(name: str, stats: ContainerStats | None = None):
        state = runtime.run(ContainerSpec(name=name, image="img", labels={}))
        if stats is not None:
            runtime.use(name, stats)
        return state

    runtime.start = start
    return runtime


def job(kind: JobKind, account_id: str, name: str = "daily-features") -> JobIdentity:
    arn = f"arn:aws:sagemaker:{REGION}:{account_id}:{kind.resource_type}/{name}"
    return JobIdentity(kind, 3, name, arn, account_id, REGION, datetime(2026, 11, 28, tzinfo=UTC))


def listed(cloudwatch, namespace: str) -> set[tuple[str, str]]:
    found = cloudwatch.list_metrics(Namespace=namespace)["Metrics"]
    return {(metric["MetricName"], metric["Dimensions"][0]["Value"]) for metric in found}


def test_each_running_instance_publishes_its_minute_under_its_host(
    cloudwatch, access_key, engine, settings, tmp_path  # noqa: F811
):
    settings.DATA_DIR = str(tmp_path)
    processing = job(PROCESSING, access_key.account_id)
    engine.start("c2", reading())
    engine.exit("c2", 0)
    states = {
        "algo-1": engine.start("c1", reading(cpu_s=1.5, at_s=3.0)),
        "algo-2": engine.containers["c2"].state,  # it ended: nothing to read
        "algo-3": None,  # no container (yet)
    }
    (host_root(processing, "algo-1") / "output").mkdir(parents=True)
    (host_root(processing, "algo-1") / "output" / "data").write_bytes(b"x" * 65536)

    instance_metrics.publish(engine, processing, states, volume_size_gb=1, now_ms=T0_MS + 5_000)

    assert listed(cloudwatch, "/aws/sagemaker/ProcessingJobs") == {
        (name, "daily-features/algo-1")
        for name in ("CPUUtilization", "MemoryUtilization", "DiskUtilization")
    }
    answer = cloudwatch.get_metric_statistics(
        Namespace="/aws/sagemaker/ProcessingJobs",
        MetricName="CPUUtilization",
        Dimensions=[{"Name": "Host", "Value": "daily-features/algo-1"}],
        StartTime=datetime.fromtimestamp(T0_MS / 1000, UTC),
        EndTime=datetime.fromtimestamp((T0_MS + MINUTE_MS) / 1000, UTC),
        Period=60,
        Statistics=["Average", "SampleCount"],
    )
    (point,) = answer["Datapoints"]
    assert point["Unit"] == "Percent" and point["SampleCount"] == 1.0
    assert point["Average"] == pytest.approx(50.0)
    disk = cloudwatch.get_metric_statistics(
        Namespace="/aws/sagemaker/ProcessingJobs",
        MetricName="DiskUtilization",
        Dimensions=[{"Name": "Host", "Value": "daily-features/algo-1"}],
        StartTime=datetime.fromtimestamp(T0_MS / 1000, UTC),
        EndTime=datetime.fromtimestamp((T0_MS + MINUTE_MS) / 1000, UTC),
        Period=60,
        Statistics=["Maximum"],
    )["Datapoints"]
    assert disk[0]["Maximum"] == pytest.approx(100 * 65536 / GIB, rel=0.5)


def test_an_instance_is_read_once_a_minute_however_often_the_job_is_looked_at(
    cloudwatch, access_key, engine  # noqa: F811
):
    transform = job(TRANSFORM, access_key.account_id, "nightly-scoring")
    states = {"algo-1": engine.start("t1", reading())}

    for offset_ms in (1_000, 30_000, 59_999, MINUTE_MS, MINUTE_MS + 1):
        instance_metrics.publish(engine, transform, states, now_ms=T0_MS + offset_ms)

    answer = cloudwatch.get_metric_statistics(
        Namespace="/aws/sagemaker/TransformJobs",
        MetricName="MemoryUtilization",
        Dimensions=[{"Name": "Host", "Value": "nightly-scoring/algo-1"}],
        StartTime=datetime.fromtimestamp(T0_MS / 1000, UTC),
        EndTime=datetime.fromtimestamp((T0_MS + 2 * MINUTE_MS) / 1000, UTC),
        Period=60,
        Statistics=["SampleCount", "Average"],
    )["Datapoints"]
    assert sorted((point["SampleCount"], point["Average"]) for point in answer) == [(1.0, 25.0), (1.0, 25.0)]
    # Batch transform has no DiskUtilization (SageMaker: "not supported for batch transform jobs").
    assert {name for name, _ in listed(cloudwatch, "/aws/sagemaker/TransformJobs")} == {
        "CPUUtilization", "MemoryUtilization"
    }


def test_an_engine_that_does_not_answer_costs_the_minute_not_the_job(access_key, engine, cloudwatch):  # noqa: F811
    states = {"algo-1": engine.start("u1", reading())}
    engine.unreachable = True

    instance_metrics.publish(engine, job(PROCESSING, access_key.account_id), states, 1, now_ms=T0_MS)

    assert listed(cloudwatch, "/aws/sagemaker/ProcessingJobs") == set()


def test_in_training_one_host_names_both_its_instance_metrics_and_its_metric_definitions(
    cloudwatch, access_key, engine  # noqa: F811
):
    """/aws/sagemaker/TrainingJobs holds both under Host=<job>/algo-N: the instance metrics (sets,
    Percent) and the MetricDefinitions' points (unit None), each answered as its own metric."""
    training = job(TRAINING, access_key.account_id, "resnet")
    series = SeriesKey(access_key.account_id, REGION, TRAINING.log_group, "resnet")
    put(series, "algo-1", [("loss", T0_MS, 0.5)])

    instance_metrics.publish(engine, training, {"algo-1": engine.start("r1", reading())}, 10, now_ms=T0_MS)

    def maximum(metric: str) -> tuple[float, str]:
        (point,) = cloudwatch.get_metric_statistics(
            Namespace="/aws/sagemaker/TrainingJobs",
            MetricName=metric,
            Dimensions=[{"Name": "Host", "Value": "resnet/algo-1"}],
            StartTime=datetime.fromtimestamp(T0_MS / 1000, UTC),
            EndTime=datetime.fromtimestamp((T0_MS + MINUTE_MS) / 1000, UTC),
            Period=60,
            Statistics=["Maximum"],
        )["Datapoints"]
        return point["Maximum"], point["Unit"]

    assert maximum("MemoryUtilization") == (25.0, "Percent")
    assert maximum("loss") == (0.5, "None")
