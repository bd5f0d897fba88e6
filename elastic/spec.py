"""A `HyperPodPyTorchJob` manifest: its validation, the CRD's defaults, and the parsed `JobSpec`
the operator reads.

`validate(manifest)` lists every problem as a `FieldError` naming the field the way Kubernetes
does (`spec.replicaSpecs[0].template.spec.containers[0].image`); the API answers them as one 422.
`defaulted_spec(manifest)` is the spec the database keeps: unknown fields of the CRD's own
objects pruned (as Kubernetes prunes a structural CRD's unknown fields; `unknown_fields` names
them for the API's warnings) and defaults filled. `parse(manifest)` reads a valid manifest,
submitted or stored, into frozen dataclasses.

Choices where the CRD says nothing public (the field rules mirror the `sagemaker-hyperpod` 3.12.0
models and the v1.1 job template's validators):
- A replica's pod template has exactly one container (Sageport runs one container per replica);
  init containers, `envFrom`, `valueFrom`, `subPath`, host namespaces and privileged containers
  are refused, and volumes are only `persistentVolumeClaim` and `emptyDir` (a `hostPath` would
  hand a tenant the host's files).
- Elastic jobs: `minReplicas` defaults to 1 and `maxReplicas` to the sum of the groups'
  `maxReplicas` (each group's defaults to its `replicas`); 1 ≤ min ≤ max; the groups must be able
  to hold `maxReplicas`, and their initial `replicas` must not exceed it.
  `replicaDiscreteValues` may come in any order (parsed sorted, without repeats); each is > 0,
  ≥ min and ≤ max. The timeouts default to the values of AWS's documented example job
  (graceful shutdown 600 s, scaling 60 s, faulty scale-down 30 s).
- A job without `elasticPolicy` runs the sum of its groups' `replicas`, which must be ≥ 1.
- `runPolicy.jobMaxRetryCount` defaults to 0; `ttlSecondsAfterFinished` 0 (the SDK's default)
  or -1 mean "keep the finished job" (None). `suspend`, `activeDeadlineSeconds` and
  `startupDeadlineSeconds` are read for the operator; `faultDeadlineSeconds` and `workloadMode`
  are refused (the operator has no fault-time clock and one workload mode): a field accepted and
  then ignored would let a job run in a way its author did not ask for."""

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from elastic.quantities import parse_quantity

API_VERSION = "sagemaker.amazonaws.com/v1"
KIND = "HyperPodPyTorchJob"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
GPU_RESOURCE = "nvidia.com/gpu"

DEFAULT_GRACEFUL_SHUTDOWN_SECONDS = 600
DEFAULT_SCALING_TIMEOUT_SECONDS = 60
DEFAULT_FAULTY_SCALE_DOWN_SECONDS = 30
CLEAN_POD_POLICIES = ("All", "None", "Running")

# The fields of the CRD's own objects; anything else in them is pruned, as Kubernetes does.
_SPEC_FIELDS = ("nprocPerNode", "replicaSpecs", "runPolicy", "elasticPolicy")
_REPLICA_FIELDS = ("name", "replicas", "maxReplicas", "spares", "template")
_RUN_POLICY_FIELDS = (
    "activeDeadlineSeconds", "cleanPodPolicy", "faultDeadlineSeconds", "jobMaxRetryCount",
    "logMonitoringConfiguration", "restartPolicy", "startupDeadlineSeconds", "suspend",
    "ttlSecondsAfterFinished", "workloadMode",
)
_RESTART_POLICY_FIELDS = (
    "evalPeriodSeconds", "maxFullJobRestarts", "numRestartBeforeFullJobRestart",
    "maxNumRepeatOffendersToAvoid", "scaleUpSnoozeTimeInSeconds",
)
_ELASTIC_FIELDS = (
    "minReplicas", "maxReplicas", "replicaIncrementStep", "replicaDiscreteValues",
    "scalingTimeoutInSeconds", "gracefulShutdownTimeoutInSeconds", "faultyScaleDownTimeoutInSeconds",
)
# Fields of the CRD's run policy that Sageport does not act on: a job naming one is refused.
_REFUSED_RUN_POLICY_FIELDS = {
    "faultDeadlineSeconds": "is not supported: a faulted job restarts until jobMaxRetryCount is "
                            "spent (use activeDeadlineSeconds to bound its time)",
    "workloadMode": "is not supported: replicas always run as the job's own containers",
}

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_RULE = "at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric"
_NPROC = re.compile(r"auto|cpu|gpu|\d{1,4}")
_MAX_ANNOTATIONS_BYTES = 256 * 1024


