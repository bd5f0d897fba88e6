"""`sageport`: the operator's commands (devstack/cli.py), as an operator runs them."""

import socket

import pytest

from accounts.accesskeys import create_access_key, resolve_access_key
from capacity import nodes
from devstack import cli

pytestmark = pytest.mark.django_db


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_without_an_action_it_lists_its_actions_and_only_those(capsys):
    code, out, _ = _run(capsys, "--help")
    assert code == 0
    assert [line.split()[:2] for line in out.splitlines()[2:]] == [list(action) for action in cli.ACTIONS]
    code, _, err = _run(capsys, "flush")  # Django's own commands are not reachable through it
    assert code == 2 and "keys create" in err


def test_keys_are_created_listed_without_secrets_deactivated_and_activated(capsys):
    code, out, _ = _run(capsys, "keys", "create", "--account-id", "111122223333")
    key_id, secret, account = out.split()
    assert (code, account) == (0, "111122223333")

    code, out, _ = _run(capsys, "keys", "list", "--account-id", "111122223333")
    assert code == 0 and secret not in out
    assert out.splitlines()[1].split()[:3] == [key_id, "111122223333", "Active"]

    assert _run(capsys, "keys", "deactivate", key_id)[:2] == (0, f"{key_id} Inactive\n")
    assert resolve_access_key(key_id) is None  # requests signed with it are refused
    assert "Inactive" in _run(capsys, "keys", "list")[1]
    assert _run(capsys, "keys", "activate", key_id)[0] == 0
    assert resolve_access_key(key_id) is not None


def test_a_containers_key_and_an_unknown_key_are_not_the_operators_to_change(capsys):
    job = "arn:aws:sagemaker:us-east-1:111122223333:training-job/x"
    containers = create_access_key("111122223333", issued_for=job)
    assert containers.access_key_id not in _run(capsys, "keys", "list")[1]
    for key_id in (containers.access_key_id, "AKIANOSUCHKEY"):
        code, _, err = _run(capsys, "keys", "deactivate", key_id)
        assert code == 1 and f"no access key {key_id}" in err
    assert resolve_access_key(containers.access_key_id) is not None


def test_nodes_list_shows_each_node_and_whether_it_is_lost(capsys):
    assert "No node has registered" in _run(capsys, "nodes", "list")[1]
    node = nodes.register()
    code, out, _ = _run(capsys, "nodes", "list")
    assert code == 0 and out.splitlines()[1].split()[:3] == [node.name, node.address, "ready"]


def test_stack_status_says_which_services_do_not_answer_and_fails(capsys, settings):
    closed = _closed_port_url()
    settings.SAGEPORT_API_URL = settings.SAGEPORT_RUNTIME_URL = settings.SAGEPORT_S3_ENDPOINT_URL = closed
    settings.CELERY_BROKER_URL = closed.replace("http", "redis")
    code, out, err = _run(capsys, "stack", "status")
    assert code == 1 and "some services do not answer" in err
    states = {line[2:13].strip(): line[14:28].strip() for line in out.splitlines()[1:6]}
    assert states == dict.fromkeys(["api", "data plane", "s3", "redis", "workers"], "NOT ANSWERING")
    assert "0 ready, 0 lost" in out


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"
