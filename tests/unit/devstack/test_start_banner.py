"""The start banner tells a newcomer where the console is and how to sign in."""

import io
from pathlib import Path
from types import SimpleNamespace

from devstack.management.commands.runstack import READY_BANNER, Command


def test_the_banner_names_the_console_and_the_credentials_to_sign_in_with(tmp_path: Path, settings):
    settings.SAGEPORT_API_URL = "http://127.0.0.1:8080"
    out = io.StringIO()
    supervisor = SimpleNamespace(log_path=lambda name: tmp_path / f"{name}.log")

    Command(stdout=out)._print_banner(supervisor, [], tmp_path, tmp_path / "env")

    text = out.getvalue()
    assert READY_BANNER in text
    assert "Console: http://127.0.0.1:8080/console/" in text
    assert f"AWS_SECRET_ACCESS_KEY from {tmp_path / 'env'}" in text
    assert "manage.py createsuperuser" in text