@dataclass(frozen=True)
class FieldError:
    field: str  # the path, as Kubernetes writes it: spec.replicaSpecs[0].name
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class InvalidManifest(ValueError):
    def __init__(self, errors: list[FieldError]):
        super().__init__("; ".join(map(str, errors)))
        self.errors = errors


@dataclass(frozen=True)
class VolumeMount:  # from the pod template's volumes + the container's volumeMounts
    kind: str  # "persistentVolumeClaim" | "emptyDir"
    source: str  # the claim name; the volume's name for emptyDir
    mount_path: str
    read_only: bool


@dataclass(frozen=True)
class ReplicaGroup:  # one replicaSpecs[] entry (its template's only container)
    name: str
    replicas: int  # the initial count (default 0)
    max_replicas: int  # default: replicas
    image: str
    command: tuple[str, ...] | None  # k8s command (replaces ENTRYPOINT), None when absent
    args: tuple[str, ...] | None  # k8s args (replaces CMD)
    env: tuple[tuple[str, str], ...]
    gpus: int  # nvidia.com/gpu, 0 when absent
    cpus: float | None  # cores
    memory_bytes: int | None
    priority_class: str  # template.spec.priorityClassName, "" when absent
    volume_mounts: tuple[VolumeMount, ...]
    working_dir: str | None
    spares: int = 0


@dataclass(frozen=True)
class ElasticPolicy:
    min_replicas: int
    max_replicas: int
    increment_step: int | None
    discrete_values: tuple[int, ...] | None
    graceful_shutdown_timeout: int
    scaling_timeout: int
    faulty_scale_down_timeout: int


@dataclass(frozen=True)
class RestartPolicy:  # runPolicy.restartPolicy (elastic/restarts.py acts on it)
    eval_period_seconds: int  # the window the counts below are kept in
    restarts_before_full: int  # process-level restarts in a window before a full job restart
    max_full_job_restarts: int | None  # full job restarts in a window before Failed; None: no cap
    max_repeat_offenders: int  # nodes a full job restart avoids, at most


# No restartPolicy: every restart is a full job restart, bounded only by jobMaxRetryCount.
NO_RESTART_POLICY = RestartPolicy(
    eval_period_seconds=0, restarts_before_full=0, max_full_job_restarts=None, max_repeat_offenders=0
)


@dataclass(frozen=True)
class JobSpec:
    groups: tuple[ReplicaGroup, ...]
    nproc_per_node: str  # "auto" | "cpu" | "gpu" | a number
    elastic: ElasticPolicy | None
    job_max_retry_count: int
    log_monitoring: tuple[dict, ...]  # runPolicy.logMonitoringConfiguration as given
    ttl_seconds_after_finished: int | None  # None: kept
    clean_pod_policy: str  # "All" | "None" | "Running"
    queue_name: str  # the job's kueue.x-k8s.io/queue-name label, "" when absent
    priority_class: str  # the job's kueue.x-k8s.io/priority-class label, "" when absent
    scale_up_snooze_seconds: int = 0  # runPolicy.restartPolicy.scaleUpSnoozeTimeInSeconds
    restart_policy: RestartPolicy | None = None  # runPolicy.restartPolicy, None when absent
    suspend: bool = False  # runPolicy.suspend: no replica runs while True
    active_deadline_seconds: int | None = None  # from startTime, then Failed (DeadlineExceeded)
    startup_deadline_seconds: int | None = None  # replicas ready within it, else Failed

    @property
    def min_world(self) -> int:
        return self.elastic.min_replicas if self.elastic else sum(g.replicas for g in self.groups)

    @property
    def max_world(self) -> int:
        return self.elastic.max_replicas if self.elastic else sum(g.replicas for g in self.groups)


