"""The bundled SeaweedFS's S3 identities, as files in its filer (`/etc/iam/identities/*.json`).

SeaweedFS's S3 server watches that directory and reloads its identities within milliseconds of
a change, without a restart. Only files whose name starts with `prefix` are read or removed here:
the others belong to SeaweedFS. The filer's address is published by the stack that started the
store (`devstack.stack.seaweedfs_spec`) in `<data>/s3/filer-url`; without it the S3 store is not
the bundled one and its identities are not Sageport's to manage."""
import base64
from pathlib import Path

import urllib3
from django.conf import settings

IDENTITIES_DIR = "/etc/iam/identities"
_TIMEOUT = urllib3.Timeout(connect=2.0, read=10.0)
_LIST_LIMIT = 10000  # far more identity files than accounts a Sageport serves
_http = urllib3.PoolManager(timeout=_TIMEOUT, retries=False)


class FilerError(Exception):
    """The filer could not be reached or refused a change."""


def filer_url_file(data_dir: Path) -> Path:
    return data_dir / "s3" / "filer-url"


def bundled_filer_url() -> str | None:
    """The bundled store's filer (`http://127.0.0.1:<port>`), or None when there is none."""
    try:
        return filer_url_file(Path(settings.DATA_DIR)).read_text().strip() or None
    except FileNotFoundError:
        return None


def read_identities(filer_url: str, prefix: str) -> dict[str, bytes]:
    """The content of every identity file whose name starts with `prefix`, by file name."""
    response = _request("GET", f"{filer_url}{IDENTITIES_DIR}/?limit={_LIST_LIMIT}",
                        headers={"Accept": "application/json"})
    if response.status == 404:
        return {}  # no identity written yet
    _check(response, "list the S3 identities")
    entries = response.json().get("Entries") or []
    found = {}
    for entry in entries:
        name = entry["FullPath"].rsplit("/", 1)[-1]
        if name.startswith(prefix):
            found[name] = base64.b64decode(entry.get("Content") or "")
    return found


def write_identity(filer_url: str, name: str, content: bytes) -> None:
    # A form upload: under /etc the filer keeps the content inside the entry, where SeaweedFS's
    # identity loader reads it (a plain PUT stores it in a volume, which the loader sees as empty).
    response = _request("POST", f"{filer_url}{IDENTITIES_DIR}/{name}",
                        fields={"file": (name, content, "application/json")})
    _check(response, f"write the S3 identity {name}")


def delete_identity(filer_url: str, name: str) -> None:
    response = _request("DELETE", f"{filer_url}{IDENTITIES_DIR}/{name}")
    if response.status != 404:
        _check(response, f"delete the S3 identity {name}")


def _request(method: str, url: str, **kwargs) -> urllib3.BaseHTTPResponse:
    try:
        return _http.request(method, url, **kwargs)
    except urllib3.exceptions.HTTPError as error:
        raise FilerError(f"the S3 store's filer at {url} did not answer: {error}") from None


def _check(response: urllib3.BaseHTTPResponse, action: str) -> None:
    if response.status >= 300:
        raise FilerError(f"could not {action}: the filer answered {response.status}")
