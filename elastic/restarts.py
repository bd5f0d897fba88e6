"""How a HyperPodPyTorchJob restarts after a fault: HyperPod's `runPolicy.restartPolicy`, decided
from the job's counts alone (the operator carries the decision out).

What each field means, from AWS's public material (the HyperPod training operator guide's
run-policy table, "Using the training operator to run jobs", and the CRD's field descriptions
in the `sagemaker-hyperpod` SDK's hyperpod_pytorch_job_unified_config.py):
- `jobMaxRetryCount`: "Maximum number of restarts at the process level" (the table), which the
  same guide's example job reads as the total ("3 process restarts before full job restart,
  maximum 10 total retries"): every restart counts, whatever its kind; once spent, the next
  fault fails the job.
- `numRestartBeforeFullJobRestart`: "The number of standard restarts before a full job
  restart". A standard restart is a process-level restart (PLR, `restartType: PLR`): every pod
  keeps its container and the agents restart the training processes (AWS's agent: "Operator
  triggers PLR across ALL Agents via a `/stop` command"). After that many in the current window,
  the next fault is a full job restart (JLR): every pod is created again. Left out, it is 0:
  every restart is a full job restart (what Sageport did before it read the field).
- `maxFullJobRestarts`: "The max allowed number of full job restarts before failing the job":
  a fault that would need one more in the window fails the job (reason
  MaxFullJobRestartsReached). Left out: no cap but jobMaxRetryCount.
- `evalPeriodSeconds`: "The period of evaluating the restart limit in seconds": the two counts
  above are kept per window (status.restartStatus: currentEvalPeriod, restartCount — standard
  restarts since the last full one — and fullJobRestartCount). A window opens at the first
  restart after the previous one ran out.
- `maxNumRepeatOffendersToAvoid`: "The max repeat offenders to exclude in next job level
  restart". A repeat offender is a node (HyperPod's instance) that held a faulty replica in two
  or more restarts of the window; a full job restart places the job on other nodes than the
  worst of them, at most this many (most faults first, then by name).

A fault can restart in place only while every faulty replica's container is still there (its
agent reported the fault, or the container exited: it is started again in its pod, as the
kubelet restarts a pod's container); a replica whose container vanished has no pod left to
restart, so the restart is a full one whatever the counts say."""
from dataclasses import dataclass, replace
from datetime import datetime

from elastic.spec import NO_RESTART_POLICY, JobSpec

PROCESS_LEVEL, JOB_LEVEL = "PLR", "JLR"  # latestFaultyPodInstanceList.restartType
REPEAT_OFFENCES = 2  # faulty restarts of the window that make a node a repeat offender


@dataclass(frozen=True)
class Window:
    """The current evaluation period's counts, as the job row keeps them (HyperPodJob.restarts)."""
    started: float | None = None  # Unix seconds; None before the first restart
    restarts: int = 0  # standard (process-level) restarts since the last full job restart
    full_restarts: int = 0
    node_faults: tuple[tuple[str, int], ...] = ()  # (node, faulty restarts), sorted by node

    @classmethod
    def load(cls, stored: dict) -> "Window":
        return cls(
            started=stored.get("started"),
            restarts=stored.get("restarts", 0),
            full_restarts=stored.get("fullRestarts", 0),
            node_faults=tuple(sorted((stored.get("nodeFaults") or {}).items())),
        )

    def dump(self) -> dict:
        return {"started": self.started, "restarts": self.restarts,
                "fullRestarts": self.full_restarts, "nodeFaults": dict(self.node_faults)}


@dataclass(frozen=True)
class Restart:
    kind: str  # PROCESS_LEVEL | JOB_LEVEL
    window: Window  # the counts with this restart in them
    avoided_nodes: tuple[str, ...] = ()  # repeat offenders the restarted job is not placed on
    summary: str = ""  # for the Restarting condition's message


@dataclass(frozen=True)
class GiveUp:
    reason: str  # the Failed condition's reason
    summary: str


def decide(
    spec: JobSpec, window: Window, restarts_so_far: int, faulty_nodes: list[str],
    in_place: bool, now: datetime,
) -> Restart | GiveUp:
    """What a fault of replicas on `faulty_nodes` (one entry per faulty replica) leads to;
    `in_place`: every faulty replica's container still exists."""
    if restarts_so_far >= spec.job_max_retry_count:
        return GiveUp("JobMaxRetryCountReached",
                      f"jobMaxRetryCount ({spec.job_max_retry_count}) restarts were spent.")
    policy = spec.restart_policy or NO_RESTART_POLICY
    window = _current(window, policy.eval_period_seconds, now.timestamp())
    window = replace(window, node_faults=_counted(window.node_faults, faulty_nodes))
    if in_place and window.restarts < policy.restarts_before_full:
        window = replace(window, restarts=window.restarts + 1)
        summary = (f"Process-level restart {window.restarts} of {policy.restarts_before_full} "
                   "in this evaluation period.")
        return Restart(PROCESS_LEVEL, window, summary=summary)
    cap = policy.max_full_job_restarts
    if cap is not None and window.full_restarts >= cap:
        return GiveUp("MaxFullJobRestartsReached",
                      f"maxFullJobRestarts ({cap}) full job restarts were spent in this evaluation period.")
    window = replace(window, restarts=0, full_restarts=window.full_restarts + 1)
    avoided = repeat_offenders(window)[: policy.max_repeat_offenders]
    summary = f"Full job restart {window.full_restarts}" + (f" of {cap}" if cap is not None else "")
    summary += " in this evaluation period" + (f", avoiding {', '.join(avoided)}." if avoided else ".")
    return Restart(JOB_LEVEL, window, avoided_nodes=tuple(avoided), summary=summary)


def repeat_offenders(window: Window) -> list[str]:
    """The window's nodes with faulty replicas in REPEAT_OFFENCES restarts or more, worst first."""
    counted = [(-count, node) for node, count in window.node_faults if count >= REPEAT_OFFENCES]
    return [node for _, node in sorted(counted)]


def restart_status(spec: JobSpec, window: Window) -> dict | None:
    """status.restartStatus, for a job with a restartPolicy: currentEvalPeriod is the Unix time
    the current window opened (0 before the first restart)."""
    if spec.restart_policy is None:
        return None
    return {"currentEvalPeriod": int(window.started or 0), "fullJobRestartCount": window.full_restarts,
            "restartCount": window.restarts}


def _current(window: Window, period: int, now: float) -> Window:
    """The window a restart at `now` counts in: a new one once `period` has passed."""
    if window.started is not None and now - window.started < period:
        return window
    return Window(started=now)


def _counted(node_faults: tuple[tuple[str, int], ...], faulty_nodes: list[str]) -> tuple:
    counts = dict(node_faults)
    for node in set(faulty_nodes):  # once per restart, however many of its replicas faulted
        counts[node] = counts.get(node, 0) + 1
    return tuple(sorted(counts.items()))
