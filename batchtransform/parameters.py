"""The settings a transform job's requests are sent with: the request's, else what the container's
`GET /execution-parameters` answers, else SageMaker's defaults.

API reference, CreateTransformJob: MaxConcurrentTransforms "If MaxConcurrentTransforms is set to 0
or left unset, Amazon SageMaker checks the optional execution-parameters to determine the settings
for your chosen algorithm. If the execution-parameters endpoint is not enabled, the default value
is 1"; MaxPayloadInMB defaults to 6; BatchStrategy "If you don't specify a BatchStrategy,
SageMaker uses the execution-parameters" (transform/batching.py: MultiRecord otherwise). The
container answers `{"MaxConcurrentTransforms": n, "BatchStrategy": "MULTI_RECORD" |
"SINGLE_RECORD", "MaxPayloadInMB": n}` (the SDK's local mode reads the same document); its
BatchStrategy is in the environment's spelling."""

from dataclasses import dataclass

from transform.batching import DEFAULT_BATCH_STRATEGY, DEFAULT_MAX_PAYLOAD_IN_MB

DEFAULT_CONCURRENCY = 1
# API reference, ModelClientConfig: "The default value is 600" and "The default value is 3".
DEFAULT_INVOCATIONS_TIMEOUT_SECONDS = 600
DEFAULT_INVOCATIONS_MAX_RETRIES = 3
_STRATEGIES = {"MULTI_RECORD": "MultiRecord", "SINGLE_RECORD": "SingleRecord"}
_ENVIRONMENT_STRATEGIES = {api: environment for environment, api in _STRATEGIES.items()}


@dataclass(frozen=True)
class Invocations:
    """ModelClientConfig as the job runs with it: each member the request leaves out takes
    SageMaker's default."""

    timeout_seconds: int
    max_retries: int


def invocations(request: dict) -> Invocations:
    config = request.get("ModelClientConfig") or {}
    return Invocations(
        timeout_seconds=config.get("InvocationsTimeoutInSeconds", DEFAULT_INVOCATIONS_TIMEOUT_SECONDS),
        max_retries=config.get("InvocationsMaxRetries", DEFAULT_INVOCATIONS_MAX_RETRIES),
    )


@dataclass(frozen=True)
class Effective:
    max_concurrent_transforms: int
    batch_strategy: str  # MultiRecord | SingleRecord
    max_payload_in_mb: int  # 0: no limit, one request per object streamed

    def data_log_line(self) -> str:
        """The first line SageMaker writes in a job's data log (amazon-sagemaker-examples#1620:
        "MaxConcurrentTransforms=1, MaxPayloadInMB=6, BatchStrategy=MULTI_RECORD")."""
        return (
            f"MaxConcurrentTransforms={self.max_concurrent_transforms}, "
            f"MaxPayloadInMB={self.max_payload_in_mb}, "
            f"BatchStrategy={_ENVIRONMENT_STRATEGIES[self.batch_strategy]}"
        )


def effective(request: dict, execution_parameters: dict | None) -> Effective:
    """What the job runs with; `execution_parameters`: the container's answer, None without one."""
    served = execution_parameters or {}
    concurrency = request.get("MaxConcurrentTransforms") or _positive(served.get("MaxConcurrentTransforms"))
    strategy = request.get("BatchStrategy") or _STRATEGIES.get(str(served.get("BatchStrategy", "")).upper())
    payload = request.get("MaxPayloadInMB")
    if payload is None:
        payload = _non_negative(served.get("MaxPayloadInMB"))
    return Effective(
        max_concurrent_transforms=concurrency or DEFAULT_CONCURRENCY,
        batch_strategy=strategy or DEFAULT_BATCH_STRATEGY,
        max_payload_in_mb=DEFAULT_MAX_PAYLOAD_IN_MB if payload is None else payload,
    )


def container_environment(request: dict) -> dict[str, str]:
    """What SageMaker tells a transform container about the job, as the SDK's local mode passes
    it (`sagemaker/local/entities.py`: SAGEMAKER_BATCH, SAGEMAKER_MAX_PAYLOAD_IN_MB,
    SAGEMAKER_BATCH_STRATEGY, SAGEMAKER_MAX_CONCURRENT_TRANSFORMS), for the members it sets."""
    environment = {"SAGEMAKER_BATCH": "True"}
    if "MaxPayloadInMB" in request:
        environment["SAGEMAKER_MAX_PAYLOAD_IN_MB"] = str(request["MaxPayloadInMB"])
    if "BatchStrategy" in request:
        environment["SAGEMAKER_BATCH_STRATEGY"] = _ENVIRONMENT_STRATEGIES[request["BatchStrategy"]]
    if request.get("MaxConcurrentTransforms"):
        environment["SAGEMAKER_MAX_CONCURRENT_TRANSFORMS"] = str(request["MaxConcurrentTransforms"])
    return environment


def _positive(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _non_negative(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
