"""The pod log API (`GET /api/v1/namespaces/{ns}/pods/{pod}/log`), what `hyp get-logs` and
`kubectl logs` read, answered from the pod's CloudWatch Logs stream (elastic/replica_logs.py).

A pod is known while its job exists and the pod has written output; lines from before the job
was created (a deleted job of the same name) are not its. Its stream holds every container the
pod had (a Kubernetes pod shows only its current one, `previous=true` the one before).
Parameters: `timestamps` (each line prefixed with its RFC 3339 time and a space, as the kubelet
does), `tailLines`, `sinceSeconds`, `limitBytes`; `container` is the template's only container
whatever it names; `follow` answers what is there now and ends."""
import time
from datetime import UTC, datetime

from django.conf import settings

from elastic import replica_logs
from elastic.kube.status import bad_request, not_found
from elastic.models import HyperPodJob
from logs import store
from logs.models import LogStream


def pod_log(account_id: str, namespace: str, pod: str, query) -> str:
    stream, job = _stream(account_id, namespace, pod)
    # A job of the same name deleted before this one wrote to the same stream: not this pod's.
    since_ms = int(job.created_at.timestamp() * 1000)
    since_seconds = _count(query, "sinceSeconds", minimum=1)
    if since_seconds is not None:
        since_ms = max(since_ms, int(time.time() * 1000) - since_seconds * 1000)
    events = store.read(stream, since_ms=since_ms, tail=_count(query, "tailLines", minimum=0))
    stamped = query.get("timestamps") in ("true", "1")
    text = "".join(f"{_stamp(ms)} {message}\n" if stamped else f"{message}\n" for ms, message in events)
    limit = _count(query, "limitBytes", minimum=1)
    if limit is not None:
        text = text.encode()[:limit].decode("utf-8", "ignore")
    return text


def _stream(account_id: str, namespace: str, pod: str) -> tuple[LogStream, HyperPodJob]:
    """The pod's stream and its job, if one of the namespace's existing jobs has it; NotFound otherwise."""
    prefix = replica_logs.group_name(namespace, "")
    where = {"account_id": account_id, "region": settings.SAGEPORT_REGION}
    candidates = LogStream.objects.filter(**where, stream_name=pod, group_name__startswith=prefix)
    jobs = HyperPodJob.objects.filter(**where, namespace=namespace)
    for stream in candidates:
        job = jobs.filter(name=stream.group_name[len(prefix):]).first()
        if job is not None:
            return stream, job
    raise not_found("pods", "", pod)


def _count(query, name: str, minimum: int) -> int | None:
    text = query.get(name)
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 12 or int(text) < minimum:
        raise bad_request(f"{name} must be an integer of at least {minimum}")
    return int(text)


def _stamp(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}000000Z"