def validate(manifest: Any) -> list[FieldError]:
    """Every problem of a submitted manifest (apiVersion, kind, metadata, spec); [] when valid."""
    reader = _Reader()
    if not isinstance(manifest, dict):
        return [FieldError("<body>", "must be a JSON object")]
    if manifest.get("apiVersion") != API_VERSION:
        reader.fail("apiVersion", f"must be {API_VERSION}")
    if manifest.get("kind") != KIND:
        reader.fail("kind", f"must be {KIND}")
    _read_metadata(reader, manifest.get("metadata"))
    _read(reader, manifest)
    return reader.errors


def parse(manifest: dict) -> JobSpec:
    """The JobSpec of a valid manifest (as submitted, or as stored: {metadata, spec});
    InvalidManifest if it is not valid."""
    reader = _Reader()
    job = _read(reader, manifest)
    if reader.errors:
        raise InvalidManifest(reader.errors)
    return job


def defaulted_spec(manifest: dict) -> dict:
    """The spec of a valid manifest as stored: the CRD objects' unknown fields pruned, defaults
    filled (the pod templates are kept as given)."""
    spec = manifest["spec"]
    job = parse(manifest)
    groups = []
    for entry, group in zip(spec["replicaSpecs"], job.groups, strict=True):
        kept = _known(entry, _REPLICA_FIELDS)
        groups.append({**kept, "replicas": group.replicas, "maxReplicas": group.max_replicas,
                       "spares": group.spares})
    run_policy = {
        **_known(spec.get("runPolicy") or {}, _RUN_POLICY_FIELDS),
        "cleanPodPolicy": job.clean_pod_policy,
        "jobMaxRetryCount": job.job_max_retry_count,
    }
    if job.restart_policy is not None:
        run_policy["restartPolicy"] = _known(run_policy["restartPolicy"], _RESTART_POLICY_FIELDS)
    stored = {"nprocPerNode": job.nproc_per_node, "replicaSpecs": groups, "runPolicy": run_policy}
    if job.elastic is not None:
        stored["elasticPolicy"] = {
            **_known(spec["elasticPolicy"], _ELASTIC_FIELDS),
            "minReplicas": job.elastic.min_replicas,
            "maxReplicas": job.elastic.max_replicas,
            "gracefulShutdownTimeoutInSeconds": job.elastic.graceful_shutdown_timeout,
            "scalingTimeoutInSeconds": job.elastic.scaling_timeout,
            "faultyScaleDownTimeoutInSeconds": job.elastic.faulty_scale_down_timeout,
        }
    return stored


def unknown_fields(manifest: dict) -> list[str]:
    """The paths of the fields `defaulted_spec` prunes (Kubernetes warns about them)."""
    spec = manifest.get("spec") or {}
    found = [f"spec.{key}" for key in spec if key not in _SPEC_FIELDS]
    for i, entry in enumerate(spec.get("replicaSpecs") or []):
        found += [f"spec.replicaSpecs[{i}].{key}" for key in entry if key not in _REPLICA_FIELDS]
    for name, fields in (("runPolicy", _RUN_POLICY_FIELDS), ("elasticPolicy", _ELASTIC_FIELDS)):
        found += [f"spec.{name}.{key}" for key in spec.get(name) or {} if key not in fields]
    restart = (spec.get("runPolicy") or {}).get("restartPolicy") or {}
    found += [f"spec.runPolicy.restartPolicy.{key}" for key in restart if key not in _RESTART_POLICY_FIELDS]
    return found


def is_dns_label(value: object) -> bool:
    return isinstance(value, str) and len(value) <= 63 and bool(_DNS_LABEL.fullmatch(value))


def _known(mapping: dict, fields: tuple[str, ...]) -> dict:
    return {key: value for key, value in mapping.items() if key in fields}


# --- Reading, with every problem collected --------------------------------------------------


class _Reader:
    """Typed reads of a JSON tree that record a FieldError instead of raising."""

    def __init__(self):
        self.errors: list[FieldError] = []

    def fail(self, field: str, message: str) -> None:
        self.errors.append(FieldError(field, message))

    def mapping(self, value: Any, field: str, required: bool = False) -> dict:
        if value is None:
            if required:
                self.fail(field, "is required")
            return {}
        if not isinstance(value, dict):
            self.fail(field, "must be an object")
            return {}
        return value

    def array(self, value: Any, field: str) -> list:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(field, "must be an array")
            return []
        return value

    def integer(self, obj: dict, key: str, field: str, default: int | None, minimum: int = 0) -> int | None:
        value = obj.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(field, "must be an integer")
            return default
        if value < minimum:
            self.fail(field, f"must be greater than or equal to {minimum}")
            return default
        return value

    def string(self, obj: dict, key: str, field: str, default: str | None = None) -> str | None:
        value = obj.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            self.fail(field, "must be a string")
            return default
        return value

    def strings(self, obj: dict, key: str, field: str) -> tuple[str, ...] | None:
        value = obj.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.fail(field, "must be an array of strings")
            return None
        return tuple(value)


