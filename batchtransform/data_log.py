"""The data log SageMaker writes beside each instance's container output: the stream
`<job>/<host>-<epoch>/data-log` of /aws/sagemaker/TransformJobs, lines as SageMaker writes them
(amazon-sagemaker-examples#1620): `<time>:[sagemaker logs]: MaxConcurrentTransforms=1,
MaxPayloadInMB=6, BatchStrategy=MULTI_RECORD`, then for an object the model rejects
`<bucket>/<key>: ClientError: 400`, `<bucket>/<key>: `, `<bucket>/<key>: Message:` and the
model's message, a line each; for a request the model never answered, one line
`<bucket>/<key>: <why>` (e.g. "Model server did not respond to /invocations request within 600
seconds", batchtransform/model_client.py)."""

import time
from datetime import UTC, datetime

from jobs import log_streams
from jobs.identity import JobIdentity
from logs import store


def write(job: JobIdentity, host: str, lines: list[str]) -> None:
    stream = log_streams.stream(job, host)
    data_log = store.get_stream(
        job.account_id, job.region, job.kind.log_group, f"{stream.stream_name}/data-log"
    )
    now_ms = int(time.time() * 1000)
    stamp = datetime.fromtimestamp(now_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    store.append(
        data_log, [(now_ms, f"{stamp}:[sagemaker logs]: {line}") for line in lines], data_log.source_cursor
    )


def rejection_lines(obj: str, status: int | None, message: str) -> list[str]:
    """What the data log says of an object whose payload the model did not answer with 200
    (`status` None: did not answer at all)."""
    if status is None:
        return [f"{obj}: {message}"]
    head = f"{obj}: ClientError: {status}"
    return [head, f"{obj}: ", f"{obj}: Message:", *(f"{obj}: {line}" for line in message.splitlines())]
