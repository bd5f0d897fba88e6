"""CloudWatch Logs response members, built explicitly from the rows. Times are epoch milliseconds."""
from django.conf import settings

from logs.models import LogEvent, LogStream
from logs.queries import LogGroup
from protocol.arns import log_group_arn
from protocol.context import RequestContext


def log_group(ctx: RequestContext, group: LogGroup) -> dict:
    arn = log_group_arn(ctx.region, ctx.account_id, group.name)
    days = settings.SAGEPORT_LOG_RETENTION_DAYS
    return {
        "logGroupName": group.name,
        "creationTime": int(group.created_at.timestamp() * 1000),
        # Whole days only: CloudWatch's retention settings are day counts.
        "retentionInDays": int(days) if days and days == int(days) else None,
        "metricFilterCount": 0,
        "arn": f"{arn}:*",  # CloudWatch's `arn` ends in `:*`; `logGroupArn` is the bare one
        "logGroupArn": arn,
        "storedBytes": group.stored_bytes,
        "logGroupClass": "STANDARD",
        "deletionProtectionEnabled": False,
    }


def log_stream(stream: LogStream) -> dict:
    arn = log_group_arn(stream.region, stream.account_id, stream.group_name)
    return {
        "logStreamName": stream.stream_name,
        "creationTime": int(stream.created_at.timestamp() * 1000),
        "firstEventTimestamp": stream.first_event_ms,
        "lastEventTimestamp": stream.last_event_ms,
        "lastIngestionTime": stream.last_ingestion_ms,
        "arn": f"{arn}:log-stream:{stream.stream_name}",
        # CloudWatch has reported 0 for streams since 2019; the member stays for old clients.
        "storedBytes": 0,
    }


def output_log_event(event: LogEvent) -> dict:
    return {
        "timestamp": event.timestamp_ms,
        "message": event.message,
        "ingestionTime": event.ingestion_time_ms,
    }


def filtered_log_event(event: LogEvent) -> dict:
    return {
        "logStreamName": event.stream.stream_name,
        "eventId": str(event.pk),
        **output_log_event(event),
    }