def _read_metadata(reader: _Reader, metadata: Any) -> None:
    metadata = reader.mapping(metadata, "metadata", required=True)
    name = metadata.get("name")
    if name is None and metadata.get("generateName") is None:
        reader.fail("metadata.name", "is required")
    elif name is not None and not is_dns_label(name):
        reader.fail("metadata.name", "must be a DNS-1123 label: at most 63 lower-case letters, "
                    "digits and '-', starting and ending with a letter or digit")
    generate = metadata.get("generateName")
    if name is None and generate is not None and not (
        isinstance(generate, str) and len(generate) <= 58 and is_dns_label(generate + "x")
    ):
        reader.fail("metadata.generateName", "must be a DNS-1123 label prefix of at most 58 characters")
    namespace = metadata.get("namespace")
    if namespace is not None and not is_dns_label(namespace):
        reader.fail("metadata.namespace", "must be a DNS-1123 label")
    for key, value in reader.mapping(metadata.get("labels"), "metadata.labels").items():
        problem = _label_problem(key, value)
        if problem:
            reader.fail(f"metadata.labels[{key[:80]}]", problem)
    annotations = reader.mapping(metadata.get("annotations"), "metadata.annotations")
    if not all(isinstance(value, str) for value in annotations.values()):
        reader.fail("metadata.annotations", "values must be strings")
    elif sum(len(k) + len(v) for k, v in annotations.items()) > _MAX_ANNOTATIONS_BYTES:
        reader.fail("metadata.annotations", f"may not exceed {_MAX_ANNOTATIONS_BYTES} bytes in all")


def _label_problem(key: str, value: Any) -> str | None:
    prefix, _, name = key.rpartition("/")
    if prefix and not (len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix)):
        return "the key's prefix must be a DNS-1123 subdomain"
    if not (len(name) <= 63 and _LABEL_NAME.fullmatch(name)):
        return f"the key's name {_LABEL_RULE}"
    if not isinstance(value, str) or not (value == "" or (len(value) <= 63 and _LABEL_NAME.fullmatch(value))):
        return f"the value must be a string: {_LABEL_RULE}"
    return None


def _read(reader: _Reader, manifest: dict) -> JobSpec:
    metadata = manifest.get("metadata") if isinstance(manifest.get("metadata"), dict) else {}
    labels = metadata.get("labels") or {}
    spec = reader.mapping(manifest.get("spec"), "spec", required=True)
    groups = _read_groups(reader, spec.get("replicaSpecs"))
    run_policy = reader.mapping(spec.get("runPolicy"), "spec.runPolicy")
    elastic = None
    if spec.get("elasticPolicy") is not None:
        elastic = _read_elastic(reader, spec["elasticPolicy"], groups)
    if elastic is None and groups and sum(g.replicas for g in groups) < 1:
        reader.fail("spec.replicaSpecs", "a job without elasticPolicy runs the sum of its groups' "
                    "replicas, which must be at least 1")
    clean_pod_policy = reader.string(run_policy, "cleanPodPolicy", "spec.runPolicy.cleanPodPolicy", "All")
    if clean_pod_policy == "OnlyComplete":  # in AWS's table of values, with no word on its pods
        reader.fail("spec.runPolicy.cleanPodPolicy", "OnlyComplete is not supported: which pods it "
                    f"keeps is not documented; use one of {', '.join(CLEAN_POD_POLICIES)}")
    elif clean_pod_policy not in CLEAN_POD_POLICIES:
        reader.fail("spec.runPolicy.cleanPodPolicy", f"must be one of {', '.join(CLEAN_POD_POLICIES)}")
    _refuse_unsupported(reader, run_policy)
    return JobSpec(
        groups=tuple(groups),
        nproc_per_node=_read_nproc(reader, spec.get("nprocPerNode", "auto")),
        elastic=elastic,
        job_max_retry_count=reader.integer(
            run_policy, "jobMaxRetryCount", "spec.runPolicy.jobMaxRetryCount", 0
        ),
        log_monitoring=_read_log_monitoring(reader, run_policy.get("logMonitoringConfiguration")),
        ttl_seconds_after_finished=_read_ttl(reader, run_policy),
        clean_pod_policy=clean_pod_policy,
        queue_name=labels.get(QUEUE_LABEL, "") if isinstance(labels, dict) else "",
        priority_class=labels.get(PRIORITY_LABEL, "") if isinstance(labels, dict) else "",
        scale_up_snooze_seconds=_read_scale_up_snooze(reader, run_policy),
        restart_policy=_read_restart_policy(reader, run_policy),
        suspend=_read_suspend(reader, run_policy),
        active_deadline_seconds=_read_deadline(reader, run_policy, "activeDeadlineSeconds"),
        startup_deadline_seconds=_read_deadline(reader, run_policy, "startupDeadlineSeconds"),
    )


