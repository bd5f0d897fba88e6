"""The tier's HTTP edges, on real sockets: who may call, what a refusal looks like, streaming and
Content-Length, the peer listener, deletes reaching every node, and a peer that is down."""

import base64
import http.client
import json
import socket
import time

import pytest
import xxhash

from tier.peers import ACCOUNT_HEADER, TOKEN_HEADER

from .conftest import ACCOUNT, OTHER_JOB, TOKEN, wait_for


def shard_meta(body: bytes) -> str:
    return json.dumps({"checksum": base64.b64encode(xxhash.xxh3_128(body).digest()).decode(),
                       "algorithm": "xxh3_128"})


def call(url: str, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
         timeout: float = 20.0) -> tuple[int, dict, bytes]:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def create(url: str, name: str = "ns", num_ranks: int = 2) -> None:
    status, _, _ = call(url, "POST", f"/v1/cp/namespaces/{name}?num_ranks={num_ranks}&steps_retained=3")
    assert status == 201


def put(url: str, step: int, rank: int, body: bytes, name: str = "ns", meta: str | None = None):
    return call(url, "POST", f"/v1/cp/checkpoints/{name}/{rank}/{step}", body,
                {"Shard-Meta": meta or shard_meta(body)})



def test_a_caller_that_is_not_a_training_container_is_refused(cluster_of):
    cluster = cluster_of(["a"])
    cluster.identities.jobs.clear()
    status, headers, body = call(cluster.url("a"), "GET", "/v1/cp/namespaces/ns")
    assert status == 403 and json.loads(body)["error"] == "AccessDenied"
    assert headers["content-type"] == "application/json"
    assert call(cluster.url("a"), "GET", "/health")[0] == 200  # the agent's probe needs no identity


def test_a_shard_comes_back_with_its_shard_meta_and_exact_length(cluster_of):
    cluster = cluster_of(["a"])
    create(cluster.url("a"))
    body = bytes(range(256)) * 5000  # over a MiB: several streamed pieces
    assert put(cluster.url("a"), 1, 0, body)[0] == 200
    status, headers, got = call(cluster.url("a"), "GET", "/v1/cp/checkpoints/ns/0/1")
    assert status == 200 and got == body
    assert headers["content-length"] == str(len(body))
    assert headers["shard-meta"] == shard_meta(body)


def test_a_corrupted_body_is_refused_and_not_kept(cluster_of):
    cluster = cluster_of(["a"])
    create(cluster.url("a"))
    status, _, body = put(cluster.url("a"), 1, 0, b"flipped bits", meta=shard_meta(b"original bits"))
    assert status == 400 and "checksum" in json.loads(body)["message"]
    assert call(cluster.url("a"), "GET", "/v1/cp/checkpoints/ns/0/1")[0] == 404


def test_a_body_over_the_budget_is_refused_before_it_is_sent(cluster_of):
    cluster = cluster_of(["a"], budget_bytes=1000)
    create(cluster.url("a"))
    with socket.create_connection(("127.0.0.1", cluster.ports["a"][0]), timeout=30) as raw:
        raw.sendall(b"POST /v1/cp/checkpoints/ns/0/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000000\r\n"
                    b"Shard-Meta: " + shard_meta(b"").encode() + b"\r\n\r\n")  # headers only
        answer = raw.makefile("rb").read()  # the tier answers and closes: the body stays unread
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 507") and b"Connection: close" in head
    assert json.loads(body)["error"] == "InsufficientStorage"


def test_bad_paths_and_numbers_are_clear_errors(cluster_of):
    cluster = cluster_of(["a"])
    create(cluster.url("a"))
    assert call(cluster.url("a"), "GET", "/v1/cp/checkpoints/ns/zero/1")[0] == 400
    assert call(cluster.url("a"), "POST", "/v1/cp/namespaces/other")[0] == 400  # num_ranks missing
    assert call(cluster.url("a"), "POST", "/v1/cp/namespaces/ns?num_ranks=5")[0] == 409
    assert call(cluster.url("a"), "PUT", "/v1/cp/namespaces/ns")[0] == 404
    assert call(cluster.url("a"), "GET", "/v2/anything")[0] == 404
    assert put(cluster.url("a"), 1, 7, b"rank beyond num_ranks")[0] == 400


def test_namespaces_of_two_accounts_never_meet(cluster_of):
    cluster = cluster_of(["a", "b"])
    create(cluster.url("a"))
    assert put(cluster.url("a"), 1, 0, b"account one")[0] == 200
    cluster.identities.jobs["127.0.0.1"] = OTHER_JOB
    for name in "ab":
        assert call(cluster.url(name), "GET", "/v1/cp/namespaces/ns")[0] == 404
        assert call(cluster.url(name), "GET", "/v1/cp/checkpoints/ns/0/1")[0] == 404
        assert call(cluster.url(name), "GET", "/v1/cp/checkpoints/ns/latest")[0] == 404
    assert call(cluster.url("b"), "POST", "/v1/cp/cluster/reset")[0] == 200
    cluster.identities.jobs["127.0.0.1"] = OTHER_JOB.replace("210987654321", ACCOUNT)
    assert call(cluster.url("a"), "GET", "/v1/cp/checkpoints/ns/0/1")[2] == b"account one"


