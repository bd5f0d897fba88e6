"""Checks on CreateCluster/UpdateCluster requests, and on the scheduler configs and compute quotas
of Create/Update, that the botocore shape cannot express.

The shape validation (types, lengths, patterns, enums) has already run; these are the cross-field
rules and the limits of what Sageport runs, each problem in one ValidationException."""
from capacity import instance_types
from protocol.errors import ValidationException

# Members Sageport cannot carry out and refuses, rather than pretend: restricted instance groups
# need SageMaker's managed FSx environment, flexible instance types a choice among types.
UNSUPPORTED_MEMBERS = {
    "RestrictedInstanceGroups": "restricted instance groups are not available",
    "RestrictedInstanceGroupsConfig": "restricted instance groups are not available",
}

# Cluster-level members kept as received and echoed by DescribeCluster.
ECHOED_MEMBERS = (
    "VpcConfig", "Orchestrator", "NodeRecovery", "NodeProvisioningMode", "ClusterRole", "AutoScaling",
)


def check_create(params: dict) -> None:
    problems = _unsupported(params)
    if "InstanceGroups" not in params:
        problems.append("InstanceGroups is required: a Sageport cluster is made of instance groups.")
    problems += check_groups(params.get("InstanceGroups", []))
    _raise(problems)


def check_update(params: dict, existing_types: dict[str, str]) -> None:
    """`existing_types`: the cluster's groups, name → InstanceType."""
    problems = _unsupported(params)
    groups = params.get("InstanceGroups", [])
    problems += check_groups(groups, set(existing_types))
    doomed = params.get("InstanceGroupsToDelete", [])
    for name in doomed:
        if name not in existing_types:
            problems.append(f"InstanceGroupsToDelete: the cluster has no instance group '{name}'.")
    for group in groups:
        name, wanted = group["InstanceGroupName"], group.get("InstanceType")
        if name in doomed:
            problems.append(f"Instance group '{name}' cannot be both updated and deleted.")
        if name in existing_types and wanted and wanted != existing_types[name]:
            problems.append(
                f"The InstanceType of instance group '{name}' is {existing_types[name]} and cannot be "
                f"changed to {wanted}: create a new instance group instead."
            )
    _raise(problems)


def check_groups(groups: list[dict], existing: set[str] = frozenset()) -> list[str]:
    """`existing`: names of groups the cluster already has (an update may leave out their type)."""
    problems = _repeated([group["InstanceGroupName"] for group in groups], "Instance group names")
    for position, group in enumerate(groups, start=1):
        where = f"InstanceGroups.{position}."
        if "InstanceRequirements" in group:
            problems.append(f"{where}InstanceRequirements is not supported by Sageport: give InstanceType.")
        elif "InstanceType" not in group and group["InstanceGroupName"] not in existing:
            problems.append(f"{where}InstanceType is required.")
        elif "InstanceType" in group:
            problems += instance_types.unknown_type_problems(group["InstanceType"], where)
        minimum = group.get("MinInstanceCount")
        if minimum is not None and minimum > group["InstanceCount"]:
            problems.append(
                f"{where}MinInstanceCount ({minimum}) must not be more than "
                f"InstanceCount ({group['InstanceCount']})."
            )
    return problems


def check_scheduler_config(spec: dict, cluster_types: set[str]) -> None:
    """Names, weights (0-100), the count (at most 10) were checked by the shape; a name given twice
    would make a job's priority ambiguous."""
    classes = spec["SchedulerConfig"].get("PriorityClasses", [])
    _raise(_repeated([priority_class["Name"] for priority_class in classes], "Priority class names"))


def check_compute_quota(spec: dict, cluster_types: set[str]) -> None:
    """A quota shares out the cluster's own instance types, each once; borrow limits belong to the
    strategy that borrows. `cluster_types`: the InstanceTypes of the cluster's groups."""
    config = spec["ComputeQuotaConfig"]
    resources = config.get("ComputeQuotaResources", [])
    problems = _repeated([resource["InstanceType"] for resource in resources], "Compute quota instance types")
    for position, resource in enumerate(resources, start=1):
        wanted = resource["InstanceType"]
        if wanted not in cluster_types:
            problems.append(
                f"ComputeQuotaConfig.ComputeQuotaResources.{position}.InstanceType '{wanted}' is not the "
                "type of any instance group of the cluster."
            )
    sharing = config.get("ResourceSharingConfig", {})
    limits = [member for member in ("BorrowLimit", "AbsoluteBorrowLimits") if member in sharing]
    if limits and sharing["Strategy"] != "LendAndBorrow":
        problems.append(
            f"ResourceSharingConfig.{' and '.join(limits)} applies only to the LendAndBorrow strategy, "
            f"not {sharing['Strategy']}."
        )
    _raise(problems)


def _repeated(names: list[str], what: str) -> list[str]:
    repeated = sorted({name for name in names if names.count(name) > 1})
    return [f"{what} must be unique; repeated: {', '.join(repeated)}."] if repeated else []


def _unsupported(params: dict) -> list[str]:
    return [f"{member} is not supported by Sageport: {why}." for member, why in UNSUPPORTED_MEMBERS.items()
            if member in params]


def _raise(problems: list[str]) -> None:
    if problems:
        raise ValidationException(" ".join(problems))