def _read_nproc(reader: _Reader, value: Any) -> str:
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not _NPROC.fullmatch(text):
        reader.fail("spec.nprocPerNode", "must be auto, cpu, gpu or a number of processes")
        return "auto"
    return text


def _read_ttl(reader: _Reader, run_policy: dict) -> int | None:
    ttl = reader.integer(
        run_policy, "ttlSecondsAfterFinished", "spec.runPolicy.ttlSecondsAfterFinished", None, minimum=-1
    )
    return ttl if ttl is not None and ttl > 0 else None


def _read_suspend(reader: _Reader, run_policy: dict) -> bool:
    value = run_policy.get("suspend")
    if value is not None and not isinstance(value, bool):
        reader.fail("spec.runPolicy.suspend", "must be a boolean")
        return False
    return bool(value)


def _read_deadline(reader: _Reader, run_policy: dict, key: str) -> int | None:
    return reader.integer(run_policy, key, f"spec.runPolicy.{key}", None, minimum=1)


def _refuse_unsupported(reader: _Reader, run_policy: dict) -> None:
    for key, message in _REFUSED_RUN_POLICY_FIELDS.items():
        if key in run_policy:
            reader.fail(f"spec.runPolicy.{key}", message)


def _read_scale_up_snooze(reader: _Reader, run_policy: dict) -> int:
    restart = run_policy.get("restartPolicy")
    if not isinstance(restart, dict):
        return 0
    field = "spec.runPolicy.restartPolicy.scaleUpSnoozeTimeInSeconds"
    return reader.integer(restart, "scaleUpSnoozeTimeInSeconds", field, 0)


def _read_restart_policy(reader: _Reader, run_policy: dict) -> RestartPolicy | None:
    """The run policy's restartPolicy (evalPeriodSeconds required, as the CRD has it); None
    without one."""
    if run_policy.get("restartPolicy") is None:
        return None
    field = "spec.runPolicy.restartPolicy"
    restart = reader.mapping(run_policy["restartPolicy"], field)
    if "evalPeriodSeconds" not in restart:
        reader.fail(f"{field}.evalPeriodSeconds", "is required")
    return RestartPolicy(
        eval_period_seconds=reader.integer(
            restart, "evalPeriodSeconds", f"{field}.evalPeriodSeconds", 0, minimum=1
        ),
        restarts_before_full=reader.integer(
            restart, "numRestartBeforeFullJobRestart", f"{field}.numRestartBeforeFullJobRestart", 0
        ),
        max_full_job_restarts=reader.integer(
            restart, "maxFullJobRestarts", f"{field}.maxFullJobRestarts", None
        ),
        max_repeat_offenders=reader.integer(
            restart, "maxNumRepeatOffendersToAvoid", f"{field}.maxNumRepeatOffendersToAvoid", 0
        ),
    )


def _read_log_monitoring(reader: _Reader, value: Any) -> tuple[dict, ...]:
    rules = []
    for i, rule in enumerate(reader.array(value, "spec.runPolicy.logMonitoringConfiguration")):
        field = f"spec.runPolicy.logMonitoringConfiguration[{i}]"
        rule = reader.mapping(rule, field, required=True)
        for key in ("name", "logPattern"):
            if not isinstance(rule.get(key), str) or not rule.get(key):
                reader.fail(f"{field}.{key}", "is required (a non-empty string)")
        rules.append(rule)
    return tuple(rules)