def test_the_peer_listener_needs_the_token_and_an_account(cluster_of):
    cluster = cluster_of(["a"])
    peer = cluster.peer_url("a")
    path = "/v1/cp/namespaces/ns"
    assert call(peer, "GET", path)[0] == 403
    assert call(peer, "GET", path, headers={TOKEN_HEADER: TOKEN + "x", ACCOUNT_HEADER: ACCOUNT})[0] == 403
    assert call(peer, "GET", path, headers={TOKEN_HEADER: TOKEN, ACCOUNT_HEADER: "../"})[0] == 400
    create(cluster.url("a"))
    status, _, body = call(peer, "GET", path, headers={TOKEN_HEADER: TOKEN, ACCOUNT_HEADER: ACCOUNT})
    assert status == 200 and json.loads(body)["num_ranks"] == 2


def test_deleting_a_namespace_deletes_its_replicas_too(cluster_of):
    cluster = cluster_of(["a", "b"])
    create(cluster.url("a"))
    put(cluster.url("a"), 1, 0, b"zero")
    replica = cluster.nodes["b"].store
    wait_for(lambda: replica.inventory(ACCOUNT, "ns") == {1: [0]})
    assert call(cluster.url("a"), "DELETE", "/v1/cp/namespaces/ns")[0] == 200
    assert replica.namespace(ACCOUNT, "ns") is None
    assert call(cluster.url("b"), "GET", "/v1/cp/namespaces/ns")[0] == 404


def test_a_stopped_peer_delays_nothing(cluster_of):
    cluster = cluster_of(["a", "b"])
    cluster.stop("b")
    create(cluster.url("a"))
    assert put(cluster.url("a"), 1, 0, b"zero")[0] == 200  # replication fails later, quietly
    assert put(cluster.url("a"), 1, 1, b"one")[0] == 200
    assert call(cluster.url("a"), "GET", "/v1/cp/checkpoints/ns/latest")[2] == b"[1]"
    assert call(cluster.url("a"), "GET", "/v1/cp/checkpoints/ns/0/2")[0] == 404


@pytest.fixture
def beside_a_hung_peer(cluster_of, tmp_path):
    """start(peer_io_timeout) → node a, whose ring's next node accepts connections but never
    answers (a hung machine: the kernel accepts for it)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)

        def start(peer_io_timeout: float):
            cluster = cluster_of(["a"])
            document = json.loads((tmp_path / "config.json").read_text())
            document["peers"].append({"node": "hung", "url": f"http://127.0.0.1:{silent.getsockname()[1]}"})
            cluster.stop("a")
            (tmp_path / "config.json").write_text(json.dumps(document))
            cluster.peer_io_timeout = peer_io_timeout
            cluster.replica_wait_seconds = 1.0
            cluster.start("a")
            return cluster

        yield start


def test_a_peer_that_accepts_but_never_answers_does_not_hang_lookups(beside_a_hung_peer):
    cluster = beside_a_hung_peer(0.5)
    create(cluster.url("a"))  # a's namespace GET miss would ask the hung peer; POST does not
    assert call(cluster.url("a"), "GET", "/v1/cp/checkpoints/other/0/1", timeout=20)[0] == 404
    assert call(cluster.url("a"), "GET", "/v1/cp/checkpoints/ns/latest", timeout=20)[2] == b"[]"


def test_a_hung_neighbour_delays_the_write_it_should_replicate_only_by_the_bounded_wait(beside_a_hung_peer):
    cluster = beside_a_hung_peer(600)  # a copy to it waits ten minutes; the write waits 1 s at most
    create(cluster.url("a"))
    for step in (1, 2, 3):
        started = time.monotonic()
        assert put(cluster.url("a"), step, 0, b"zero" * 1000)[0] == 200
        assert time.monotonic() - started < 10  # the bound plus a loaded machine's slack


def test_a_client_expecting_100_continue_gets_it_only_for_an_accepted_write(cluster_of):
    cluster = cluster_of(["a"], budget_bytes=1000)
    create(cluster.url("a"))
    body = b"x" * 100
    head = ("POST /v1/cp/checkpoints/ns/0/1 HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
            f"Shard-Meta: {shard_meta(body)}\r\nContent-Length: LENGTH\r\n\r\n")
    with socket.create_connection(("127.0.0.1", cluster.ports["a"][0]), timeout=30) as raw:
        answers = raw.makefile("rb")
        raw.sendall(head.replace("LENGTH", str(len(body))).encode())
        assert answers.readline().startswith(b"HTTP/1.1 100")
        answers.readline()
        raw.sendall(body)
        assert answers.readline().startswith(b"HTTP/1.1 200")
    with socket.create_connection(("127.0.0.1", cluster.ports["a"][0]), timeout=30) as raw:
        raw.sendall(head.replace("LENGTH", str(10**6)).encode())
        assert raw.makefile("rb").readline().startswith(b"HTTP/1.1 507")


def test_one_caller_cannot_hold_every_connection(cluster_of, monkeypatch):
    monkeypatch.setattr("tier.server.MAX_CONNECTIONS_PER_ADDRESS", 2)
    cluster = cluster_of(["a"])
    address = ("127.0.0.1", cluster.ports["a"][0])
    held = [socket.create_connection(address, timeout=30) for _ in range(2)]
    try:
        for connection in held:  # answered, and kept open (keep-alive)
            connection.sendall(b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n")
            assert connection.recv(1024).startswith(b"HTTP/1.1 200")
        with socket.create_connection(address, timeout=30) as third:
            third.sendall(b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n")
            try:
                assert third.recv(1024) == b""  # closed unanswered
            except ConnectionResetError:
                pass
        held.pop().close()

        def answered() -> bool:
            try:
                return call(cluster.url("a"), "GET", "/health")[0] == 200
            except (OSError, http.client.HTTPException):
                return False  # the closed connection's slot is not free yet

        wait_for(answered)
    finally:
        for connection in held:
            connection.close()
