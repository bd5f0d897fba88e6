"""Loaded by the `hyp` processes the tests start (PYTHONPATH): host names other than loopback do
not resolve, so `hyp`'s usage telemetry (an HTTPS GET to an AWS bucket after every command,
sagemaker/hyperpod/common/telemetry/telemetry_logging.py, with no opt-out setting) fails at once
and nothing leaves the machine."""

import socket

_resolve = socket.getaddrinfo
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _loopback_only(host, *args, **kwargs):
    if host not in _LOOPBACK:
        raise socket.gaierror(socket.EAI_NONAME, f"the tests reach loopback only, not {host}")
    return _resolve(host, *args, **kwargs)


socket.getaddrinfo = _loopback_only