# --- Elastic policy -------------------------------------------------------------------------


def _read_elastic(reader: _Reader, value: Any, groups: list[ReplicaGroup]) -> ElasticPolicy | None:
    field = "spec.elasticPolicy"
    policy = reader.mapping(value, field)
    capacity = sum(g.max_replicas for g in groups)
    minimum = reader.integer(policy, "minReplicas", f"{field}.minReplicas", 1, minimum=1)
    maximum = reader.integer(policy, "maxReplicas", f"{field}.maxReplicas", max(capacity, minimum), minimum=1)
    if minimum > maximum:
        reader.fail(f"{field}.minReplicas", f"must be less than or equal to maxReplicas ({maximum})")
    if groups and maximum > capacity:
        reader.fail(f"{field}.maxReplicas", f"the replica groups hold at most {capacity} replicas "
                    "(the sum of their maxReplicas)")
    initial = sum(g.replicas for g in groups)
    if initial > maximum:
        reader.fail("spec.replicaSpecs", f"the groups' replicas add up to {initial}, more than "
                    f"elasticPolicy.maxReplicas ({maximum})")
    step = reader.integer(policy, "replicaIncrementStep", f"{field}.replicaIncrementStep", None, minimum=1)
    values = _read_discrete_values(reader, policy, minimum, maximum)
    if "replicaIncrementStep" in policy and "replicaDiscreteValues" in policy:
        reader.fail(f"{field}.replicaDiscreteValues",
                    "replicaIncrementStep and replicaDiscreteValues are mutually exclusive: give one")
    return ElasticPolicy(
        min_replicas=minimum,
        max_replicas=maximum,
        increment_step=step,
        discrete_values=values,
        graceful_shutdown_timeout=reader.integer(
            policy, "gracefulShutdownTimeoutInSeconds", f"{field}.gracefulShutdownTimeoutInSeconds",
            DEFAULT_GRACEFUL_SHUTDOWN_SECONDS,
        ),
        scaling_timeout=reader.integer(
            policy, "scalingTimeoutInSeconds", f"{field}.scalingTimeoutInSeconds",
            DEFAULT_SCALING_TIMEOUT_SECONDS,
        ),
        faulty_scale_down_timeout=reader.integer(
            policy, "faultyScaleDownTimeoutInSeconds", f"{field}.faultyScaleDownTimeoutInSeconds",
            DEFAULT_FAULTY_SCALE_DOWN_SECONDS,
        ),
    )


def _read_discrete_values(
    reader: _Reader, policy: dict, minimum: int, maximum: int
) -> tuple[int, ...] | None:
    field = "spec.elasticPolicy.replicaDiscreteValues"
    if policy.get("replicaDiscreteValues") is None:
        return None
    values = policy["replicaDiscreteValues"]
    if not isinstance(values, list) or not values or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in values
    ):
        reader.fail(field, "must be a non-empty array of integers")
        return None
    if any(v <= 0 for v in values):
        reader.fail(field, f"every value must be positive, got {values[:16]}")
    elif any(v > maximum for v in values):
        reader.fail(field, f"every value must be at most maxReplicas ({maximum}), got {values[:16]}")
    elif any(v < minimum for v in values):
        reader.fail(field, f"every value must be at least minReplicas ({minimum}), got {values[:16]}")
    return tuple(sorted(set(values)))


# --- Replica groups -------------------------------------------------------------------------


def _read_groups(reader: _Reader, value: Any) -> list[ReplicaGroup]:
    entries = reader.array(value, "spec.replicaSpecs")
    if not entries:
        reader.fail("spec.replicaSpecs", "must have at least one replica group")
    groups, names = [], set()
    for i, entry in enumerate(entries):
        field = f"spec.replicaSpecs[{i}]"
        entry = reader.mapping(entry, field, required=True)
        name = entry.get("name")
        if not is_dns_label(name):
            reader.fail(f"{field}.name", "is required: a DNS-1123 label")
        elif name in names:
            reader.fail(f"{field}.name", f"duplicate group name {name!r}")
        else:
            names.add(name)
        group = _read_group(reader, entry, field)
        if group is not None:
            groups.append(group)
    return groups


