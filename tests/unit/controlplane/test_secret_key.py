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


def settings_secret_key(data_dir, setting="SECRET_KEY", variable="SAGEPORT_SECRET_KEY", **variables) -> str:
    env = {key: value for key, value in os.environ.items() if key != variable}
    result = subprocess.run(
        [sys.executable, "-c", f"from django.conf import settings; print(settings.{setting})"],
        cwd=PROJECT_DIR, env={**env, "SAGEPORT_DATA_DIR": str(data_dir),
                              "DJANGO_SETTINGS_MODULE": "controlplane.settings", **variables},
        capture_output=True, text=True, timeout=60, check=True,
    )
    return result.stdout.strip()


def test_the_settings_use_the_data_dirs_key_unless_the_variable_overrides_it(tmp_path):
    generated = settings_secret_key(tmp_path)

    assert generated == (tmp_path / "secret_key").read_text().strip()
    assert settings_secret_key(tmp_path, SAGEPORT_SECRET_KEY="operator-chosen") == "operator-chosen"


def test_the_platform_s3_secret_is_the_installations_own_unless_the_variable_sets_it(tmp_path):
    """It reaches every bucket, and tenants' containers reach the S3 gateway: never a public default."""
    platform = {"setting": "SAGEPORT_S3_SECRET_ACCESS_KEY", "variable": "SAGEPORT_S3_SECRET_ACCESS_KEY"}
    generated = settings_secret_key(tmp_path / "one", **platform)

    assert generated == (tmp_path / "one" / "s3_platform_secret").read_text().strip()
    assert len(generated) >= 50
    assert settings_secret_key(tmp_path / "two", **platform) != generated
    chosen = settings_secret_key(tmp_path / "one", **platform, SAGEPORT_S3_SECRET_ACCESS_KEY="chosen")
    assert chosen == "chosen"
