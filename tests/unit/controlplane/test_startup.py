"""A bad setting value stops every entry point with one line naming the variable."""
import os
import subprocess
import sys

import pytest

from devstack.stack import PROJECT_DIR

ENTRY_POINTS = {
    "manage.py": [sys.executable, "manage.py", "check"],
    "celery": [sys.executable, "-m", "celery", "-A", "controlplane", "inspect", "ping"],
    "wsgi": [sys.executable, "-c", "import controlplane.wsgi"],
}


def run_with(tmp_path, argv, **variables):
    env = {**os.environ, "SAGEPORT_DATA_DIR": str(tmp_path), **variables}
    return subprocess.run(argv, cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_a_bad_value_is_one_line_naming_the_variable(tmp_path, entry_point):
    result = run_with(tmp_path, ENTRY_POINTS[entry_point], SAGEPORT_PORT="eighty")

    assert result.returncode != 0
    assert result.stderr.splitlines() == ["sageport: SAGEPORT_PORT must be an integer, got 'eighty'"]


def test_a_bad_combination_is_one_line_too(tmp_path):
    result = run_with(tmp_path, ENTRY_POINTS["manage.py"], SAGEPORT_GPU_DEVICE_MODE="magic")

    assert result.returncode != 0
    assert result.stderr.splitlines() == [
        "sageport: SAGEPORT_GPU_DEVICE_MODE must be device-request or env-only, got 'magic'"
    ]


def test_good_values_pass(tmp_path):
    result = run_with(tmp_path, ENTRY_POINTS["manage.py"], SAGEPORT_PORT="8081")

    assert result.returncode == 0, result.stderr
