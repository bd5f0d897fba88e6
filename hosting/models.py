"""Hosting as the database records it: models, endpoint configs, endpoints, and what runs them.

An endpoint runs one or two *deployments*: the active one and, during a blue/green update, the
pending one. A deployment is a snapshot of an endpoint config and its models taken when it was
requested, so deleting the config or a model later never changes what runs. Each deployment
owns serving containers, one row per container, whose state says whether traffic may reach it."""

from django.db import models

from reconcile.leases import LeasedRow


class SageMakerModel(models.Model):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    model_name = models.CharField(max_length=63)
    # Lower-cased name inside, as SageMaker does; unique, so names are unique case-insensitively.
    model_arn = models.CharField(max_length=2048, unique=True)
    # The validated CreateModel request (without Tags), stored as received.
    request = models.JSONField()
    tags = models.JSONField(default=list)
    creation_time = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.model_name


class EndpointConfig(models.Model):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    endpoint_config_name = models.CharField(max_length=63)
    endpoint_config_arn = models.CharField(max_length=2048, unique=True)
    # The validated CreateEndpointConfig request (without Tags), with defaults filled in.
    request = models.JSONField()
    tags = models.JSONField(default=list)
    creation_time = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.endpoint_config_name


class EndpointStatus(models.TextChoices):
    CREATING = "Creating"
    IN_SERVICE = "InService"
    UPDATING = "Updating"
    FAILED = "Failed"
    DELETING = "Deleting"


class Endpoint(LeasedRow):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    endpoint_name = models.CharField(max_length=63)
    endpoint_arn = models.CharField(max_length=2048, unique=True)
    # The config the active deployment runs (the pending one's is in its deployment row).
    endpoint_config_name = models.CharField(max_length=63)
    tags = models.JSONField(default=list)

    endpoint_status = models.CharField(max_length=16, default=EndpointStatus.CREATING)
    failure_reason = models.CharField(max_length=1024, blank=True, default="")
    creation_time = models.DateTimeField()
    last_modified_time = models.DateTimeField()
    # The DeploymentConfig of the last CreateEndpoint/UpdateEndpoint that gave one.
    last_deployment_config = models.JSONField(null=True)

    class Meta:
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.endpoint_name


class DeploymentPhase(models.TextChoices):
    # Containers starting and being health-checked; no traffic yet.
    PROVISIONING = "Provisioning"
    # Healthy; receiving `traffic_percent` of the endpoint's traffic while the active one serves the rest.
    SHIFTING = "Shifting"
    # Serving all traffic (there is at most one active deployment per endpoint).
    ACTIVE = "Active"
    # Replaced, rolled back or deleted: its containers are drained and stopped, then the row goes.
    RETIRING = "Retiring"


ROUTED_PHASES = frozenset({DeploymentPhase.SHIFTING, DeploymentPhase.ACTIVE})


class EndpointDeployment(models.Model):
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deployments")
    endpoint_config_name = models.CharField(max_length=63)
    # {"EndpointConfig": <request>, "Models": {<model name>: <CreateModel request>}} when requested.
    snapshot = models.JSONField()
    # {<variant name>: {"DesiredWeight": float, "DesiredInstanceCount": int}}: what the variants
    # should have now (UpdateEndpointWeightsAndCapacities changes it in place).
    desired = models.JSONField()
    # The DeploymentConfig this deployment rolls out with ({} for SageMaker's default).
    deployment_config = models.JSONField(default=dict)
    # `{"<image>": "<image id>"}`, resolved when the images were checked.
    resolved_images = models.JSONField(default=dict)

    phase = models.CharField(max_length=16, default=DeploymentPhase.PROVISIONING)
    failure_reason = models.CharField(max_length=1024, blank=True, default="")
    # What the rollout waits for right now ("Waiting for the Docker engine: …", "Pulling the model
    # image …: 2/5 layers, …"): the StatusMessage of its variants; empty once a step succeeds.
    status_message = models.CharField(max_length=1024, blank=True, default="")
    traffic_percent = models.FloatField(default=0.0)  # meaningful while Shifting
    traffic_step = models.IntegerField(default=0)  # how many steps of the traffic plan are done
    # Container starts the engine failed through its own fault since the last start that worked.
    engine_faults = models.IntegerField(default=0)
    created_at = models.DateTimeField()
    model_data_ready_at = models.DateTimeField(null=True)
    last_shift_at = models.DateTimeField(null=True)
    phase_changed_at = models.DateTimeField()

    class Meta:
        ordering = ["pk"]

    def __str__(self):
        return f"{self.endpoint_id}/{self.pk} {self.endpoint_config_name} ({self.phase})"


