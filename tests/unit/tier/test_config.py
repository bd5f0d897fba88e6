"""The agent's configuration file: the ring, and live reloads."""

import json
import os

import pytest

from tier.config import ConfigFile, parse

PEERS = [{"node": name, "url": f"http://127.0.0.1:{port}"} for name, port in (("a", 1), ("b", 2), ("c", 3))]


def document(**changes) -> str:
    return json.dumps({"budget_bytes": 100, "grace_seconds": 60, "peers": PEERS, **changes})


def test_the_ring_after_a_node_starts_with_its_successor():
    config = parse(document())
    assert [peer.node for peer in config.ring_after("b")] == ["c", "a"]
    assert [peer.node for peer in config.ring_after("c")] == ["a", "b"]


def test_a_node_outside_the_ring_is_not_in_it():
    assert parse(document()).includes("a") and not parse(document()).includes("z")


@pytest.mark.parametrize("bad", [
    document(budget_bytes=-1), document(grace_seconds="60"), document(peers={}),
    document(peers=[{"node": "a", "url": "https://h:1"}]), document(peers=[{"url": "http://h:1"}]), "[]",
])
def test_an_invalid_configuration_is_refused(bad):
    with pytest.raises(ValueError):
        parse(bad)


def test_a_changed_file_is_reloaded_and_a_broken_one_keeps_the_last(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(document())
    now = [0.0]
    config = ConfigFile(str(path), clock=lambda: now[0])
    path.write_text(document(budget_bytes=5))
    os.utime(path, ns=(1, 1))
    assert config.current().budget_bytes == 100  # checked at most once a second
    now[0] = 1.5
    assert config.current().budget_bytes == 5
    path.write_text("{not json")
    os.utime(path, ns=(2, 2))
    now[0] = 3.0
    assert config.current().budget_bytes == 5
