"""CloudWatch Logs: log groups, streams and events, their API (Logs_20140328), retention, metric
data storage, and collecting container output into streams (app label "cloudwatch").
May import: reconcile, runtime, storage, protocol."""
