"""HyperPodPyTorchJobs as the database records them, and the replicas that run them.

A `HyperPodJob` is one submitted `HyperPodPyTorchJob` (the manifest as received, with defaults
filled) plus what the operator keeps about it: its phase, the world size it targets and the one
it last started, its fault count, the progress the agents reported, and the Kubernetes status it
shows. An `ElasticReplica` is one replica container ("pod") of the job on a node; its GPUs are
`capacity.GpuAllocation` rows it holds, so the unique (node, device) constraint keeps GPUs
exclusive between elastic replicas, training instances and serving containers."""
from django.db import models

from reconcile.leases import LeasedRow


class JobPhase(models.TextChoices):
    PENDING = "Pending"  # waiting for capacity for its smallest allowed world
    CREATING = "Creating"  # replicas starting; the world is started once every agent is ready
    RUNNING = "Running"  # every agent of the world was sent /start
    STOPPING = "Stopping"  # agents told to /stop (resize, fault, preemption, deletion)
    SUSPENDED = "Suspended"  # runPolicy.suspend is true: no replica, no GPU, until it is false
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


FINISHED_PHASES = (JobPhase.SUCCEEDED, JobPhase.FAILED)


class StopReason(models.TextChoices):
    NONE = ""
    RESIZE = "Resize"  # graceful: the world changes size
    FAULT = "Fault"  # a replica faulted or vanished: restart with faultCount + 1
    DELETE = "Delete"  # the job was deleted
    EVICT = "Evict"  # a higher-priority job needs all of its capacity: back to Pending


class HyperPodJob(LeasedRow):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    namespace = models.CharField(max_length=63)
    name = models.CharField(max_length=63)
    uid = models.CharField(max_length=36, unique=True)
    # metadata (labels, annotations) and spec as received, with the CRD's defaults filled.
    manifest = models.JSONField()
    # Kubernetes' optimistic-concurrency token: bumped by every write the client can see.
    resource_version = models.PositiveBigIntegerField(default=1)
    created_at = models.DateTimeField()
    deletion_requested_at = models.DateTimeField(null=True)

    phase = models.CharField(max_length=16, default=JobPhase.PENDING)
    phase_since = models.DateTimeField()
    # The job's owner: the node whose queue runs its steps (its replicas' other nodes each do
    # their own replicas' share, elastic/members.py). Rank 0's node when the world is placed; a
    # live node of the world when the owner is lost (elastic/operator._on_node_lost).
    node = models.ForeignKey("workers.Node", null=True, on_delete=models.SET_NULL, related_name="+")
    # Whether the job's network is a Swarm overlay (a world that spanned nodes: sticky until the
    # job leaves its nodes), else a bridge of the owner's engine; and its subnet, as the owner's
    # engine made it (the other nodes join it on that subnet; every pod has a fixed address).
    overlay = models.BooleanField(default=False)
    network_subnet = models.CharField(max_length=43, blank=True, default="")
    # The world size the operator works toward, and the size of the world it last started.
    target_replicas = models.PositiveIntegerField(default=0)
    world_size = models.PositiveIntegerField(default=0)
    # faultCount sent on /start: the number of fault restarts so far (the agents' JOB_RESTART_COUNT).
    fault_count = models.PositiveIntegerField(default=0)
    # Every restart of the world, resizes included (status.restartCount).
    restart_count = models.PositiveIntegerField(default=0)
    stop_reason = models.CharField(max_length=16, blank=True, default=StopReason.NONE)
    stop_sent_at = models.DateTimeField(null=True)
    started_at = models.DateTimeField(null=True)
    completed_at = models.DateTimeField(null=True)
    last_scaling_at = models.DateTimeField(null=True)
    # Since when the job has run short of a replica that faulted, with no capacity to replace it.
    short_since = models.DateTimeField(null=True)
    # GPUs ("node:device") of replicas that faulted: their replacement is placed elsewhere (the
    # way HyperPod replaces a faulty instance); forgotten when the job next restarts its world.
    avoided_gpus = models.JSONField(default=list)
    # Repeat-offender nodes a full job restart moved the job off (elastic/restarts.py): not
    # placed on again until its world has started elsewhere.
    avoided_nodes = models.JSONField(default=list)
    # The restartPolicy's evaluation window: its counts of process-level and full job restarts
    # and of faults per node (elastic/restarts.Window).
    restarts = models.JSONField(default=dict)
    # The newest complete checkpoint every agent agreed on ({prefix: {progressData, progressCount}}).
    progress = models.JSONField(default=dict)
    # The Kubernetes `status` object as the operator last wrote it (conditions, restartCount,
    # elasticScalingStatus, ...): the API shows it as it is.
    status = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account_id", "namespace", "name"], name="one_hyperpod_job_per_name"
            )
        ]
        indexes = [models.Index(fields=["account_id", "namespace", "created_at"])]

    def __str__(self):
        return f"{self.namespace}/{self.name}"

    @property
    def spec(self) -> dict:
        return self.manifest["spec"]


class ElasticReplica(models.Model):
    job = models.ForeignKey(HyperPodJob, on_delete=models.CASCADE, related_name="replicas")
    group = models.CharField(max_length=63)  # the replicaSpec's name
    index = models.PositiveIntegerField()  # within the group
    node = models.ForeignKey("workers.Node", on_delete=models.CASCADE, related_name="+")
    container_name = models.CharField(max_length=200)
    created_at = models.DateTimeField()
    # Its rank in the world last started; null while it is not part of one.
    rank = models.PositiveIntegerField(null=True)
    # The container as the replica's node last saw it, when that is not the job's owner
    # (elastic/members.py): status, exit code, OOM, the agent's published port. Null: not seen.
    report = models.JSONField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "group", "index"], name="one_replica_per_slot")
        ]

    def __str__(self):
        return self.container_name
