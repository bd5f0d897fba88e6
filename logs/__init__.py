"""CloudWatch Logs and metrics: log groups, streams and events, their API (Logs_20140328),
retention, metric series (points and per-minute statistic sets) and the CloudWatch metrics API
(GetMetricStatistics, GetMetricData, ListMetrics), and collecting container output into streams
(app label "cloudwatch"). May import: reconcile, runtime, storage, protocol."""