def _read_group(reader: _Reader, entry: dict, field: str) -> ReplicaGroup | None:
    replicas = reader.integer(entry, "replicas", f"{field}.replicas", 0)
    max_replicas = reader.integer(entry, "maxReplicas", f"{field}.maxReplicas", replicas)
    if max_replicas < replicas:
        reader.fail(f"{field}.maxReplicas", f"must be at least replicas ({replicas})")
        max_replicas = replicas
    spares = reader.integer(entry, "spares", f"{field}.spares", 0)
    template = reader.mapping(entry.get("template"), f"{field}.template", required=True)
    pod = reader.mapping(template.get("spec"), f"{field}.template.spec", required=True)
    field = f"{field}.template.spec"
    _refuse_host_access(reader, pod, field)
    priority_class = reader.string(pod, "priorityClassName", f"{field}.priorityClassName", "")
    containers = reader.array(pod.get("containers"), f"{field}.containers")
    if len(containers) != 1:
        reader.fail(f"{field}.containers", "must have exactly one container (Sageport runs one "
                    f"container per replica), got {len(containers)}")
        return None
    if pod.get("initContainers"):
        reader.fail(f"{field}.initContainers", "init containers are not supported")
    container = reader.mapping(containers[0], f"{field}.containers[0]", required=True)
    volumes = _read_volumes(reader, pod.get("volumes"), f"{field}.volumes")
    field = f"{field}.containers[0]"
    image = reader.string(container, "image", f"{field}.image", "")
    if not image.strip():
        reader.fail(f"{field}.image", "is required")
    gpus, cpus, memory = _read_resources(reader, container.get("resources"), f"{field}.resources")
    working_dir = reader.string(container, "workingDir", f"{field}.workingDir")
    if working_dir is not None and not working_dir.startswith("/"):
        reader.fail(f"{field}.workingDir", "must be an absolute path")
    return ReplicaGroup(
        name=entry.get("name") if isinstance(entry.get("name"), str) else "",
        replicas=replicas,
        max_replicas=max_replicas,
        image=image,
        command=reader.strings(container, "command", f"{field}.command"),
        args=reader.strings(container, "args", f"{field}.args"),
        env=_read_env(reader, container, field),
        gpus=gpus,
        cpus=cpus,
        memory_bytes=memory,
        priority_class=priority_class,
        volume_mounts=_read_mounts(reader, container.get("volumeMounts"), volumes, f"{field}.volumeMounts"),
        working_dir=working_dir,
        spares=spares,
    )


def _refuse_host_access(reader: _Reader, pod: dict, field: str) -> None:
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(key):
            reader.fail(f"{field}.{key}", "a replica may not share the host's namespaces")
    containers = pod.get("containers") if isinstance(pod.get("containers"), list) else []
    for i, container in enumerate(containers):
        context = container.get("securityContext") if isinstance(container, dict) else None
        if isinstance(context, dict) and context.get("privileged"):
            reader.fail(f"{field}.containers[{i}].securityContext", "privileged containers are not allowed")


def _read_env(reader: _Reader, container: dict, field: str) -> tuple[tuple[str, str], ...]:
    if container.get("envFrom"):
        reader.fail(f"{field}.envFrom", "is not supported: give literal env values")
    env = []
    for i, entry in enumerate(reader.array(container.get("env"), f"{field}.env")):
        entry = reader.mapping(entry, f"{field}.env[{i}]", required=True)
        name = entry.get("name")
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            reader.fail(f"{field}.env[{i}].name", "is required: a name without '='")
            continue
        if "valueFrom" in entry:
            reader.fail(f"{field}.env[{i}].valueFrom", "is not supported: give a literal value")
            continue
        value = reader.string(entry, "value", f"{field}.env[{i}].value", "")
        if "\0" in value:
            reader.fail(f"{field}.env[{i}].value", "may not contain a NUL character")
        env.append((name, value))
    return tuple(env)