class ContainerStatus(models.TextChoices):
    # Created (or about to be) and waiting for its first successful /ping; no traffic.
    STARTING = "Starting"
    # Healthy: the only state the router sends requests to.
    IN_SERVICE = "InService"
    # No new requests; waiting until every API process has dropped it and its requests finished.
    DRAINING = "Draining"
    # SIGTERM sent; SIGKILL after the grace period; the row goes when the container is gone.
    STOPPING = "Stopping"


class ServingContainer(models.Model):
    deployment = models.ForeignKey(EndpointDeployment, on_delete=models.CASCADE, related_name="containers")
    variant_name = models.CharField(max_length=63)
    ordinal = models.IntegerField()  # 1, 2, ... per variant; a replacement gets a new one
    name = models.CharField(max_length=200, unique=True)  # the engine's container name
    # The node it is placed on (hosting/placement.py): only that node's worker starts, watches and
    # stops it. Deleting the node (retiring it) forgets the container, like a lost node does.
    node = models.ForeignKey("workers.Node", on_delete=models.CASCADE, related_name="serving_containers")

    status = models.CharField(max_length=16, default=ContainerStatus.STARTING)
    host_port = models.IntegerField(null=True)  # where 8080 is published on its node's address
    started_at = models.DateTimeField(null=True)
    healthy_at = models.DateTimeField(null=True)
    consecutive_failures = models.IntegerField(default=0)
    # What the last failed /ping (or the engine) said: becomes a FailureReason when it matters.
    last_problem = models.CharField(max_length=1024, blank=True, default="")
    # The routing version every API process must have loaded before the container is stopped.
    drain_version = models.BigIntegerField(null=True)
    drain_started_at = models.DateTimeField(null=True)
    stop_signalled_at = models.DateTimeField(null=True)

    class Meta:
        ordering = ["variant_name", "ordinal"]
        constraints = [
            models.UniqueConstraint(
                fields=["deployment", "variant_name", "ordinal"], name="unique_container_slot"
            )
        ]

    def __str__(self):
        return self.name


class DeploymentEventKind(models.TextChoices):
    # A fleet was requested: CreateEndpoint's first one, or UpdateEndpoint's new (green) one.
    FLEET_CREATED = "FleetCreated"
    # Every container of the fleet passed /ping: it may take traffic.
    HEALTH_GATE_PASSED = "HealthGatePassed"
    # A share of the endpoint's traffic moved to the new fleet (one step of the traffic plan).
    TRAFFIC_SHIFTED = "TrafficShifted"
    # The new fleet serves everything; the old one is drained, then stopped.
    OLD_FLEET_RETIRING = "OldFleetRetiring"
    # A retired fleet's last container is gone.
    FLEET_REMOVED = "FleetRemoved"
    # A new endpoint's first fleet failed (the endpoint is Failed).
    DEPLOYMENT_FAILED = "DeploymentFailed"
    # An update failed and the old fleet kept (or took back) all traffic.
    ROLLED_BACK = "RolledBack"
    # UpdateEndpointWeightsAndCapacities was accepted (the weights apply at once) ...
    WEIGHTS_AND_CAPACITIES_UPDATED = "WeightsAndCapacitiesUpdated"
    # ... and its instance counts were reached, or could not be.
    CAPACITY_APPLIED = "CapacityApplied"
    CAPACITY_NOT_APPLIED = "CapacityNotApplied"
    # The engine failed to start a container through a fault of its own: another is started.
    ENGINE_FAULT = "EngineFault"


