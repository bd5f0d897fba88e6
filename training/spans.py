"""Jobs whose instances span several nodes (SAGEPORT_MULTI_NODE_NETWORK=overlay): who does what.

The node of algo-1 (`scheduler.node_of`) runs the job's steps, as for any job, and does the work
of its own instances. Every other node of the job is a member: its worker does the same work for
the instances placed on it (`training/member.py`: stage their inputs, start their containers on
the job's overlay network, collect their logs, stop them, upload what they leave) and tells the
job's node what it saw through the `Placement` rows, which this module reads and writes. No
node ever asks another's engine or disk anything: the database and S3 are all they share.

The instances' model and output directories live on each node's disk: a member uploads its
instances' as archives under `<output path>/<job>/sageport-instances/<host>/`, and the job's node
unpacks them into its own workspace before it packs the one model.tar.gz SageMaker users expect,
then deletes them."""
from django.db.models import Q
from django.utils import timezone

from capacity import nodes
from capacity.models import Placement
from runtime import labels
from runtime.base import ContainerState
from storage import archives, s3, safe_files
from training import workspace
from training.artifacts import output_location
from training.models import TrainingJob

FIRST_HOST = "algo-1"
PARTS = "sageport-instances"
ARCHIVES = {"model.tar.gz": "model_dir", "output.tar.gz": "output_data_dir"}  # name -> HostWorkspace dir


def _placements(job: TrainingJob):
    return Placement.objects.filter(job=job)


def _elsewhere(job: TrainingJob):
    """The placements on other nodes than algo-1's, the node that runs the job's steps."""
    first = _placements(job).filter(host=FIRST_HOST).values("node_id")
    return _placements(job).exclude(node_id__in=first)


def spans_nodes(job: TrainingJob) -> bool:
    return _placements(job).values("node").distinct().count() > 1


def placed_here(job: TrainingJob) -> list[str]:
    """The job's instances placed on this node, in resourceconfig.json order."""
    placed = _placements(job).filter(node__name=nodes.local_name()).values_list("host", flat=True)
    return sorted(placed)  # as workspace.host_names sorts them


def member_nodes(job_id: int) -> list[str]:
    """The nodes of the job other than algo-1's (whose workers must do their share)."""
    first = Placement.objects.filter(job_id=job_id, host=FIRST_HOST).values("node_id")
    placed = Placement.objects.filter(job_id=job_id).exclude(node_id__in=first)
    return sorted(set(placed.values_list("node__name", flat=True)))


# --- What the job's node reads --------------------------------------------------------------


def all_ready(job: TrainingJob) -> bool:
    return not _placements(job).filter(ready_at__isnull=True).exists()


def member_failure(job: TrainingJob) -> str:
    """Why a member could not do its share (staging, starting, a helper), if it could not."""
    failed = _placements(job).exclude(failure_reason="").order_by("host")
    return failed.values_list("failure_reason", flat=True).first() or ""


def remote_states(job: TrainingJob) -> dict[str, ContainerState | None]:
    """The containers of the instances on other nodes, as their members last saw them (None:
    not started yet, or gone)."""
    return {host: _state(report) for host, report in _elsewhere(job).values_list("host", "report")}


def remote_vanished(job: TrainingJob) -> list[str]:
    placed = _elsewhere(job).filter(report__vanished=True)
    return sorted(placed.values_list("host", flat=True))


def reported_failure(job: TrainingJob, host: str) -> str:
    """The FailureReason a member made of its failed container (it alone reads the failure file)."""
    placed = _elsewhere(job).filter(host=host).first()
    return ((placed.report or {}).get("failure_reason") or "") if placed else ""


def network_subnet(job: TrainingJob) -> str:
    """The subnet of the job's overlay network, once the node that created it recorded it."""
    return _placements(job).exclude(network_subnet="").values_list("network_subnet", flat=True).first() or ""


def record_network_subnet(job: TrainingJob, subnet: str) -> None:
    _placements(job).update(network_subnet=subnet)


