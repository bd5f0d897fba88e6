"""Container output kept as CloudWatch-style log groups, streams and events, and the metric
points SageMaker would publish to CloudWatch from that output."""
from django.db import models


class LogStream(models.Model):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    group_name = models.CharField(max_length=512)
    stream_name = models.CharField(max_length=512)
    created_at = models.DateTimeField(auto_now_add=True)
    # Where reading the source (a container's log) stopped: lines at or before it are stored.
    source_cursor = models.CharField(max_length=64, blank=True, default="")
    # Kept by `store.append` in the transaction that adds events, so that DescribeLogStreams can
    # report and sort on them without scanning events. Null until the first event.
    first_event_ms = models.BigIntegerField(null=True)
    last_event_ms = models.BigIntegerField(null=True)
    last_ingestion_ms = models.BigIntegerField(null=True)

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


class MetricSeries(models.Model):
    """What names a CloudWatch metric's data in an account and region."""

    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    namespace = models.CharField(max_length=255)
    metric_name = models.CharField(max_length=255)

    class Meta:
        abstract = True


class MetricDatum(MetricSeries):
    """One point of a metric time series, as CloudWatch keys it: namespace (e.g.
    `/aws/sagemaker/TrainingJobs`), the resource the point belongs to (e.g. a training job's name;
    CloudWatch's `Host` dimension is `<resource>/<host>`), the host, the metric's name."""

    resource_name = models.CharField(max_length=255)
    host = models.CharField(max_length=64)
    timestamp_ms = models.BigIntegerField()
    value = models.FloatField()

    class Meta:
        indexes = [
            models.Index(
                fields=["account_id", "region", "namespace", "resource_name", "metric_name", "timestamp_ms"],
                name="metric_series",
            )
        ]

    def __str__(self):
        return f"{self.resource_name}/{self.host} {self.metric_name}={self.value}"


class MetricStatisticSet(MetricSeries):
    """One minute of a metric published pre-aggregated, as CloudWatch's StatisticSet (e.g. the
    `AWS/SageMaker` invocation metrics of an endpoint variant): count, sum, minimum and maximum
    of the values seen in the minute starting at `minute_ms`. `dimensions` is the canonical
    `[name, value]` pairs as JSON, sorted by name, so a metric is one exact key."""

    dimensions = models.CharField(max_length=1024)
    unit = models.CharField(max_length=32)
    minute_ms = models.BigIntegerField()
    sample_count = models.FloatField()
    total = models.FloatField()
    minimum = models.FloatField()
    maximum = models.FloatField()
    # `{"<bucket>": count}` of logs/histograms.py, for metrics whose percentiles are asked for
    # (latencies); null for the others (counts), which have no percentiles.
    histogram = models.JSONField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account_id", "region", "namespace", "metric_name", "dimensions", "minute_ms"],
                name="unique_metric_minute",
            )
        ]

    def __str__(self):
        return f"{self.namespace} {self.metric_name} {self.dimensions} @{self.minute_ms}"
