"""The egress guard: loaded (PYTHONPATH) by the client processes the end-to-end tests start, it
refuses every attempt to resolve or connect to anything but loopback, so nothing leaves the
machine, and records each one as a JSON line in the file SAGEPORT_EGRESS_LOG names (when set):
the call, host, port and the libraries on the stack that made it (their innermost frames).

It watches Python's socket module, which botocore, urllib3, requests and asyncio all go through:
host names (`getaddrinfo`, `gethostbyname[_ex]`: the DNS query would already leave) and IP
literals (`socket.connect[_ex]`). Native code and programs that are not Python are not covered.
Used by the SDK recipes of tests/e2e/test_egress.py and by `hyp` (tests/e2e/test_hyp_cli.py),
whose usage telemetry has no opt-out (sagemaker/hyperpod/common/telemetry/telemetry_logging.py).
Where SAGEPORT_SKIP_AHEAD_SLEEPS is set it also loads skip_ahead_clock (the SDKs' fixed waits)."""

import errno
import ipaddress
import json
import os
import socket
import traceback

LOG = os.environ.get("SAGEPORT_EGRESS_LOG")


def is_loopback(host) -> bool:
    if host in (None, "", b"", "localhost", b"localhost"):  # None or "": a local bind, no peer
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    try:
        return ipaddress.ip_address(name.split("%")[0]).is_loopback  # "%": an IPv6 scope id
    except ValueError:
        return False  # a host name


def _libraries() -> list[str]:
    """The innermost frame of each installed package on the stack, outermost package first:
    e.g. the SDK's call site, then botocore's, then urllib3's."""
    frames = {}
    for frame in traceback.extract_stack():
        _, marker, inside = frame.filename.rpartition("-packages/")
        if marker:
            frames[inside.split("/")[0]] = f"{inside}:{frame.lineno} {frame.name}"
    return list(frames.values())


def _record(call: str, host, port) -> None:
    if LOG:
        attempt = {"call": call, "host": str(host), "port": port, "stack": _libraries()}
        with open(LOG, "a") as log:
            log.write(json.dumps(attempt) + "\n")


def _resolving(call: str, resolve):
    def guarded(host, *args, **kwargs):
        if not is_loopback(host):
            _record(call, host, args[0] if args else kwargs.get("port"))
            raise socket.gaierror(socket.EAI_NONAME, f"the egress guard refuses {host}: loopback only")
        return resolve(host, *args, **kwargs)

    return guarded


def _connecting(call: str, connect):
    def guarded(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address[0]):
            _record(call, address[0], address[1])
            if call == "connect_ex":  # it answers an error number instead of raising
                return errno.ENETUNREACH
            raise OSError(errno.ENETUNREACH, f"the egress guard refuses {address[0]}: loopback only")
        return connect(self, address)

    return guarded


for _call in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
    setattr(socket, _call, _resolving(_call, getattr(socket, _call)))
for _call in ("connect", "connect_ex"):
    setattr(socket.socket, _call, _connecting(_call, getattr(socket.socket, _call)))

if os.environ.get("SAGEPORT_SKIP_AHEAD_SLEEPS"):
    import skip_ahead_clock  # noqa: F401 (it patches the time module)
