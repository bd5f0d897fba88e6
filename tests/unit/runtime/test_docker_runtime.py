"""DockerRuntime against the real engine, with a busybox image (`/bin/sh`, no ENTRYPOINT)."""

import os
import threading
import time
import uuid
from pathlib import Path

import docker
import pytest
from django.conf import settings

from runtime import labels
from runtime.base import (
    ContainerSpec,
    ContainerStartFailed,
    ContainerState,
    EngineFault,
    Mount,
    NoSuchImage,
    RuntimeUnavailable,
)
from runtime.docker import (
    DockerRuntime,
    create_kwargs,
    normalize_timestamp,
)

TEST_LABELS = {"sageport.test": "runtime"}


@pytest.fixture
def runtime(docker_engine):
    runtime = DockerRuntime()
    yield runtime
    for state in runtime.find(TEST_LABELS):
        runtime.remove(state.name)
    for network in runtime.find_networks(TEST_LABELS):
        runtime.remove_network(network)


@pytest.fixture
def entrypoint_image(busybox_image, runtime):
    """busybox with `ENTRYPOINT ["/bin/echo", "entrypoint"]`, like an algorithm image."""
    client = runtime.client
    builder = client.containers.create(busybox_image, labels=TEST_LABELS)
    tag = f"sageport-test/entrypoint:{uuid.uuid4().hex[:8]}"
    builder.commit(*tag.split(":"), changes=['ENTRYPOINT ["/bin/echo", "entrypoint"]', "CMD []"])
    builder.remove()
    yield tag
    client.images.remove(tag, force=True)


def spec(image: str, *command: str, **overrides) -> ContainerSpec:
    name = f"sageport-test-{uuid.uuid4().hex[:10]}"
    return ContainerSpec(name=name, image=image, labels=TEST_LABELS, command=list(command), **overrides)


def state_of(runtime, name) -> ContainerState | None:
    return next((state for state in runtime.find(TEST_LABELS) if state.name == name), None)


