"""The HTTP client of AWS's `hyperpod-elastic-agent` (`hyperpodrun`), which serves on port 8080 in
each replica container; the operator reaches it through the port published on the node's address.

Every request carries `Content-Type: application/json`: without it the agent's FastAPI does not
parse the body and its own validation handler fails (500). Timeouts are short: an agent that does
not answer is treated as not ready, and the next look asks again."""
import json
from dataclasses import dataclass

import urllib3

TIMEOUT = urllib3.Timeout(connect=2.0, read=10.0)
_pool = urllib3.PoolManager(retries=False, timeout=TIMEOUT, maxsize=4)


class AgentUnreachable(Exception):
    pass


@dataclass(frozen=True)
class Agent:
    address: str  # the node's address, where the container's 8080 is published
    port: int

    def status(self) -> dict:
        """The agent's /status body: {"status": "ready"|"running"|..., "progress": ..., ...}."""
        return self._call("GET", "/status")

    def start(self, body: dict) -> None:
        self._call("POST", "/start", body)

    def stop(self, graceful: bool, timeout: int) -> None:
        self._call("POST", "/stop", {"is_graceful": graceful, "timeout": timeout})

    def shutdown(self) -> None:
        self._call("POST", "/shutdown", {})

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        url = f"http://{self.address}:{self.port}{path}"
        data = None if body is None else json.dumps(body).encode()
        try:
            response = _pool.request(method, url, body=data, headers={"Content-Type": "application/json"})
        except urllib3.exceptions.HTTPError as error:
            raise AgentUnreachable(f"{method} {path}: {error}") from error
        if response.status >= 300:
            raise AgentUnreachable(f"{method} {path}: HTTP {response.status} {response.data[:200]!r}")
        try:
            answer = json.loads(response.data or b"{}")
        except ValueError:
            return {}
        return answer if isinstance(answer, dict) else {}
