"""What differs between task governance's two resources, scheduler configs (SageMaker's "cluster
policies") and compute quotas: their names on the wire, their members, their rules. Everything
else (ids, versions, statuses, listing) is shared (clusters/policies.py)."""
from collections.abc import Callable
from dataclasses import dataclass, field

from clusters import requests
from clusters.models import PolicyKind


@dataclass(frozen=True)
class Kind:
    value: PolicyKind
    # How messages name one ("cluster policy", "compute quota").
    noun: str
    # The prefix of the operations' members: f"{member}Arn", f"{member}Id", f"{member}Version".
    member: str
    # The kind's own request members, stored in ClusterPolicy.spec.
    spec_members: tuple[str, ...]
    # Values a Create leaves out that Describe shows anyway.
    defaults: dict
    # Cross-field checks of the spec (shape validation done): (spec, the cluster's instance types).
    check: Callable[[dict, set[str]], None]
    # What no two live policies of this kind on one cluster share ("" = one per cluster).
    scope: Callable[[dict], str]
    # The ConflictException message for a second one: (cluster ARN, scope, the existing one's id).
    conflict: Callable[[str, str, str], str]
    # Whether its List summaries carry the spec.
    summary_has_spec: bool
    sort_fields: dict[str, str] = field(
        default_factory=lambda: {"Name": "name", "CreationTime": "creation_time", "Status": "status"}
    )

    @property
    def list_member(self) -> str:
        return f"{self.member}Summaries"

    @property
    def list_operation(self) -> str:
        return f"List{self.member}s"


SCHEDULER_CONFIG = Kind(
    value=PolicyKind.SCHEDULER_CONFIG,
    noun="cluster policy",
    member="ClusterSchedulerConfig",
    spec_members=("SchedulerConfig",),
    defaults={},
    check=requests.check_scheduler_config,
    scope=lambda spec: "",
    conflict=lambda cluster_arn, scope, existing: (
        f"Cluster '{cluster_arn}' already has cluster policy{existing}: a cluster has one cluster policy; "
        "update it instead."
    ),
    summary_has_spec=False,
)

COMPUTE_QUOTA = Kind(
    value=PolicyKind.COMPUTE_QUOTA,
    noun="compute quota",
    member="ComputeQuota",
    spec_members=("ComputeQuotaConfig", "ComputeQuotaTarget", "ActivationState"),
    defaults={"ActivationState": "Enabled"},
    check=requests.check_compute_quota,
    scope=lambda spec: spec["ComputeQuotaTarget"]["TeamName"],
    conflict=lambda cluster_arn, scope, existing: (
        f"Team '{scope}' already has compute quota{existing} on cluster '{cluster_arn}': a team has one "
        "compute quota per cluster; update it instead."
    ),
    summary_has_spec=True,
    sort_fields={
        "Name": "name",
        "CreationTime": "creation_time",
        "Status": "status",
        "ClusterArn": "cluster__cluster_arn",
    },
)
