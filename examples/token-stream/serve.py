"""A token-by-token text generator behind SageMaker's serving contract, for response streaming
(InvokeEndpointWithResponseStream): `docker run IMAGE serve` answers GET /ping and
POST /invocations on port 8080, writing each token as one HTTP chunk as soon as it is made.

Request (JSON): {"inputs": "a prompt", "parameters": {"max_new_tokens": 20, "token_delay": 0.05,
"hold": "key"}}. The "model" is a fixed word list walked from a point the prompt chooses, so a
prompt always gets the same text. `hold`: after the first token, wait (up to 60 s) until a request
{"release": "key"} arrives, which lets a demo or a test show the first token reaching the client
while the rest is not yet made. Standard library only."""

import json
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORDS = (
    "the quick brown fox jumps over the lazy dog while a small model streams one token at a time "
    "so that the first words reach the reader long before the last ones are written"
).split()
HOLD_SECONDS = 60.0
_holds: dict[str, threading.Event] = {}
_holds_lock = threading.Lock()


def tokens(prompt: str, count: int):
    start = zlib.crc32(prompt.encode()) % len(WORDS)
    for index in range(count):
        yield WORDS[(start + index) % len(WORDS)] + " "


def _hold(key: str) -> threading.Event:
    with _holds_lock:
        return _holds.setdefault(key, threading.Event())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a token is a small write: send it now, not after an ACK

    def do_GET(self) -> None:
        if self.path == "/ping":
            self._whole(200, b"")
        else:
            self._whole(404, b"not found")

    def do_POST(self) -> None:
        if self.path != "/invocations":
            self._whole(404, b"not found")
            return
        try:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            parameters = request.get("parameters", {})
            count = int(parameters.get("max_new_tokens", 20))
            delay = float(parameters.get("token_delay", 0.0))
        except (ValueError, TypeError, AttributeError) as error:
            self._whole(400, f"bad request: {error}".encode())
            return
        if "release" in request:
            _hold(str(request["release"])).set()
            self._whole(200, b"released")
            return
        self._stream(tokens(str(request.get("inputs", "")), count), delay, parameters.get("hold"))

    def _stream(self, generated, delay: float, hold) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index, token in enumerate(generated):
            if index == 1 and hold is not None:
                _hold(str(hold)).wait(timeout=HOLD_SECONDS)
            elif index and delay:
                time.sleep(delay)
            data = token.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _whole(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args) -> None:
        sys.stderr.write("token-stream: " + format % args + "\n")


def main() -> None:
    if sys.argv[1:] != ["serve"]:
        sys.exit(f"usage: {sys.argv[0]} serve")
    server = ThreadingHTTPServer(("0.0.0.0", 8080), Handler)
    server.daemon_threads = True
    print("token-stream: serving on 8080", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