class EndpointDeploymentEvent(models.Model):
    """One step of an endpoint's deployment history, written where the step happens (the
    services for what a request asks, the reconciler for what it carries out), in the same
    transaction as the state change it tells of. Shown newest first; deleted with the endpoint."""

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="events")
    time = models.DateTimeField()
    kind = models.CharField(max_length=32, choices=DeploymentEventKind.choices)
    # The config of the fleet the step concerns.
    endpoint_config_name = models.CharField(max_length=63)
    message = models.CharField(max_length=2048)

    class Meta:
        indexes = [models.Index(fields=["endpoint", "time"])]

    def __str__(self):
        return f"{self.endpoint_id} {self.kind} {self.endpoint_config_name}"


class AsyncInvocationStatus(models.TextChoices):
    # Accepted, waiting for a free invocation slot on the endpoint.
    PENDING = "Pending"
    # Claimed by a worker until `lease_expires_at`; a worker that dies leaves it to be claimed again.
    IN_PROGRESS = "InProgress"
    # The output (Completed) or the failure (Failed) object is written.
    COMPLETED = "Completed"
    FAILED = "Failed"


class AsyncInvocation(models.Model):
    """One InvokeEndpointAsync request, durable from the moment it is acknowledged (202): the
    queue of an asynchronous endpoint is these rows (hosting/async_queue.py), so that neither a
    worker nor a data-plane restart loses one. The output keys are derived from the inference id,
    so processing a request again never writes a second object."""

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="async_invocations")
    inference_id = models.CharField(max_length=64)
    input_location = models.CharField(max_length=1024)
    output_location = models.CharField(max_length=1024)
    failure_location = models.CharField(max_length=1024)
    # The headers the container receives (Content-Type, Accept, custom attributes), as signed.
    headers = models.JSONField(default=dict)
    invocation_timeout_seconds = models.IntegerField()
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()  # created_at + RequestTTLSeconds: not started by then, it fails

    status = models.CharField(max_length=16, default=AsyncInvocationStatus.PENDING)
    attempts = models.IntegerField(default=0)
    lease_expires_at = models.DateTimeField(null=True)
    container_name = models.CharField(max_length=200, blank=True, default="")  # the claim's container
    finished_at = models.DateTimeField(null=True)
    failure_reason = models.CharField(max_length=1024, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "inference_id"], name="unique_inference_per_endpoint")
        ]
        indexes = [models.Index(fields=["endpoint", "status", "created_at"])]

    def __str__(self):
        return f"{self.endpoint_id}/{self.inference_id} ({self.status})"


class InferenceComponent(models.Model):
    """One model deployed onto an endpoint's instances as copies (hosting/components.py). Its
    copies are run by `runner`, an endpoint of its own that ListEndpoints never shows (its ARN is
    the component's): that endpoint's deployments, containers and status are the component's
    copies, blue/green updates and status, so the endpoint reconciler runs them unchanged."""

    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    inference_component_name = models.CharField(max_length=63)
    inference_component_arn = models.CharField(max_length=2048, unique=True)
    # The endpoint whose instances the copies share (PROTECT: DeleteEndpoint refuses it first).
    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="inference_components")
    variant_name = models.CharField(max_length=63)
    runner = models.OneToOneField(Endpoint, on_delete=models.CASCADE, related_name="runs_component")
    # The Specification of the last CreateInferenceComponent/UpdateInferenceComponent, as given.
    specification = models.JSONField()
    tags = models.JSONField(default=list)
    creation_time = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.inference_component_name


class ComponentCopy(models.Model):
    """Which instance of the endpoint's variant a copy (a serving container of a component's
    runner) is placed on: the copies on one instance share its CPUs, memory and accelerators."""

    container = models.OneToOneField(ServingContainer, on_delete=models.CASCADE, related_name="copy")
    # The parent endpoint's variant instance, 0-based.
    instance = models.IntegerField()

    def __str__(self):
        return f"{self.container_id} on instance {self.instance}"