def parts_uploaded(job: TrainingJob) -> bool:
    return not _elsewhere(job).filter(parts_uploaded_at__isnull=True).exists()


def gather_parts(job: TrainingJob) -> None:
    """Unpack the members' uploaded model and output directories into this node's workspace, so
    that the artifacts are packed exactly as for instances on one node."""
    remote = list(_elsewhere(job).values_list("host", flat=True))
    bucket, prefix = output_location(job)
    for host in remote:
        host_workspace = workspace.host_workspace(job, host)
        for name, directory in ARCHIVES.items():
            destination = getattr(host_workspace, directory)
            archive = workspace.job_root(job) / f"{host}-{name}"
            s3.download_many([(bucket, _part_key(prefix, host, name), archive)])
            safe_files.remove_tree(destination)  # a gather repeated after a crash starts afresh
            archives.safe_extract(archive, destination)
            archive.unlink()


def delete_parts(job: TrainingJob) -> None:
    if not _elsewhere(job).exists():
        return  # nothing was uploaded for a job on one node
    bucket, prefix = output_location(job)
    s3.delete_keys(bucket, s3.list_keys(bucket, f"{prefix}/{PARTS}/"))


# --- What a member writes -------------------------------------------------------------------


def mark_ready(job: TrainingJob, hosts: list[str]) -> None:
    _placements(job).filter(host__in=hosts, ready_at__isnull=True).update(ready_at=timezone.now())


def hosts_ready(job: TrainingJob, hosts: list[str]) -> bool:
    return _placements(job).filter(host__in=hosts, ready_at__isnull=False).count() == len(hosts)


def report_failure(job: TrainingJob, hosts: list[str], reason: str) -> None:
    _placements(job).filter(host__in=hosts, failure_reason="").update(failure_reason=reason[:1024])


def report(job: TrainingJob, host: str, state: ContainerState | None, failure_reason: str = "",
           vanished: bool = False) -> None:
    seen = {"vanished": True} if vanished else _report_of(state, failure_reason)
    _placements(job).filter(host=host).update(report=seen)


def signalled(job: TrainingJob, host: str) -> bool:
    return _placements(job).filter(host=host, stop_signalled_at__isnull=False).exists()


def mark_signalled(job: TrainingJob, host: str) -> None:
    _placements(job).filter(host=host).update(stop_signalled_at=timezone.now())


def parts_uploaded_here(job: TrainingJob, hosts: list[str]) -> bool:
    return not _placements(job).filter(host__in=hosts, parts_uploaded_at__isnull=True).exists()


def upload_parts(job: TrainingJob, hosts: list[str]) -> None:
    """Upload the model and output directories of this node's instances for the job's node."""
    bucket, prefix = output_location(job)
    for host in hosts:
        host_workspace = workspace.host_workspace(job, host)
        for name, directory in ARCHIVES.items():
            source = getattr(host_workspace, directory)
            archives.upload_tar_gz([source], bucket, _part_key(prefix, host, name))
    done = Q(host__in=hosts, parts_uploaded_at__isnull=True)
    _placements(job).filter(done).update(parts_uploaded_at=timezone.now())


def _part_key(prefix: str, host: str, name: str) -> str:
    return f"{prefix}/{PARTS}/{host}/{name}"


def _report_of(state: ContainerState | None, failure_reason: str) -> dict | None:
    if state is None:
        return None
    return {
        "name": state.name, "id": state.id, "status": state.status, "exit_code": state.exit_code,
        "oom_killed": state.oom_killed, "node": state.labels.get(labels.NODE, ""),
        "finished_at": state.finished_at, "failure_reason": failure_reason,
    }


def _state(seen: dict | None) -> ContainerState | None:
    if not seen or seen.get("vanished"):
        return None
    return ContainerState(
        name=seen["name"], id=seen["id"], status=seen["status"], exit_code=seen["exit_code"],
        oom_killed=seen["oom_killed"], labels={labels.NODE: seen["node"]}, finished_at=seen["finished_at"],
    )
