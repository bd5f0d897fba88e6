"""Worker nodes and what training jobs, serving containers and elastic replicas hold on them.

A `Node` is one worker host (one Docker engine) with its inventory, as its worker registered it,
and the time of its last heartbeat. A `Placement` says on which node one instance (`algo-N`) of a
training, processing or transform job runs and with which container limits; a `GpuAllocation` gives that
instance, or one serving container of an endpoint, one GPU of its node. The unique constraint on
(node, device) is what makes GPUs exclusive: two schedulers racing for the same device cannot
both commit it."""
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Node(models.Model):
    name = models.CharField(max_length=128, unique=True)
    # Where its serving containers' ports are published, as the API reaches them
    # (SAGEPORT_NODE_ADDRESS of its worker).
    address = models.CharField(max_length=64, default="127.0.0.1")
    cpus = models.PositiveIntegerField()
    memory_bytes = models.PositiveBigIntegerField()
    # NVIDIA GPUs, each {"id": device id for Docker, "uuid": ..., "name": ..., "memory_mib": ...}.
    gpus = models.JSONField(default=list)
    registered_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField()
    # Set when the heartbeat went stale (its jobs were then failed or restarted); cleared when the
    # node's worker comes back.
    lost_at = models.DateTimeField(null=True)
    # The instance type this node stands for (SAGEPORT_NODE_INSTANCE_TYPE, else the largest
    # catalog type its size fits; "" when none does): HyperPod instance groups are filled with
    # nodes of their InstanceType.
    instance_type = models.CharField(max_length=64, blank=True, default="")
    # Where the node's checkpoint tier service listens for its peers (SAGEPORT_TIER_PEER_PORT),
    # on `address`.
    tier_peer_port = models.PositiveIntegerField(default=9201)
    # The swarm's id of its engine's node (`docker info`'s Swarm.NodeID), "" when the engine is in
    # no swarm: the swarm node removed when this node is lost (capacity/swarm.py).
    swarm_node_id = models.CharField(max_length=64, blank=True, default="")
    # Its engine's role in the swarm ("manager" | "worker") and the address it advertised there,
    # as last seen: what the engine rejoins with when it comes back outside the swarm.
    swarm_role = models.CharField(max_length=16, blank=True, default="")
    swarm_address = models.CharField(max_length=64, blank=True, default="")
    # When a manager removed `swarm_node_id` from the swarm while this node was lost; null while
    # that removal is still due (retried by every sweep) or was never needed.
    swarm_removed_at = models.DateTimeField(null=True)
    # How long a silence makes it lost: its worker's SAGEPORT_NODE_LOST_AFTER_SECONDS, since a
    # node knows how often it can beat (null: the deciding worker's own setting).
    lost_after_seconds = models.FloatField(null=True)

    def __str__(self):
        return self.name

    @property
    def gpu_ids(self) -> list[str]:
        return [gpu["id"] for gpu in self.gpus]


class SwarmJoin(models.Model):
    """How an engine joins the nodes' swarm, as a manager node last told it (one row): the join
    tokens (`docker swarm join-token`) and the managers' swarm node ids and addresses. A node
    whose engine is outside the swarm when its worker registers joins with it (capacity/swarm_join.py).
    The tokens admit any engine that reaches a manager: this row is as secret as the database."""

    manager_token = models.CharField(max_length=128)
    worker_token = models.CharField(max_length=128)
    managers = models.JSONField(default=dict)  # swarm node id -> "address:port"
    updated_at = models.DateTimeField(auto_now=True)


class Placement(models.Model):
    """One instance of exactly one container job: a training job's (`job`, the column's name from
    before processing jobs) or a processing job's. By label ("jobs" is the training app): capacity
    imports no feature. Each feature's scheduler reads its own; the free capacity of a node counts
    them all (capacity/fitting.py)."""

    job = models.ForeignKey(
        "jobs.TrainingJob", null=True, on_delete=models.CASCADE, related_name="placements"
    )
    processing_job = models.ForeignKey(
        "processing.ProcessingJob", null=True, on_delete=models.CASCADE, related_name="placements"
    )
    transform_job = models.ForeignKey(
        "batchtransform.TransformJob", null=True, on_delete=models.CASCADE, related_name="placements"
    )
    host = models.CharField(max_length=16)  # algo-N
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="placements")
    # The container limits: the instance type's size, capped at the node's.
    nano_cpus = models.PositiveBigIntegerField()
    memory_bytes = models.PositiveBigIntegerField()
    # When the job got this capacity: its start work (image, workspace) is timed from here, so
    # that the time spent waiting for capacity (Pending) never counts.
    placed_at = models.DateTimeField(default=timezone.now)
    # When its container was created: a container missing after that has vanished (an
    # infrastructure fault), not merely "not started yet".
    container_started_at = models.DateTimeField(null=True)
    # What the worker of a node that is not the job's first (a job spanning nodes) tells the
    # node running the job's steps about this instance (training/spans.py): its inputs are
    # staged, its container as last seen, why it failed, when it was sent SIGTERM, and that its
    # model and output were uploaded for the job's node to merge; and the subnet of the job's
    # overlay network, which the node that created it records for the others.
    ready_at = models.DateTimeField(null=True)
    report = models.JSONField(null=True)
    failure_reason = models.TextField(blank=True, default="")
    stop_signalled_at = models.DateTimeField(null=True)
    parts_uploaded_at = models.DateTimeField(null=True)
    network_subnet = models.CharField(max_length=43, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "host"], name="one_placement_per_instance"),
            models.UniqueConstraint(
                fields=["processing_job", "host"], name="one_placement_per_processing_instance"
            ),
            models.UniqueConstraint(
                fields=["transform_job", "host"], name="one_placement_per_transform_instance"
            ),
            models.CheckConstraint(
                condition=Q(job__isnull=False, processing_job__isnull=True, transform_job__isnull=True)
                | Q(job__isnull=True, processing_job__isnull=False, transform_job__isnull=True)
                | Q(job__isnull=True, processing_job__isnull=True, transform_job__isnull=False),
                name="placement_of_exactly_one_job",
            ),
        ]

    def __str__(self):
        return f"{self.job_id or self.processing_job_id or self.transform_job_id}/{self.host}@{self.node_id}"


class GpuAllocation(models.Model):
    """One GPU held by exactly one holder: a training instance, a serving container or an elastic
    replica. Deleting the holder row releases the GPU (cascade)."""

    placement = models.ForeignKey(Placement, null=True, on_delete=models.CASCADE, related_name="gpus")
    container = models.ForeignKey(
        "endpoints.ServingContainer", null=True, on_delete=models.CASCADE, related_name="gpus"
    )
    replica = models.ForeignKey(
        "elastic.ElasticReplica", null=True, on_delete=models.CASCADE, related_name="gpus"
    )
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpu_allocations")
    device_id = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["node", "device_id"], name="one_holder_per_gpu"),
            models.CheckConstraint(
                condition=Q(placement__isnull=False, container__isnull=True, replica__isnull=True)
                | Q(placement__isnull=True, container__isnull=False, replica__isnull=True)
                | Q(placement__isnull=True, container__isnull=True, replica__isnull=False),
                name="gpu_held_by_exactly_one_holder",
            ),
        ]

    def __str__(self):
        return f"{self.node_id}:{self.device_id}"