def wait_until_exited(runtime, name, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = state_of(runtime, name)
        if state.exited:
            return state
        time.sleep(0.1)
    raise AssertionError(f"{name} still running after {timeout} s")


def output(runtime, name) -> list[str]:
    wait_until_exited(runtime, name)
    return [line.message for line in runtime.logs(name)]


def test_run_is_get_or_create_by_name(runtime, busybox_image):
    container = spec(busybox_image, "sleep", "30")
    first = runtime.run(container)
    second = runtime.run(container)
    assert first.id == second.id and second.running
    assert second.labels == {**TEST_LABELS, labels.MANAGED: "true", labels.STACK: settings.SAGEPORT_STACK_ID}
    assert [state.name for state in runtime.find(TEST_LABELS)] == [container.name]


def test_run_starts_an_existing_container_that_was_never_started(runtime, busybox_image):
    container = spec(busybox_image, "sleep", "30")
    runtime.client.containers.create(**create_kwargs(container))
    assert state_of(runtime, container.name).status == "created"
    assert runtime.run(container).running


def test_a_container_whose_network_went_before_its_start_is_created_again_by_the_next_run(
    runtime, busybox_image
):
    network = f"sageport-test-{uuid.uuid4().hex[:8]}"
    runtime.ensure_network(network, TEST_LABELS)
    container = spec(busybox_image, "sleep", "30", network=network)
    runtime.client.containers.create(**create_kwargs(container))
    runtime.remove_network(network)  # a concurrent clean-up, between the create and the start

    with pytest.raises(ContainerStartFailed, match="not found"):
        runtime.run(container)
    assert state_of(runtime, container.name) is None  # not kept: it could never start

    runtime.ensure_network(network, TEST_LABELS)
    assert runtime.run(container).running


def networks_named(runtime, name) -> list:
    return [network for network in runtime.client.networks.list(names=[name]) if network.name == name]


def test_concurrent_creates_of_one_network_make_one_that_a_container_starts_on(runtime, busybox_image):
    # Two workers' processes starting containers of one job at once: each ensures the network.
    network = f"sageport-test-{uuid.uuid4().hex[:8]}"
    together = threading.Barrier(2)
    subnets = []

    def ensure() -> None:
        own = DockerRuntime()  # as a process of its own would
        together.wait()
        subnets.append(own.ensure_network(network, TEST_LABELS))

    threads = [threading.Thread(target=ensure) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    (made,) = networks_named(runtime, network)
    assert subnets == [made.attrs["IPAM"]["Config"][0]["Subnet"]] * 2
    assert runtime.run(spec(busybox_image, "sleep", "30", network=network)).running


def test_a_name_that_two_networks_share_is_left_to_the_oldest_and_containers_start_on_it(
    runtime, busybox_image
):
    # What an older Sageport (or any other client) left: the engine attaches nothing to the name.
    network = f"sageport-test-{uuid.uuid4().hex[:8]}"
    oldest = runtime.client.networks.create(network, driver="bridge", labels=TEST_LABELS)
    runtime.client.networks.create(network, driver="bridge", labels=TEST_LABELS)
    assert len(networks_named(runtime, network)) == 2

    runtime.ensure_network(network, TEST_LABELS)

    assert [kept.id for kept in networks_named(runtime, network)] == [oldest.id]
    assert runtime.run(spec(busybox_image, "sleep", "30", network=network)).running


def test_command_is_appended_to_the_image_entrypoint(runtime, entrypoint_image):
    container = spec(entrypoint_image, "train")
    runtime.run(container)
    assert output(runtime, container.name) == ["entrypoint train"]


def test_entrypoint_replaces_the_image_entrypoint_only_when_given(runtime, entrypoint_image):
    container = spec(entrypoint_image, "train", entrypoint=["/bin/echo", "custom"])
    runtime.run(container)
    assert output(runtime, container.name) == ["custom train"]


def test_the_container_process_is_pid_1_without_an_init(runtime, busybox_image):
    container = spec(busybox_image, "sh", "-c", "echo $$")
    runtime.run(container)
    assert output(runtime, container.name) == ["1"]


def test_read_only_mount_refuses_writes_and_writable_mount_reaches_the_host(runtime, busybox_image, tmp_path):
    (tmp_path / "input").mkdir()
    (tmp_path / "model").mkdir()
    container = spec(
        busybox_image,
        "sh",
        "-c",
        "cat /opt/ml/input/data.txt; touch /opt/ml/input/new || echo refused; echo saved > /opt/ml/model/m",
        mounts=(
            Mount(str(tmp_path / "input"), "/opt/ml/input", read_only=True),
            Mount(str(tmp_path / "model"), "/opt/ml/model"),
        ),
    )
    (tmp_path / "input" / "data.txt").write_text("hello\n")
    runtime.run(container)
    wait_until_exited(runtime, container.name)
    lines = runtime.logs(container.name)
    assert [line.message for line in lines if line.stream == "stdout"] == ["hello", "refused"]
    assert "Read-only file system" in " ".join(line.message for line in lines if line.stream == "stderr")
    assert not (tmp_path / "input" / "new").exists()
    assert (tmp_path / "model" / "m").read_text() == "saved\n"


def test_processes_beyond_the_pids_limit_are_refused_inside_the_container(runtime, busybox_image, settings):
    settings.SAGEPORT_CONTAINER_PIDS_LIMIT = 16
    forks = "i=0; while [ $i -lt 40 ]; do sleep 30 & i=$((i+1)); done; echo all-forked"
    container = spec(busybox_image, "sh", "-c", forks)
    runtime.run(container)
    state = wait_until_exited(runtime, container.name)
    lines = runtime.logs(container.name)
    assert state.exit_code != 0  # busybox sh gives up at the first refused fork
    assert [line.message for line in lines if line.stream == "stdout"] == []
    assert "sh: can't fork: Resource temporarily unavailable" in [line.message for line in lines]


def test_containers_hold_only_the_documented_capabilities_and_gain_no_privileges(runtime, busybox_image):
    container = spec(busybox_image, "grep", "-E", "^(CapEff|NoNewPrivs):", "/proc/self/status")
    runtime.run(container)
    # CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, NET_BIND_SERVICE: bits 0-1, 3-7, 10.
    assert output(runtime, container.name) == ["CapEff:\t00000000000004fb", "NoNewPrivs:\t1"]


def test_a_container_running_sshd_gets_back_only_the_two_capabilities_sshd_needs(runtime, busybox_image):
    container = spec(busybox_image, "grep", "^CapEff:", "/proc/self/status", ssh_server=True)
    runtime.run(container)
    # The eight above, plus SYS_CHROOT (bit 18) and AUDIT_WRITE (bit 29).
    assert output(runtime, container.name) == ["CapEff:\t00000000200404fb"]


@pytest.fixture
def image_with_python_path(busybox_image, runtime):
    client = runtime.client
    builder = client.containers.create(busybox_image, labels=TEST_LABELS)
    tag = f"sageport-test/pythonpath:{uuid.uuid4().hex[:8]}"
    builder.commit(*tag.split(":"), changes=["ENV PYTHONPATH=/image/lib:/image/more"])
    builder.remove()
    yield tag
    client.images.remove(tag, force=True)


@pytest.mark.parametrize("environment, expected", [
    ({}, "/image/lib:/image/more:/opt/extra"),
    ({"PYTHONPATH": "/user/lib"}, "/user/lib:/opt/extra"),
])
def test_python_paths_extend_the_images_or_the_specs_pythonpath(
    runtime, image_with_python_path, environment, expected
):
    container = spec(image_with_python_path, "sh", "-c", "echo $PYTHONPATH",
                     environment=environment, python_paths=("/opt/extra",))
    runtime.run(container)
    assert output(runtime, container.name) == [expected]


@pytest.mark.parametrize("entrypoint, expected", [
    (None, "/bin/echo entrypoint train"),  # the image's ENTRYPOINT runs under the launcher
    (["/bin/echo", "own"], "/bin/echo own train"),
])
def test_a_launcher_prefixes_the_entrypoint(runtime, entrypoint_image, entrypoint, expected):
    launcher = ("sh", "-c", 'echo "launched: $*"', "launcher")  # prints what it would launch
    container = spec(entrypoint_image, "train", entrypoint=entrypoint, launcher=launcher)
    runtime.run(container)
    assert output(runtime, container.name) == [f"launched: {expected}"]


def test_network_none_leaves_only_the_loopback_interface(runtime, busybox_image):
    container = spec(busybox_image, "sh", "-c", "ls /sys/class/net", network="none")
    runtime.run(container)
    assert output(runtime, container.name) == ["lo"]


def test_containers_on_a_network_resolve_each_other_by_alias(runtime, busybox_image):
    network = f"sageport-test-{uuid.uuid4().hex[:8]}"
    runtime.ensure_network(network, TEST_LABELS)
    runtime.ensure_network(network, TEST_LABELS)  # idempotent
    assert runtime.find_networks(TEST_LABELS) == [network]
    first = spec(
        busybox_image, "sleep", "30", network=network, hostname="algo-1", network_aliases=("algo-1",)
    )
    second = spec(
        busybox_image,
        "sh",
        "-c",
        "hostname; nslookup algo-1 >/dev/null && echo resolved",
        network=network,
        hostname="algo-2",
        network_aliases=("algo-2",),
    )
    runtime.run(first)
    runtime.run(second)
    assert output(runtime, second.name) == ["algo-2", "resolved"]


def test_a_network_takes_the_first_free_subnet_and_containers_keep_fixed_addresses(runtime, busybox_image):
    taken, mine = f"sageport-test-{uuid.uuid4().hex[:8]}", f"sageport-test-{uuid.uuid4().hex[:8]}"
    offered = ["10.213.250.0/24", "10.213.251.0/24"]
    assert runtime.ensure_network(taken, TEST_LABELS, subnets=offered[:1]) == offered[0]
    assert runtime.ensure_network(mine, TEST_LABELS, subnets=offered) == offered[1]  # the first overlaps
    assert runtime.ensure_network(mine, TEST_LABELS, subnets=offered) == offered[1]  # idempotent
    container = spec(
        busybox_image, "ip", "-4", "-o", "addr", "show", "eth0", network=mine, ipv4_address="10.213.251.3"
    )
    runtime.run(container)
    assert "inet 10.213.251.3/24" in output(runtime, container.name)[0]


def test_a_file_mounted_at_etc_hosts_replaces_the_engines(runtime, busybox_image, tmp_path):
    (tmp_path / "hosts").write_text("127.0.0.1\tlocalhost\n127.0.0.1\talgo-1\n")
    container = spec(
        busybox_image, "cat", "/etc/hosts", network="none", hostname="algo-1",
        mounts=(Mount(str(tmp_path / "hosts"), "/etc/hosts", read_only=True),),
    )
    runtime.run(container)
    assert output(runtime, container.name) == ["127.0.0.1\tlocalhost", "127.0.0.1\talgo-1"]


def test_internal_network_is_created_internal_so_peers_reach_only_each_other(runtime):
    network = f"sageport-test-{uuid.uuid4().hex[:8]}"
    runtime.ensure_network(network, TEST_LABELS, internal=True)
    assert runtime.client.networks.get(network).attrs["Internal"] is True


def test_extra_networks_are_joined_before_start_behind_the_containers_own(runtime, busybox_image):
    own, extra = (f"sageport-test-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for network in (own, extra):
        runtime.ensure_network(network, TEST_LABELS)
    container = spec(busybox_image, "sh", "-c", "ls /sys/class/net", network=own, extra_networks=(extra,))
    runtime.client.containers.create(**create_kwargs(container))  # a crash before the join and start

    runtime.run(container)

    assert output(runtime, container.name) == ["eth0", "eth1", "lo"]  # both, from the first instruction
    networks = runtime.client.containers.get(container.name).attrs["NetworkSettings"]["Networks"]
    assert set(networks) == {own, extra}


def test_the_services_network_is_internal_without_inter_container_traffic_and_owned_by_no_stack(runtime):
    name = f"sageport-test-services-{uuid.uuid4().hex[:8]}"
    try:
        runtime.ensure_services_network(name, "169.254.201.0/24", "169.254.201.2")
        runtime.ensure_services_network(name, "169.254.201.0/24", "169.254.201.2")  # idempotent

        attrs = runtime.client.networks.get(name).attrs
        assert attrs["Internal"] is True
        assert attrs["Options"]["com.docker.network.bridge.enable_icc"] == "false"
        assert attrs["IPAM"]["Config"] == [{"Subnet": "169.254.201.0/24", "Gateway": "169.254.201.2"}]
        assert labels.STACK not in attrs["Labels"]
    finally:
        runtime.remove_network(name)


def test_sigterm_reaches_pid_1_which_can_save_before_exiting(runtime, busybox_image, tmp_path):
    script = (
        "trap 'echo saved > /opt/ml/model/on-term; exit 0' TERM; touch /opt/ml/model/ready; "
        "while true; do sleep 0.1; done"
    )
    container = spec(busybox_image, "sh", "-c", script, mounts=(Mount(str(tmp_path), "/opt/ml/model"),))
    runtime.run(container)
    deadline = time.monotonic() + 20
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    runtime.signal(container.name, "SIGTERM")
    state = wait_until_exited(runtime, container.name)
    assert (state.exit_code, (tmp_path / "on-term").read_text()) == (0, "saved\n")
    runtime.signal(container.name, "SIGTERM")  # not running any more: a no-op


def test_exit_code_and_times_are_reported(runtime, busybox_image):
    container = spec(busybox_image, "sh", "-c", "exit 3")
    runtime.run(container)
    state = wait_until_exited(runtime, container.name)
    assert (state.status, state.exit_code, state.oom_killed) == ("exited", 3, False)
    assert state.started_at and state.finished_at


def test_a_container_over_its_memory_limit_is_reported_oom_killed(runtime, busybox_image):
    # `tail` of an endless line buffers without bound.
    container = spec(busybox_image, "tail", "/dev/zero", memory_bytes=16 * 1024 * 1024)
    runtime.run(container)
    state = wait_until_exited(runtime, container.name)
    assert state.oom_killed and state.exit_code == 137


# `nproc`, then the CPU quota and period and the memory limit, from cgroup v2's files or v1's.
READ_CGROUP_LIMITS = """nproc
if [ -f /sys/fs/cgroup/cpu.max ]; then cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max
else echo "$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"
     cat /sys/fs/cgroup/memory/memory.limit_in_bytes; fi"""


def test_a_cpu_quota_pins_the_container_to_as_many_cpus_and_its_memory_is_its_limit(runtime, busybox_image):
    """What SageMaker's dedicated instance shows a container, here from the cgroup: `nproc` (the
    affinity mask) counts the quota's CPUs, cpu.max holds the quota, memory.max the memory."""
    memory = 256 * 1024 * 1024
    container = spec(busybox_image, "sh", "-c", READ_CGROUP_LIMITS, nano_cpus=10**9, memory_bytes=memory)
    runtime.run(container)

    assert output(runtime, container.name) == ["1", "100000 100000", str(memory)]
    inspected = runtime.client.api.inspect_container(container.name)
    assert inspected["HostConfig"]["CpusetCpus"] == inspected["Config"]["Labels"][labels.CPUSET]
    assert "PYTHON_CPU_COUNT=1" in inspected["Config"]["Env"]


def test_containers_are_pinned_to_the_cpus_the_fewest_others_use(runtime, busybox_image):
    first, second = (spec(busybox_image, "sleep", "30", nano_cpus=1_000_000_000) for _ in range(2))
    runtime.run(first)
    runtime.run(second)
    inspect = runtime.client.api.inspect_container
    pinned = [inspect(container.name)["HostConfig"]["CpusetCpus"] for container in (first, second)]
    assert pinned[0] != pinned[1] or len(os.sched_getaffinity(0)) == 1


def test_a_cpuset_is_sent_with_its_label_and_python_counts_it_unless_the_spec_says_otherwise():
    kwargs = create_kwargs(spec("image", "serve", nano_cpus=2_000_000_000), cpuset="2,3")
    assert (kwargs["nano_cpus"], kwargs["cpuset_cpus"]) == (2_000_000_000, "2,3")
    assert kwargs["labels"][labels.CPUSET] == "2,3"
    assert kwargs["environment"]["PYTHON_CPU_COUNT"] == "2"  # Python 3.13+: os.cpu_count()
    own = create_kwargs(spec("image", "serve", environment={"PYTHON_CPU_COUNT": "8"}), cpuset="0")
    assert own["environment"]["PYTHON_CPU_COUNT"] == "8"
    plain = create_kwargs(spec("image", "serve"))
    assert "cpuset_cpus" not in plain and "PYTHON_CPU_COUNT" not in plain["environment"]


def test_logs_keep_streams_apart_in_order_and_filter_strictly_after_since(runtime, busybox_image):
    container = spec(busybox_image, "sh", "-c", "echo out1; sleep 0.01; echo err1 >&2; sleep 0.01; echo out2")
    runtime.run(container)
    wait_until_exited(runtime, container.name)
    lines = runtime.logs(container.name)
    assert [(line.stream, line.message) for line in lines] == [
        ("stdout", "out1"),
        ("stderr", "err1"),
        ("stdout", "out2"),
    ]
    after_first = runtime.logs(container.name, since=lines[0].timestamp)
    assert [line.message for line in after_first] == ["err1", "out2"]
    assert runtime.logs(container.name, since=lines[-1].timestamp) == []


def test_logs_read_a_flood_in_bounded_slices_without_losing_a_line(runtime, busybox_image):
    """A container that floods its output: each call returns at most `max_bytes` of each stream, and
    calls from the last line returned read the rest, every line once, both streams in order."""
    script = "i=0; while [ $i -lt 3000 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done"
    container = spec(busybox_image, "sh", "-c", script)
    runtime.run(container)
    wait_until_exited(runtime, container.name)
    read, since, calls = [], None, 0
    while batch := runtime.logs(container.name, since=since, max_bytes=4096):
        assert sum(len(line.message) for line in batch) < 2 * 4096 + 16
        read += batch
        since, calls = batch[-1].timestamp, calls + 1
    assert calls >= 4  # 36 kB in all, at most 4 kB of each stream per call
    assert [line.message for line in read if line.stream == "stdout"] == [f"out{i}" for i in range(3000)]
    assert [line.message for line in read if line.stream == "stderr"] == [f"err{i}" for i in range(3000)]
    assert [line.timestamp for line in read] == sorted(line.timestamp for line in read)


def test_log_timestamps_are_normalised_to_nanoseconds_in_utc():
    assert normalize_timestamp("2024-05-01T10:00:05.1Z") == "2024-05-01T10:00:05.100000000Z"
    assert normalize_timestamp("2024-05-01T12:00:05+02:00") == "2024-05-01T10:00:05.000000000Z"
    assert normalize_timestamp("2024-05-01T10:00:05.1Z") > normalize_timestamp("2024-05-01T10:00:05.099Z")


def test_published_port_lands_on_a_random_loopback_port(runtime, busybox_image):
    container = spec(busybox_image, "sleep", "30", published_port=8080)
    state = runtime.run(container)
    bindings = runtime.client.api.inspect_container(container.name)["HostConfig"]["PortBindings"]
    assert bindings["8080/tcp"][0]["HostIp"] == "127.0.0.1"
    assert state.host_port and state.host_port > 0


def test_gpu_ids_become_an_nvidia_device_request_and_visible_devices():
    kwargs = create_kwargs(spec("image", "train", gpu_device_ids=("0", "2")))
    (request,) = kwargs["device_requests"]
    assert (request["Driver"], request["DeviceIDs"], request["Capabilities"]) == (
        "nvidia",
        ["0", "2"],
        [["gpu"]],
    )
    assert kwargs["environment"]["NVIDIA_VISIBLE_DEVICES"] == "0,2"
    assert "device_requests" not in create_kwargs(spec("image", "train"))


def test_gpu_container_without_nvidia_runtime_fails_to_start_with_the_engine_reason(runtime, busybox_image):
    """The engine's 500: a fault of the installation (no NVIDIA runtime), not of the job."""
    container = spec(busybox_image, "true", gpu_device_ids=("0",))
    with pytest.raises(EngineFault, match=f'container "{container.name}": .*nvidia'):
        runtime.run(container)
    requests = runtime.client.api.inspect_container(container.name)["HostConfig"]["DeviceRequests"]
    assert requests[0]["Driver"] == "nvidia" and requests[0]["DeviceIDs"] == ["0"]


def test_missing_image_is_reported_as_no_such_image(runtime):
    assert not runtime.has_image("sageport-test/absent:latest")
    with pytest.raises(NoSuchImage, match='"sageport-test/absent:latest"'):
        runtime.run(spec("sageport-test/absent:latest", "train"))


def test_failed_pull_names_the_image_and_the_engine_reason(runtime):
    image = "127.0.0.1:1/sageport-test/unreachable:1"  # a registry address nothing listens on
    with pytest.raises(NoSuchImage) as raised:
        runtime.pull_image(image)
    assert str(raised.value).startswith(
        f'Unable to pull image "{image}": it is not in this node\'s Docker engine, which could not pull it: '
    )
    assert "connection refused" in str(raised.value)


def test_operations_on_missing_containers_and_networks_are_harmless(runtime):
    assert state_of(runtime, "sageport-test-missing") is None
    assert runtime.logs("sageport-test-missing") == []
    runtime.signal("sageport-test-missing", "SIGTERM")
    runtime.remove("sageport-test-missing")
    runtime.remove_network("sageport-test-missing")


def test_unreachable_engine_is_reported_as_runtime_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    with pytest.raises(RuntimeUnavailable):
        DockerRuntime().has_image("anything")
    client = docker.DockerClient(base_url=f"unix://{tmp_path / 'no-engine.sock'}", version="1.41")
    with pytest.raises(RuntimeUnavailable):
        DockerRuntime(client).find(TEST_LABELS)
    with pytest.raises(RuntimeUnavailable):
        DockerRuntime().container_events(TEST_LABELS, ["die"])


def test_container_events_tell_the_start_and_exit_of_labelled_containers_only(runtime, busybox_image):
    events = runtime.container_events(TEST_LABELS, ["start", "die"])
    seen = []

    def follow():
        for event in events:
            seen.append(event)
            if event.action == "die":
                break
        events.close()  # the stream and its client go with the generator

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    unlabelled = docker.from_env().containers.run(busybox_image, ["true"], detach=True)
    labelled = runtime.run(spec(busybox_image, "sh", "-c", "exit 3"))
    follower.join(20)
    unlabelled.remove(force=True)

    assert [(e.action, e.name) for e in seen] == [("start", labelled.name), ("die", labelled.name)]
    assert seen[1].labels["exitCode"] == "3"
    assert seen[1].labels["sageport.test"] == "runtime"
    assert float(seen[0].time) <= float(seen[1].time)


def test_mount_paths_are_host_directories(tmp_path: Path):
    mounts = (Mount(str(tmp_path), "/opt/ml/model", read_only=True),)
    kwargs = create_kwargs(spec("image", "train", mounts=mounts))
    (mount,) = kwargs["mounts"]
    assert (mount["Source"], mount["Target"], mount["ReadOnly"], mount["Type"]) == (
        str(tmp_path),
        "/opt/ml/model",
        True,
        "bind",
    )


def test_a_command_that_is_not_in_the_image_is_refused_as_the_specs_fault(runtime, busybox_image):
    """The engine's 400: the container can never run as it is (an algorithm image's mistake)."""
    container = spec(busybox_image, entrypoint=["/not-in-the-image"])
    with pytest.raises(ContainerStartFailed, match="/not-in-the-image") as refused:
        runtime.run(container)
    assert not isinstance(refused.value, EngineFault)
