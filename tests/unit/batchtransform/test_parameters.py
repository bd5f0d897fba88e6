"""What a transform job's requests are sent with: the request, else the container's
execution-parameters, else SageMaker's defaults (API reference, CreateTransformJob:
MaxConcurrentTransforms "If the execution-parameters endpoint is not enabled, the default value is
1", MaxPayloadInMB "The default value is 6 MB"); and the data log's first line as SageMaker writes
it (amazon-sagemaker-examples#1620)."""

from batchtransform.parameters import Invocations, container_environment, effective, invocations


def test_defaults_without_request_members_or_execution_parameters():
    settings = effective({}, None)
    assert (settings.max_concurrent_transforms, settings.batch_strategy, settings.max_payload_in_mb) == (
        1,
        "MultiRecord",
        6,
    )
    assert (
        settings.data_log_line() == "MaxConcurrentTransforms=1, MaxPayloadInMB=6, BatchStrategy=MULTI_RECORD"
    )


def test_execution_parameters_fill_what_the_request_leaves_out():
    served = {"MaxConcurrentTransforms": 8, "BatchStrategy": "SINGLE_RECORD", "MaxPayloadInMB": 0}
    settings = effective({"MaxConcurrentTransforms": 0}, served)
    assert (settings.max_concurrent_transforms, settings.batch_strategy, settings.max_payload_in_mb) == (
        8,
        "SingleRecord",
        0,
    )


def test_the_request_wins_over_execution_parameters():
    served = {"MaxConcurrentTransforms": 8, "BatchStrategy": "SINGLE_RECORD", "MaxPayloadInMB": 1}
    request = {"MaxConcurrentTransforms": 2, "BatchStrategy": "MultiRecord", "MaxPayloadInMB": 3}
    settings = effective(request, served)
    assert (settings.max_concurrent_transforms, settings.batch_strategy, settings.max_payload_in_mb) == (
        2,
        "MultiRecord",
        3,
    )


def test_nonsense_execution_parameters_are_ignored():
    served = {"MaxConcurrentTransforms": -1, "BatchStrategy": "ALL", "MaxPayloadInMB": "big"}
    settings = effective({}, served)
    assert (settings.max_concurrent_transforms, settings.batch_strategy, settings.max_payload_in_mb) == (
        1,
        "MultiRecord",
        6,
    )


def test_container_environment_as_the_sdk_local_mode_sets_it():
    request = {"MaxPayloadInMB": 4, "BatchStrategy": "SingleRecord", "MaxConcurrentTransforms": 3}
    assert container_environment(request) == {
        "SAGEMAKER_BATCH": "True",
        "SAGEMAKER_MAX_PAYLOAD_IN_MB": "4",
        "SAGEMAKER_BATCH_STRATEGY": "SINGLE_RECORD",
        "SAGEMAKER_MAX_CONCURRENT_TRANSFORMS": "3",
    }
    assert container_environment({}) == {"SAGEMAKER_BATCH": "True"}


def test_model_client_config_defaults_are_sagemakers():
    """API reference, ModelClientConfig: InvocationsTimeoutInSeconds "The default value is 600",
    InvocationsMaxRetries "The default value is 3"; each member left out takes its default."""
    assert invocations({}) == Invocations(timeout_seconds=600, max_retries=3)
    assert invocations({"ModelClientConfig": {"InvocationsTimeoutInSeconds": 5}}) == Invocations(5, 3)
    assert invocations({"ModelClientConfig": {"InvocationsMaxRetries": 0}}) == Invocations(600, 0)
