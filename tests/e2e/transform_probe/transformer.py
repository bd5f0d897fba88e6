"""A model for the batch-transform tests, on the example's HTTP scaffolding (serve.py).

POST /invocations answers each line of the body upper-cased, one line each (a payload of several
records gets several lines); a line holding "reject" is answered 400 with "cannot transform:
<line>"; a body starting with "sleep" waits until the job is stopped, one starting with "nap"
2 s. Hostile and unusual answers: a body starting with "chunked" is answered with
`Transfer-Encoding: chunked` (no Content-Length), one starting with "flood" with an endless chunked
answer, one starting with "shout" after printing SHOUT_LINES (from its environment) lines to
stdout at once. A request body sent chunked (a whole object streamed) is read as such. Run with
`train` it writes a model file and exits, so that an Estimator trains with it.
GET /execution-parameters answers the JSON in TRANSFORM_EXECUTION_PARAMETERS, 404 without it. Every request's
Content-Type and Accept, and the GPUs the container was given (NVIDIA_VISIBLE_DEVICES), go to the
container's output, where the tests read them in the logs."""

import itertools
import os
import sys
import time
from pathlib import Path

from serve import BadRequest, InferenceHandler, run

CHUNK_BYTES = 1 << 16


class TransformHandler(InferenceHandler):
    def do_GET(self):
        parameters = os.environ.get("TRANSFORM_EXECUTION_PARAMETERS")
        if self.path == "/execution-parameters":
            if parameters is None:
                return self.answer(404, "text/plain", b"not served")
            return self.answer(200, "application/json", parameters.encode())
        return super().do_GET()

    def do_POST(self):
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        else:
            body = self._chunked_body()
        if body.startswith(b"flood"):
            return self._answer_chunked(itertools.repeat(b"f" * CHUNK_BYTES))
        if body.startswith(b"shout"):
            lines = int(os.environ.get("SHOUT_LINES", "0"))
            shouted = (f"shouting line {index:09d} {'!' * 72}\n" for index in range(lines))
            sys.stdout.write("".join(shouted))
            sys.stdout.flush()
        try:
            content_type, payload, headers = self.invoke(body)
        except BadRequest as error:
            return self.answer(error.status, "text/plain", str(error).encode())
        if body.startswith(b"chunked"):
            starts = range(0, len(payload), CHUNK_BYTES)
            return self._answer_chunked(payload[start : start + CHUNK_BYTES] for start in starts)
        self.answer(200, content_type, payload, headers)

    def _chunked_body(self) -> bytes:
        parts = []
        while size := int(self.rfile.readline().split(b";")[0], 16):
            parts.append(self.rfile.read(size))
            self.rfile.readline()  # the CRLF after the chunk
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
            pass
        return b"".join(parts)

    def _answer_chunked(self, chunks):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def ping(self) -> tuple[int, str]:
        return 200, ""

    def invoke(self, body: bytes) -> tuple[str, bytes, dict]:
        print(
            f"invocation content-type={self.headers.get('Content-Type')} accept={self.headers.get('Accept')} "
            f"bytes={len(body)} batch={os.environ.get('SAGEMAKER_BATCH')} "
            f"gpus={os.environ.get('NVIDIA_VISIBLE_DEVICES')}",
            flush=True,
        )
        if body.startswith(b"sleep"):
            time.sleep(600)
        if body.startswith(b"nap"):
            time.sleep(2)
        lines = body.decode(errors="replace").splitlines()
        for line in lines:
            if "reject" in line:
                raise BadRequest(f"cannot transform: {line}")
        answer = "\n".join(line.upper() for line in lines)
        return "text/plain", answer.encode(), {}


if __name__ == "__main__":
    if sys.argv[1:2] == ["train"]:  # one image that trains and serves, as a BYO image does
        Path("/opt/ml/model/trained.txt").write_text("upper-casing\n")
        sys.exit(0)
    run(TransformHandler)
