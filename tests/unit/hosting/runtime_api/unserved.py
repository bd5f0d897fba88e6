"""The sagemaker-runtime operations Sageport does not serve on both ports, as boto3 calls them
(InvokeEndpointWithResponseStream: on the data plane only)."""


def unserved_calls(client) -> dict:
    """Operation name → a call of it; tests compare the names with the botocore model's."""
    return {
        "InvokeEndpointWithResponseStream": lambda: client.invoke_endpoint_with_response_stream(
            EndpointName="e", Body=b"1"
        ),
    }