def _read_resources(reader: _Reader, value: Any, field: str) -> tuple[int, float | None, int | None]:
    resources = reader.mapping(value, field)
    limits = reader.mapping(resources.get("limits"), f"{field}.limits")
    requests = reader.mapping(resources.get("requests"), f"{field}.requests")
    quantities: dict[str, Decimal | None] = {}
    for name in (GPU_RESOURCE, "cpu", "memory"):
        limit = _quantity(reader, limits, name, f"{field}.limits[{name}]")
        request = _quantity(reader, requests, name, f"{field}.requests[{name}]")
        if name == GPU_RESOURCE and None not in (limit, request) and limit != request:
            reader.fail(f"{field}.requests[{name}]", "must equal the limit for GPUs")
        elif None not in (limit, request) and request > limit:
            reader.fail(f"{field}.requests[{name}]", f"must be less than or equal to the {name} limit")
        quantities[name] = limit if limit is not None else request
    gpus = quantities[GPU_RESOURCE] or Decimal(0)
    if gpus != gpus.to_integral_value():
        reader.fail(f"{field}.limits[{GPU_RESOURCE}]", "must be a whole number of GPUs")
    cpus, memory = quantities["cpu"], quantities["memory"]
    return (
        int(gpus),
        float(cpus) if cpus is not None else None,
        int(memory.to_integral_value(rounding="ROUND_CEILING")) if memory is not None else None,
    )


def _quantity(reader: _Reader, values: dict, name: str, field: str) -> Decimal | None:
    if values.get(name) is None:
        return None
    try:
        quantity = parse_quantity(values[name])
    except ValueError as error:
        reader.fail(field, str(error))
        return None
    if quantity < 0:
        reader.fail(field, "must be greater than or equal to 0")
        return None
    return quantity


def _read_volumes(reader: _Reader, value: Any, field: str) -> dict[str, tuple[str, str, bool]]:
    """{volume name: (kind, source, read only)} of the pod's volumes."""
    volumes = {}
    for i, volume in enumerate(reader.array(value, field)):
        volume = reader.mapping(volume, f"{field}[{i}]", required=True)
        name = volume.get("name")
        if not is_dns_label(name):
            reader.fail(f"{field}[{i}].name", "is required: a DNS-1123 label")
            continue
        if name in volumes:
            reader.fail(f"{field}[{i}].name", f"duplicate volume name {name!r}")
        sources = [key for key in volume if key != "name"]
        if "hostPath" in sources:
            reader.fail(f"{field}[{i}].hostPath", "hostPath volumes are refused: a job may not "
                        "read or write the host's files (use a persistentVolumeClaim)")
        elif sources == ["persistentVolumeClaim"]:
            claim = reader.mapping(volume["persistentVolumeClaim"], f"{field}[{i}].persistentVolumeClaim")
            claim_name = claim.get("claimName")
            if not is_dns_label(claim_name):
                reader.fail(f"{field}[{i}].persistentVolumeClaim.claimName", "is required: a DNS-1123 label")
            volumes[name] = ("persistentVolumeClaim", claim_name, claim.get("readOnly") is True)
        elif sources == ["emptyDir"]:
            reader.mapping(volume["emptyDir"], f"{field}[{i}].emptyDir")
            volumes[name] = ("emptyDir", name, False)
        else:
            reader.fail(f"{field}[{i}]", "only persistentVolumeClaim and emptyDir volumes are "
                        "supported (exactly one source per volume)")
    return volumes


def _read_mounts(
    reader: _Reader, value: Any, volumes: dict[str, tuple[str, str, bool]], field: str
) -> tuple[VolumeMount, ...]:
    mounts, paths = [], set()
    for i, mount in enumerate(reader.array(value, field)):
        mount = reader.mapping(mount, f"{field}[{i}]", required=True)
        path = mount.get("mountPath")
        if not isinstance(path, str) or not path.startswith("/") or ".." in path.split("/"):
            reader.fail(f"{field}[{i}].mountPath", "must be an absolute path without '..'")
            continue
        if path in paths:
            reader.fail(f"{field}[{i}].mountPath", f"{path!r} is mounted twice")
        paths.add(path)
        if mount.get("subPath") or mount.get("subPathExpr"):
            reader.fail(f"{field}[{i}].subPath", "is not supported")
        volume = volumes.get(mount.get("name")) if isinstance(mount.get("name"), str) else None
        if volume is None:
            reader.fail(f"{field}[{i}].name", "must name one of the pod's volumes")
            continue
        kind, source, claim_read_only = volume
        read_only = mount.get("readOnly") is True or claim_read_only
        mounts.append(VolumeMount(kind=kind, source=source, mount_path=path, read_only=read_only))
    return tuple(mounts)
