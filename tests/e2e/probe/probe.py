"""A serving container for the hosting tests, on the example's HTTP scaffolding (serve.py).

It reports what the platform gave it and misbehaves on request:
- environment PROBE_PING=fail: /ping answers 503 forever; PROBE_PING=exit: exits 3 at start;
- POST /invocations with a JSON object: {"sleep": s} answers after s seconds, {"status": n,
  "message": m} answers n with m, {"unhealthy": true} makes /ping fail from then on;
- otherwise it answers 200 with JSON: its PROBE_TAG, argv, hostname, the request headers it got,
  the User-Agents of the health checks so far, the CPUs it may run on (and PYTHON_CPU_COUNT), the
  files under /opt/ml/model and whether that directory is writable.
"""

import json
import os
import socket
import sys
import time
from pathlib import Path

from serve import BadRequest, InferenceHandler, run

MODEL_DIR = Path("/opt/ml/model")
UNHEALTHY_MARK = Path("/tmp/unhealthy")


class ProbeHandler(InferenceHandler):
    ping_user_agents: set[str] = set()  # of every /ping so far

    def ping(self) -> tuple[int, str]:
        ProbeHandler.ping_user_agents.add(self.headers.get("User-Agent", ""))
        if os.environ.get("PROBE_PING") == "fail":
            return 503, "the probe was told never to become healthy"
        if UNHEALTHY_MARK.exists():
            return 500, "the probe was made unhealthy"
        return 200, ""

    def invoke(self, body: bytes) -> tuple[str, bytes, dict]:
        command = json.loads(body) if body.startswith(b"{") else {}
        time.sleep(float(command.get("sleep", 0)))
        if "status" in command:
            raise BadRequest(command.get("message", ""), status=command["status"])
        if command.get("unhealthy"):
            UNHEALTHY_MARK.touch()
        report = {
            "tag": os.environ.get("PROBE_TAG", ""),
            "argv": sys.argv[1:],
            "hostname": socket.gethostname(),
            "headers": {name.lower(): value for name, value in self.headers.items()},
            "ping_user_agents": sorted(ProbeHandler.ping_user_agents),
            "affinity_cpus": len(os.sched_getaffinity(0)),
            "python_cpu_count": os.environ.get("PYTHON_CPU_COUNT"),
            "environment": {key: value for key, value in os.environ.items() if key.startswith("USER_")},
            "model_files": sorted(str(p.relative_to(MODEL_DIR)) for p in MODEL_DIR.rglob("*") if p.is_file()),
            "model_writable": os.access(MODEL_DIR, os.W_OK),
            "body_length": len(body),
        }
        echoed = {
            name: self.headers[name]
            for name in ("X-Amzn-SageMaker-Custom-Attributes",)
            if name in self.headers
        }
        return "application/json", json.dumps(report).encode(), echoed


if __name__ == "__main__":
    if os.environ.get("PROBE_PING") == "exit":
        print("probe: exiting at start, as told", flush=True)
        sys.exit(3)
    run(ProbeHandler)
