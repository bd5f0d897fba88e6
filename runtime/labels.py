"""The labels Sageport puts on the containers and networks it creates, declared once.

Containers are found by label, never by a list kept elsewhere: a reconcile observes a resource's
containers by `RESOURCE` (and `HOST` or `DEPLOYMENT`/`VARIANT` inside it), the reaper removes
what carries this stack's `STACK` but belongs to nothing live, and a worker recognises its own
node's containers by `NODE`."""
from django.conf import settings

MANAGED = "sageport.managed"  # "true" on everything the runtime creates
STACK = "sageport.stack"  # the SAGEPORT_STACK_ID of the stack that created it
ROLE = "sageport.role"  # TRAINING_ROLE | PROCESSING_ROLE | SERVING_ROLE | TRANSFORM_ROLE | … (below)
RESOURCE = "sageport.resource"  # the ARN of the training job or endpoint it serves
HOST = "sageport.host"  # a training instance: algo-N
NODE = "sageport.node"  # the node whose worker created the (training or serving) container
DEPLOYMENT = "sageport.deployment"  # a serving container's EndpointDeployment (primary key)
VARIANT = "sageport.variant"  # a serving container's production variant
CPUSET = "sageport.cpuset"  # the CPUs a container is pinned to (runtime/cpusets.py)

TRAINING_ROLE = "train"
SERVING_ROLE = "serve"
TRANSFORM_ROLE = "transform"  # a transform job's serving container (batchtransform/)
SERVICES_ROLE = "services"  # the engine-wide network on which containers reach Sageport (gateway/)
ELASTIC_ROLE = "elastic"  # a HyperPodPyTorchJob's replica (elastic/replicas.py)
PROCESSING_ROLE = "processing"  # a processing job's instance (processing/)
TIER_ROLE = "tier"  # a node's network to its checkpoint tier service (clusters/tier_network.py)


def own() -> dict[str, str]:
    """What the runtime adds to every container and network it creates: installations (and test
    sessions) sharing one engine tell theirs apart by `STACK`."""
    return {MANAGED: "true", STACK: settings.SAGEPORT_STACK_ID}
