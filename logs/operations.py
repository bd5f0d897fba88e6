"""CloudWatch Logs operations (`Logs_20140328.*`) over the container output Sageport keeps."""
from logs import presenters, queries
from logs.filter_patterns import compile_pattern
from protocol.context import RequestContext
from protocol.registry import operation

LOGS = "Logs_20140328"


@operation("DescribeLogGroups", service=LOGS)
def describe_log_groups(ctx: RequestContext, params: dict) -> dict:
    groups, next_token = queries.describe_groups(ctx, params)
    return {"logGroups": [presenters.log_group(ctx, group) for group in groups], "nextToken": next_token}


@operation("DescribeLogStreams", service=LOGS)
def describe_log_streams(ctx: RequestContext, params: dict) -> dict:
    streams, next_token = queries.describe_streams(queries.group_streams(ctx, params), params)
    return {"logStreams": [presenters.log_stream(stream) for stream in streams], "nextToken": next_token}


@operation("GetLogEvents", service=LOGS)
def get_log_events(ctx: RequestContext, params: dict) -> dict:
    stream = queries.stream_named(queries.group_streams(ctx, params), params["logStreamName"])
    page = queries.get_events(stream, params)
    return {
        "events": [presenters.output_log_event(event) for event in page.events],
        "nextForwardToken": page.next_forward_token,
        "nextBackwardToken": page.next_backward_token,
    }


@operation("FilterLogEvents", service=LOGS)
def filter_log_events(ctx: RequestContext, params: dict) -> dict:
    matches = compile_pattern(params.get("filterPattern"))
    events, next_token = queries.filter_events(queries.group_streams(ctx, params), params, matches)
    return {
        "events": [presenters.filtered_log_event(event) for event in events],
        # Deprecated by CloudWatch, which now always returns it empty.
        "searchedLogStreams": [],
        "nextToken": next_token,
    }
