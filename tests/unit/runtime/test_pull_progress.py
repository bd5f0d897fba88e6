"""An image pull tells how far it has come, from the engine's progress messages, at a bounded
rate: layers done and megabytes downloaded."""
from types import SimpleNamespace

from runtime import docker as docker_runtime
from runtime.pull_progress import PullProgress


def downloading(layer: str, current: int, total: int) -> dict:
    return {"status": "Downloading", "id": layer, "progressDetail": {"current": current, "total": total}}


def test_layers_done_and_bytes_downloaded_are_counted():
    progress = PullProgress()
    for message in (
        {"status": "Pulling from library/app", "id": "latest"},  # about the image, not a layer
        {"status": "Already exists", "id": "a"},
        {"status": "Pulling fs layer", "id": "b"},
        {"status": "Pulling fs layer", "id": "c"},
        downloading("b", 5_000_000, 20_000_000),
        downloading("c", 1_000_000, 10_000_000),
        {"status": "Download complete", "id": "c"},
        {"status": "Pull complete", "id": "c"},
    ):
        progress.add(message)

    assert progress.summary() == "2/3 layers, 15.0 of 30.0 MB"


def test_a_pull_without_sizes_yet_says_what_it_has():
    progress = PullProgress()
    progress.add({"status": "Pulling fs layer", "id": "b"})

    assert progress.summary() == "0/1 layers, 0.0 MB"


def test_the_engine_pull_is_reported_at_most_once_per_interval(settings, monkeypatch):
    settings.SAGEPORT_PULL_PROGRESS_SECONDS = 2
    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr(docker_runtime.time, "monotonic", lambda: clock.now)

    def pull(repository, tag, stream, decode):  # one message every half second, for 10 s
        for step in range(1, 21):
            clock.now = step * 0.5
            yield downloading("layer", step * 1_000_000, 20_000_000)

    client = SimpleNamespace(api=SimpleNamespace(pull=pull))
    reports = []

    docker_runtime.DockerRuntime(client=client).pull_image("app:1", report=reports.append)

    assert reports == [f"0/1 layers, {mb:.1f} of 20.0 MB" for mb in (4, 8, 12, 16, 20)]
