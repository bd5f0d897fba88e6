"""HyperPod clusters as the database records them.

A `Cluster` holds `InstanceGroup`s; each group is filled with registered nodes of its
InstanceType, one `ClusterMember` row per node. A node belongs to at most one cluster: the unique
`node` column makes that hold even when two passes race for the same free node. Task governance
adds `ClusterPolicy` rows (a cluster's scheduler config, its teams' compute quotas), whose
replaced versions are kept as `PolicyRevision`s."""
from django.db import models
from django.db.models import Q


class ClusterStatus(models.TextChoices):
    CREATING = "Creating"
    IN_SERVICE = "InService"
    UPDATING = "Updating"
    FAILED = "Failed"
    DELETING = "Deleting"


class Cluster(models.Model):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    cluster_name = models.CharField(max_length=63)
    # arn:…:cluster/<12 lower-case letters and digits>, SageMaker's form (not the name).
    cluster_arn = models.CharField(max_length=256, unique=True)
    cluster_status = models.CharField(max_length=16, default=ClusterStatus.CREATING)
    failure_message = models.CharField(max_length=1024, blank=True, default="")
    # The members Sageport keeps and echoes as received (VpcConfig, Orchestrator, NodeRecovery,
    # NodeProvisioningMode, ClusterRole, AutoScaling); groups and tiered storage have columns.
    request = models.JSONField(default=dict)
    # TieredStorageConfig as last given ({"Mode", "InstanceMemoryAllocationPercentage"}); null
    # when never given (the tier is then off).
    tiered_storage = models.JSONField(null=True)
    tags = models.JSONField(default=list)
    creation_time = models.DateTimeField()
    # When the last change that needs nodes began (create, or an update raising a count): the
    # provisioning deadline is timed from here.
    provisioning_since = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account_id", "region", "cluster_name"], name="one_cluster_per_name"
            )
        ]
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.cluster_name


class InstanceGroup(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="instance_groups")
    name = models.CharField(max_length=63)
    instance_type = models.CharField(max_length=64)
    target_count = models.PositiveIntegerField()
    # MinInstanceCount when given: enough for the group to be InService on creation.
    min_count = models.PositiveIntegerField(null=True)
    # The group's specification as received (LifeCycleConfig, ExecutionRole, ThreadsPerCore, ...).
    spec = models.JSONField()
    # The order of the request: groups are filled and shown in it.
    position = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="one_group_per_name")]
        ordering = ["position", "pk"]

    def __str__(self):
        return f"{self.cluster_id}/{self.name}"


class ClusterMember(models.Model):
    group = models.ForeignKey(InstanceGroup, on_delete=models.CASCADE, related_name="members")
    # By label ("workers" is the capacity app). Deleting the node row (retiring it) removes it.
    node = models.OneToOneField("workers.Node", on_delete=models.CASCADE, related_name="cluster_member")
    # `i-` + 17 hex digits derived from the node's name: stable for the node's life.
    instance_id = models.CharField(max_length=19)
    launch_time = models.DateTimeField()

    def __str__(self):
        return f"{self.group_id}:{self.node_id}"


class PolicyKind(models.TextChoices):
    """Task governance's two resources, by the resource type their ARNs name."""

    SCHEDULER_CONFIG = "cluster-scheduler-config"  # a cluster policy: priority classes, fair share
    COMPUTE_QUOTA = "compute-quota"  # a team's share of the cluster


class PolicyStatus(models.TextChoices):
    """The SchedulerResourceStatus values Sageport reaches: a change applies within its call."""

    CREATED = "Created"
    UPDATED = "Updated"
    DELETED = "Deleted"


class ClusterPolicy(models.Model):
    """A scheduler config or a compute quota of a cluster, as it is now. A deleted one is kept,
    Deleted, for Describe and List, until its cluster is deleted (the rows go with it)."""

    kind = models.CharField(max_length=32, choices=PolicyKind.choices)
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="policies")
    # The 12 lower-case letters and digits that name it (the API knows it by this id only).
    policy_id = models.CharField(max_length=12, unique=True)
    arn = models.CharField(max_length=256, unique=True)
    name = models.CharField(max_length=63)
    status = models.CharField(max_length=16, default=PolicyStatus.CREATED)
    # ClusterSchedulerConfigVersion / ComputeQuotaVersion: 1 on creation, one more on every update.
    version = models.PositiveIntegerField(default=1)
    # The kind's members as last given: {SchedulerConfig}, or {ComputeQuotaConfig,
    # ComputeQuotaTarget, ActivationState}.
    spec = models.JSONField()
    description = models.CharField(max_length=1024, null=True)
    # What no two live policies of a kind on a cluster share: "" for scheduler configs (one per
    # cluster), the team name for compute quotas (one per team).
    scope = models.CharField(max_length=64, default="", blank=True)
    tags = models.JSONField(default=list)
    creation_time = models.DateTimeField()
    last_modified_time = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "kind", "scope"],
                condition=~Q(status=PolicyStatus.DELETED),
                name="one_live_policy_per_scope",
            )
        ]
        indexes = [models.Index(fields=["account_id", "region", "kind", "creation_time"])]

    def __str__(self):
        return f"{self.kind}/{self.policy_id}"


class PolicyRevision(models.Model):
    """A version of a policy that an update replaced, as it was: what Describe answers when asked
    for that version."""

    policy = models.ForeignKey(ClusterPolicy, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    spec = models.JSONField()
    description = models.CharField(max_length=1024, null=True)
    # When this version was made (its LastModifiedTime while it was current).
    modified_time = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["policy", "version"], name="one_revision_per_version")]

    def __str__(self):
        return f"{self.policy_id}@{self.version}"
