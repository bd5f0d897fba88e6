"""A model for the batch-transform tests, on the example's HTTP scaffolding (serve.py).

POST /invocations answers each line of the body upper-cased, one line each (a payload of several
records gets several lines); a line holding "reject" is answered 400 with "cannot transform:
<line>"; a body starting with "sleep" waits until the job is stopped, one starting with "nap"
2 s. Run with `train` it writes a model file and exits, so that an Estimator trains with it.
GET /execution-parameters answers the JSON in TRANSFORM_EXECUTION_PARAMETERS, 404 without it. Every request's
Content-Type and Accept, and the GPUs the container was given (NVIDIA_VISIBLE_DEVICES), go to the
container's output, where the tests read them in the logs."""

import os
import sys
import time
from pathlib import Path

from serve import BadRequest, InferenceHandler, run


class TransformHandler(InferenceHandler):
    def do_GET(self):
        parameters = os.environ.get("TRANSFORM_EXECUTION_PARAMETERS")
        if self.path == "/execution-parameters":
            if parameters is None:
                return self.answer(404, "text/plain", b"not served")
            return self.answer(200, "application/json", parameters.encode())
        return super().do_GET()

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
