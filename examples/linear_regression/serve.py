"""A SageMaker inference container for the linear-regression example (`docker run IMAGE serve`).

Loads the coefficients train.py wrote to /opt/ml/model/model.json and serves on port 8080:
  GET  /ping         200 with an empty body once the model is loaded; 500 and the reason if not
  POST /invocations  text/csv rows of features, or application/json {"instances": [[...], ...]};
                     answers the predictions as CSV lines or {"predictions": [...]} (by Accept,
                     else the request's Content-Type). Bad input: 400 and what is wrong.

SIGTERM stops accepting connections and exits once the requests in flight are answered. The
HTTP scaffolding (`InferenceHandler`, `run`) is reusable by other model servers.
"""

import json
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODEL_FILE = Path("/opt/ml/model/model.json")
PORT = 8080
STOP_WAIT_SECONDS = 25  # the platform sends SIGKILL 30 s after SIGTERM


class BadRequest(Exception):
    """The request cannot be answered; the message goes back with `status` (400 by default)."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class InferenceHandler(BaseHTTPRequestHandler):
    """Routes /ping and /invocations to `ping()` and `invoke()`; keep-alive, no Nagle delay."""

    protocol_version = "HTTP/1.1"
    in_flight = 0
    in_flight_lock = threading.Lock()

    def setup(self):
        super().setup()
        # Without TCP_NODELAY small responses wait ~40 ms for the client's delayed ACK.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self):
        if self.path != "/ping":
            return self.answer(404, "text/plain", b"not found")
        status, message = self.ping()
        self.answer(status, "text/plain", message.encode())

    def do_POST(self):
        if self.path != "/invocations":
            return self.answer(404, "text/plain", b"not found")
        with InferenceHandler.in_flight_lock:
            InferenceHandler.in_flight += 1
        try:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                content_type, payload, headers = self.invoke(body)
            except BadRequest as error:
                return self.answer(error.status, "text/plain", str(error).encode())
            self.answer(200, content_type, payload, headers)
        finally:
            with InferenceHandler.in_flight_lock:
                InferenceHandler.in_flight -= 1

    def answer(self, status: int, content_type: str, payload: bytes, headers: dict | None = None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format, *args):
        if self.path != "/ping":  # health checks every few seconds would drown everything else
            super().log_message(format, *args)

    def ping(self) -> tuple[int, str]:
        return 200, ""

    def invoke(self, body: bytes) -> tuple[str, bytes, dict]:
        """(content type, payload, extra response headers) for an /invocations body."""
        raise NotImplementedError


def run(handler_class: type[InferenceHandler]) -> None:
    server = ThreadingHTTPServer(("0.0.0.0", PORT), handler_class)
    server.daemon_threads = True  # idle keep-alive connections must not hold the exit up

    def stop(signum, frame):
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    print(f"serving on port {PORT}", flush=True)
    server.serve_forever()
    server.server_close()
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    while handler_class.in_flight and time.monotonic() < deadline:
        time.sleep(0.05)
    print("stopped", flush=True)


# --- The linear-regression model ---------------------------------------------------------


def load_model() -> tuple[dict | None, str]:
    """(the model, "") or (None, why it cannot be used)."""
    try:
        model = json.loads(MODEL_FILE.read_text())
        coefficients = [float(value) for value in model["coefficients"]]
        return {"coefficients": coefficients, "intercept": float(model["intercept"])}, ""
    except FileNotFoundError:
        return None, f"{MODEL_FILE} is missing: deploy the model.tar.gz that train.py produced"
    except (ValueError, KeyError, TypeError) as error:
        return None, f"{MODEL_FILE} is not a linear-regression model: {error!r}"


MODEL, MODEL_PROBLEM = load_model()


class LinearRegressionHandler(InferenceHandler):
    def ping(self) -> tuple[int, str]:
        return (200, "") if MODEL else (500, MODEL_PROBLEM)

    def invoke(self, body: bytes) -> tuple[str, bytes, dict]:
        if MODEL is None:
            raise BadRequest(MODEL_PROBLEM)
        content_type = (self.headers.get("Content-Type") or "text/csv").split(";")[0].strip()
        rows = parse_rows(body, content_type)
        predictions = [predict(row) for row in rows]
        accept = (self.headers.get("Accept") or "").split(";")[0].strip()
        if accept not in ("application/json", "text/csv"):  # absent or */*: answer in kind
            accept = content_type
        if accept == "application/json":
            return accept, json.dumps({"predictions": predictions}).encode(), {}
        return "text/csv", "".join(f"{value!r}\n" for value in predictions).encode(), {}


def parse_rows(body: bytes, content_type: str) -> list[list[float]]:
    try:
        if content_type == "application/json":
            rows = json.loads(body)["instances"]
        elif content_type == "text/csv":
            rows = [line.split(",") for line in body.decode().splitlines() if line.strip()]
        else:
            raise BadRequest(f"unsupported Content-Type {content_type!r}: send text/csv or application/json")
        return [[float(value) for value in row] for row in rows]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        raise BadRequest(f"could not read the features: {error!r}") from None


def predict(row: list[float]) -> float:
    if len(row) != len(MODEL["coefficients"]):
        raise BadRequest(f"expected {len(MODEL['coefficients'])} features per row, got {len(row)}")
    return (
        sum(weight * value for weight, value in zip(MODEL["coefficients"], row, strict=True))
        + MODEL["intercept"]
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        sys.exit(f"usage: {sys.argv[0]} serve")
    run(LinearRegressionHandler)
