"""The embedded stack's servers listen where their settings say, never on a name or a default
that assumes one host; Redis's password stays off the command line."""
import socket
import stat
from pathlib import Path

import pytest

from devstack import stack
from hosting.runtime_api import serve


def test_redis_listens_on_the_address_of_its_url_and_requires_its_password(tmp_path):
    spec = stack.redis_spec(tmp_path, "redis://:s3cret@10.1.2.3:6391/0")

    assert spec.argv[spec.argv.index("--bind") + 1] == "10.1.2.3"
    assert spec.argv[spec.argv.index("--port") + 1] == "6391"
    assert (spec.address, spec.ports, spec.listens) == ("10.1.2.3", (6391,), "redis://10.1.2.3:6391")
    config = tmp_path / "redis" / "redis.conf"
    assert config.read_text() == "requirepass s3cret\n"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert not any("s3cret" in word for word in spec.argv)


def test_s3_listens_on_the_address_of_its_url_and_its_store_only_on_loopback(tmp_path):
    store, gateway = stack.s3_specs(tmp_path, "http://10.1.2.3:8334", ("platform", "secret"))

    assert (gateway.address, gateway.ports, gateway.listens) == ("10.1.2.3", (8334,), "http://10.1.2.3:8334")
    assert "10.1.2.3:8334" in gateway.argv
    assert {"-ip=127.0.0.1", "-ip.bind=127.0.0.1"} <= set(store.argv)
    assert f"-s3.port={store.ports[0]}" in store.argv and store.ports != (8334,)


@pytest.mark.parametrize("url", ["redis://redis.internal:6390/0", "redis://127.0.0.1/0"])
def test_a_url_without_an_ip_address_and_port_is_refused_with_the_setting_named(tmp_path, url):
    with pytest.raises(stack.ServiceFailed, match="SAGEPORT_REDIS_URL=.*listens on an IP address"):
        stack.redis_spec(tmp_path, url)


def test_the_api_listens_on_its_address_with_a_socket_per_process(tmp_path):
    port = stack.free_port()
    spec = stack.api_spec(tmp_path, stack.LOOPBACK, port, workers=3)
    try:
        assert [listener.getsockname() for listener in spec.listeners] == [(stack.LOOPBACK, port)] * 3
        handed = [int(spec.argv[i + 1]) for i, word in enumerate(spec.argv) if word == "--fd"]
        assert handed == [listener.fileno() for listener in spec.listeners]
        assert spec.listens == f"http://127.0.0.1:{port}"
    finally:
        for listener in spec.listeners:
            listener.close()


def test_a_port_the_api_holds_cannot_be_joined_by_another_stack(tmp_path):
    # The API's sockets share their port (SO_REUSEPORT): a second stack's group would be let in
    # by the kernel and take a share of the first one's connections, without the check first.
    port = stack.free_port()
    spec = stack.api_spec(tmp_path, stack.LOOPBACK, port, workers=2)
    try:
        with pytest.raises(stack.ServiceFailed, match="is taken"):
            stack.api_spec(tmp_path, stack.LOOPBACK, port, workers=2)
    finally:
        for listener in spec.listeners:
            listener.close()


def test_the_data_plane_listens_on_its_address_on_a_socket_uvicorn_is_handed(tmp_path):
    port = stack.free_port()
    spec = stack.runtime_spec(tmp_path, stack.LOOPBACK, port)
    try:
        (listener,) = spec.listeners
        assert listener.getsockname() == (stack.LOOPBACK, port)
        assert spec.listens == f"http://127.0.0.1:{port}"
        assert spec.argv[spec.argv.index("--fd") + 1] == str(listener.fileno())
    finally:
        listener.close()


def test_the_data_plane_takes_the_inherited_socket_as_tcp_so_its_connections_get_no_nagle_delay(tmp_path):
    # uvicorn's own --fd takes it as a Unix socket: the loop then leaves Nagle's algorithm on, and
    # each answer waited ~40 ms for the client's delayed ACK.
    spec = stack.runtime_spec(tmp_path, stack.LOOPBACK, stack.free_port())
    try:
        (listener,) = spec.listeners
        inherited = serve.listening_socket(serve._arguments(["--fd", str(listener.fileno())]))
        assert (inherited.family, inherited.type) == (socket.AF_INET, socket.SOCK_STREAM)
        inherited.detach()  # the descriptor stays the spec's
    finally:
        listener.close()


def test_a_lasting_port_is_free_and_below_the_range_the_kernel_hands_out_for_outgoing_connections():
    # The session's servers bind their ports long after the ports are chosen (tests/settings.py);
    # a CI run lost its data plane's port meanwhile to a port the kernel handed out.
    floor = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = {stack.lasting_port() for _ in range(20)}
    assert all(10000 <= port < floor for port in ports)
    assert len(ports) > 1  # chosen at random: concurrent sessions do not all pick the same one
    for port in ports:
        with socket.socket() as sock:
            sock.bind((stack.LOOPBACK, port))
