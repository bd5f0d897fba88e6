"""Container output kept as CloudWatch-style log groups, streams and events."""

from django.db import models


class LogStream(models.Model):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    group_name = models.CharField(max_length=512)
    stream_name = models.CharField(max_length=512)
    created_at = models.DateTimeField(auto_now_add=True)
    # Where reading the source (a container's log) stopped: lines at or before it are stored.
    source_cursor = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account_id", "region", "group_name", "stream_name"], name="unique_log_stream"
            )
        ]

    def __str__(self):
        return f"{self.group_name}/{self.stream_name}"


class LogEvent(models.Model):
    stream = models.ForeignKey(LogStream, on_delete=models.CASCADE, related_name="events")
    timestamp_ms = models.BigIntegerField()
    ingestion_time_ms = models.BigIntegerField()
    message = models.TextField()

    class Meta:
        ordering = ["timestamp_ms", "pk"]
        indexes = [models.Index(fields=["stream", "timestamp_ms"])]
