"""What a training or serving container is given to use AWS as on SageMaker, and the one
decision about it: a network-isolated container gets nothing (no network, no endpoints, no
credentials); any other joins the services network and gets

- its resource's region: AWS_REGION, AWS_DEFAULT_REGION (the region the job or endpoint was
  created in: the SigV4 scope of the request that created it);
- endpoints for every service Sageport serves, on the forwarder's ports of the gateway address
  (AWS_ENDPOINT_URL_<service id>, the names botocore's configprovider reads): the runtime's leads
  to the data plane, as clients' does (response streams are served only there, and invocations
  never hold the API's threads), the others to the API; S3's is the global AWS_ENDPOINT_URL too;
- role credentials the ECS/SageMaker way: AWS_CONTAINER_CREDENTIALS_FULL_URI, the API's
  credentials endpoint through the forwarder, and AWS_CONTAINER_AUTHORIZATION_TOKEN, its
  training job's or endpoint's grant for the resource's execution role
  (accounts/container_credentials.py): the keys act as that role, as on SageMaker;
- AWS_EC2_METADATA_DISABLED, so that nothing waits for an EC2 metadata service.

The request's own Environment is applied after these by the features, as SageMaker lets a user
set any variable (e.g. their own S3 endpoint)."""

from dataclasses import dataclass, field

from django.conf import settings

from accounts.container_credentials import grant
from accounts.views import CREDENTIALS_PATH
from gateway.network import GATEWAY_ADDRESS, SERVICES_NETWORK

# botocore's service ids of what the API port serves, as AWS_ENDPOINT_URL_* spells them (the
# runtime's is the data plane's).
API_SERVICE_IDS = ("SAGEMAKER", "CLOUDWATCH_LOGS", "CLOUDWATCH", "STS", "IAM")


@dataclass(frozen=True)
class Reach:
    environment: dict[str, str] = field(default_factory=dict)
    networks: tuple[str, ...] = ()  # joined besides the container's own network


def container_reach(
    *, isolated: bool, holder: str, account_id: str, region: str, role_arn: str | None
) -> Reach:
    """What a container of `holder` (a training job's or endpoint's ARN) can reach; its keys act
    as `role_arn` (None: the resource names no role, they act as the account's own)."""
    if isolated:
        return Reach()
    api = f"http://{GATEWAY_ADDRESS}:{settings.SAGEPORT_SERVICES_API_PORT}"
    runtime = f"http://{GATEWAY_ADDRESS}:{settings.SAGEPORT_SERVICES_RUNTIME_PORT}"
    s3 = f"http://{GATEWAY_ADDRESS}:{settings.SAGEPORT_SERVICES_S3_PORT}"
    environment = {
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_ENDPOINT_URL_S3": s3,
        # For S3 clients that read only the global variable (s3torchconnector, which AWS's
        # tiered-checkpointing library uses): an IP literal, so that they address buckets by
        # path. botocore prefers each service's own variable above, so this redirects only the
        # services Sageport does not serve, which a container could not have reached anyway.
        "AWS_ENDPOINT_URL": s3,
        **{f"AWS_ENDPOINT_URL_{service_id}": api for service_id in API_SERVICE_IDS},
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": runtime,
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": api + CREDENTIALS_PATH,
        "AWS_CONTAINER_AUTHORIZATION_TOKEN": grant(holder, account_id, role_arn or ""),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    return Reach(environment, (SERVICES_NETWORK,))
