"""`GET /ping` against serving containers, several at once, each bounded by the ping timeout.

200 means ready (SageMaker's contract); anything else is described in words that can go into a
FailureReason: the status and the start of the body, a refused connection, or a timeout."""

import http.client
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.conf import settings

BODY_EXCERPT_CHARS = 200
MAX_PARALLEL_PINGS = 8
# What SageMaker's hosting sends on /ping and /invocations alike, as serving containers log it
# (nginx access logs of SageMaker endpoints: `"GET /ping HTTP/1.1" 200 1 "-" "AHC/2.0"`, the same
# on POST /invocations; aws/sagemaker-python-sdk#1554). Some servers log or route on it.
PLATFORM_USER_AGENT = "AHC/2.0"


@dataclass(frozen=True)
class PingResult:
    healthy: bool
    problem: str = ""  # what the container answered (or did not), when not healthy


def ping(port: int) -> PingResult:
    """A container of this node, at the address its ports are published on."""
    timeout = settings.SAGEPORT_PING_TIMEOUT_SECONDS
    connection = http.client.HTTPConnection(settings.SAGEPORT_NODE_ADDRESS, port, timeout=timeout)
    try:
        connection.request("GET", "/ping", headers={"User-Agent": PLATFORM_USER_AGENT})
        response = connection.getresponse()
        body = response.read(BODY_EXCERPT_CHARS).decode("utf-8", errors="replace").strip()
    except TimeoutError:
        return PingResult(False, f"/ping did not answer within {timeout:g} s")
    except ConnectionRefusedError:
        return PingResult(False, "/ping was refused: nothing listens on port 8080 yet")
    except (OSError, http.client.HTTPException) as error:
        return PingResult(False, f"/ping failed: {error or type(error).__name__}")
    finally:
        connection.close()
    if response.status == 200:
        return PingResult(True)
    answer = f"/ping answered HTTP {response.status}"
    return PingResult(False, f"{answer}: {body}" if body else answer)


def ping_all(ports: dict[str, int]) -> dict[str, PingResult]:
    """Ping every container (name -> host port) in parallel."""
    if not ports:
        return {}
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_PINGS, len(ports))) as pool:
        return dict(zip(ports, pool.map(ping, ports.values()), strict=True))
