"""A fresh installation signs with its own secret key, never a public default."""
import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from controlplane import secret_key
from controlplane.startup import SettingsError
from devstack.stack import PROJECT_DIR


def test_the_first_start_creates_a_private_key_that_later_starts_read(tmp_path):
    path = tmp_path / "secret_key"

    first = secret_key.load_or_create(path)

    assert len(first) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert secret_key.load_or_create(path) == first
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]  # no draft left behind


def test_two_installations_get_different_keys(tmp_path):
    assert secret_key.load_or_create(tmp_path / "a") != secret_key.load_or_create(tmp_path / "b")


def test_processes_starting_together_agree_on_one_key(tmp_path):
    path = tmp_path / "secret_key"
    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: secret_key.load_or_create(path), range(32)))

    assert keys == {path.read_text().strip()}


def test_an_empty_key_file_is_a_clear_error(tmp_path):
    path = tmp_path / "secret_key"
    path.write_text("")

    with pytest.raises(SettingsError, match="is empty"):
        secret_key.load_or_create(path)


def settings_secret_key(data_dir, **variables) -> str:
    env = {key: value for key, value in os.environ.items() if key != "SAGEPORT_SECRET_KEY"}
    result = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.SECRET_KEY)"],
        cwd=PROJECT_DIR, env={**env, "SAGEPORT_DATA_DIR": str(data_dir),
                              "DJANGO_SETTINGS_MODULE": "controlplane.settings", **variables},
        capture_output=True, text=True, timeout=60, check=True,
    )
    return result.stdout.strip()


def test_the_settings_use_the_data_dirs_key_unless_the_variable_overrides_it(tmp_path):
    generated = settings_secret_key(tmp_path)

    assert generated == (tmp_path / "secret_key").read_text().strip()
    assert settings_secret_key(tmp_path, SAGEPORT_SECRET_KEY="operator-chosen") == "operator-chosen"
