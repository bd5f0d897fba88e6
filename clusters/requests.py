"""Checks on CreateCluster/UpdateCluster and Create/UpdateClusterSchedulerConfig requests that the
botocore shape cannot express.

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
    problems = []
    names = [group["InstanceGroupName"] for group in groups]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        problems.append(f"Instance group names must be unique; repeated: {', '.join(repeated)}.")
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


def check_scheduler_config(scheduler_config: dict) -> None:
    """Names, weights (0-100), the count (at most 10) were checked by the shape; a name given twice
    would make a job's priority ambiguous."""
    names = [priority_class["Name"] for priority_class in scheduler_config.get("PriorityClasses", [])]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        _raise([f"Priority class names must be unique; repeated: {', '.join(repeated)}."])


def _unsupported(params: dict) -> list[str]:
    return [f"{member} is not supported by Sageport: {why}." for member, why in UNSUPPORTED_MEMBERS.items()
            if member in params]


def _raise(problems: list[str]) -> None:
    if problems:
        raise ValidationException(" ".join(problems))
