"""`sageport`: the operator's commands, without Django's thirty others (`flush` among them).

    sageport keys create [--account-id ID]     sageport keys list [--account-id ID]
    sageport keys deactivate KEY_ID            sageport keys activate KEY_ID
    sageport buckets assign BUCKET ACCOUNT_ID  sageport nodes list
    sageport stack status

Each action is one of the project's management commands (its options and `--help` are that
command's); run it from the repository, or with SAGEPORT_DATA_DIR / DATABASE_URL naming the
installation, as `manage.py` would be."""

import os
import sys

# sageport GROUP ACTION → the management command, the options the action sets, what it does.
ACTIONS = {
    ("keys", "create"): ("createaccesskey", [], "create an access key; prints its id, secret and account"),
    ("keys", "list"): ("listaccesskeys", [], "people's access keys (never their secrets) and their status"),
    ("keys", "deactivate"): ("updateaccesskey", ["--status", "Inactive"], "refuse requests signed with it"),
    ("keys", "activate"): ("updateaccesskey", ["--status", "Active"], "accept a deactivated key again"),
    ("buckets", "assign"): ("assignbucket", [], "give a bucket made outside the S3 gateway to an account"),
    ("nodes", "list"): ("listnodes", [], "the worker nodes: ready or lost, CPUs, memory, GPUs, heartbeat"),
    ("stack", "status"): ("stackstatus", [], "whether each service answers, the nodes, what runs"),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    import django

    django.setup()
    from django.db import DatabaseError

    action = ACTIONS.get(tuple(argv[:2]))
    if action is None:
        asked = argv in ([], ["-h"], ["--help"], ["help"])
        (sys.stdout if asked else sys.stderr).write(usage())
        return 0 if asked else 2
    command_name, options, _ = action
    command = _command(command_name)
    try:
        command.run_from_argv(["sageport", " ".join(argv[:2]), *options, *argv[2:]])
    except SystemExit as leaving:  # a CommandError or --help: its words are printed already
        return int(leaving.code or 0)
    except DatabaseError as error:
        sys.stderr.write(f"sageport: the installation's database cannot be read ({error}); `make up` "
                         "creates it, SAGEPORT_DATA_DIR or DATABASE_URL name another one\n")
        return 1
    return 0


def usage() -> str:
    lines = ["usage: sageport GROUP ACTION [options]   (sageport GROUP ACTION --help: its options)", ""]
    for (group, action), (_, _, does) in ACTIONS.items():
        lines.append(f"  {group + ' ' + action:<17} {does}")
    return "\n".join(lines) + "\n"


def _command(name: str):
    from django.core.management import get_commands, load_command_class

    return load_command_class(get_commands()[name], name)
