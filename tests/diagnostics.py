"""What a failing session leaves to find out why, while it runs: a session cut short (CI's time
limit) never reaches the session fixture's teardown, which used to be the only place the servers'
logs were kept.

- After every failed test, the servers' logs are copied next to the data dir (`-failed-logs`) and
  one line goes to the progress output at once: the free disk and the S3 servers' last log lines.
- A test that uses the S3 service first checks (briefly) that it answers. A store that stopped
  answering fails each such test in seconds, with its logs, instead of after every request's
  timeouts and retries: that turned one broken store into a suite past its time limit."""
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.config import Config
from django.conf import settings

PROBE_CONFIG = Config(connect_timeout=5, read_timeout=20, retries={"max_attempts": 1})
S3_LOGS = ("seaweedfs.log", "s3gateway.log")
TAIL_LINES = 5
TCP_ESTABLISHED = "01"  # the state column of /proc/net/tcp


def keep_logs(data_dir: Path) -> Path | None:
    """Copy the servers' logs beside the data dir; the copy's path, or None without logs."""
    logs = data_dir / "logs"
    if not logs.is_dir():
        return None
    kept = data_dir.with_name(data_dir.name + "-failed-logs")
    shutil.copytree(logs, kept, dirs_exist_ok=True)
    return kept


def established_connections(port: int) -> int:
    """TCP connections to this machine's `port` that are open now (the gateway's are bounded)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as rows:
            next(rows)
            for row in rows:
                local, _remote, state = row.split()[1:4]
                count += int(local.rsplit(":", 1)[1], 16) == port and state == TCP_ESTABLISHED
    return count


def s3_state(data_dir: Path) -> str:
    """The free disk under the data dir, the connections open to the S3 gateway and the last lines
    of the S3 servers' logs."""
    free_gib = shutil.disk_usage(data_dir if data_dir.exists() else data_dir.parent).free / 2**30
    gateway_port = urlsplit(settings.SAGEPORT_S3_ENDPOINT_URL).port
    parts = [f"free disk {free_gib:.1f} GiB",
             f"{established_connections(gateway_port)} connections open to the S3 gateway"]
    for name in S3_LOGS:
        path = data_dir / "logs" / name
        if path.is_file():
            lines = path.read_text(errors="replace").splitlines()[-TAIL_LINES:]
            parts.append(f"{name}: " + " | ".join(line[:300] for line in lines))
    return "; ".join(parts)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    data_dir = Path(settings.DATA_DIR)
    kept = keep_logs(data_dir)
    reporter = item.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        state = s3_state(data_dir)
        reporter.write_line(f"\n[{item.nodeid} {report.when} failed] logs kept in {kept}; {state}")


@pytest.fixture(autouse=True)
def s3_store_answers(request):
    """Fail at once, with the store's state, when the S3 service a test uses does not answer."""
    if "s3_service" not in request.fixturenames:
        return
    service = request.getfixturevalue("s3_service")
    client = boto3.client(
        "s3", endpoint_url=service.endpoint_url, config=PROBE_CONFIG,
        aws_access_key_id=settings.SAGEPORT_S3_ACCESS_KEY_ID,
        aws_secret_access_key=settings.SAGEPORT_S3_SECRET_ACCESS_KEY,
        region_name=settings.SAGEPORT_S3_REGION,
    )
    try:
        client.list_buckets()
    except Exception as error:  # any failure: the test would only wait on the same store
        pytest.fail(f"the S3 service does not answer ({error}); {s3_state(Path(settings.DATA_DIR))}")
    finally:
        client.close()
