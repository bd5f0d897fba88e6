"""Batch transform end to end: CreateTransformJob runs the model's serving container on real S3
input with stock boto3, and the job's shape, outputs, logs and errors are SageMaker's.

AWS references: API reference CreateTransformJob / DescribeTransformJob / ListTransformJobs /
StopTransformJob, TransformInput.SplitType, TransformOutput.AssembleWith; developer guide "Use
Batch Transform" (`<object>.out` under S3OutputPath, answers in input order) and "Associate
Prediction Results with Input Records" (JoinSource, InputFilter); botocore's waiter
`transform_job_completed_or_stopped`."""

import gzip
import struct
import uuid
from datetime import timedelta

import pytest
from botocore.exceptions import ClientError

from tests.e2e.conftest import unique_name
from tests.e2e.transform_requests import read_object, transform_request, wait_for_transform

pytest_plugins = ["tests.e2e.hosting_fixtures", "tests.e2e.transform_fixtures"]  # transformer_image

def test_lines_are_transformed_in_order_into_object_out_files(sagemaker, s3, bucket, model, stack):
    rows = [f"row-{index},{index}" for index in range(200)]
    s3.put_object(Bucket=bucket, Key="in/a.csv", Body="\n".join(rows).encode())
    s3.put_object(Bucket=bucket, Key="in/sub/b.csv.gz", Body=gzip.compress(b"x,1\ny,2\n"))
    name = unique_name("transform")
    model_name = model()
    arn = sagemaker.create_transform_job(
        **transform_request(
            name,
            model_name,
            bucket,
            MaxConcurrentTransforms=4,
            MaxPayloadInMB=1,
            BatchStrategy="SingleRecord",
            TransformInput={"CompressionType": "None"},
            Tags=[{"Key": "team", "Value": "vision"}],
        )
    )["TransformJobArn"]
    assert arn == f"arn:aws:sagemaker:us-east-1:{stack.account_id}:transform-job/{name.lower()}"
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    assert job["ModelName"] == model_name and job["BatchStrategy"] == "SingleRecord"
    assert job["TransformStartTime"] <= job["TransformEndTime"]
    # One answer per record, in input order, each followed by a newline (AssembleWith Line).
    assert read_object(s3, bucket, "out/a.csv.out") == "".join(f"{row.upper()}\n" for row in rows)
    # The .gz object was sent as it is (CompressionType None): its answer is one line per line
    # of what the model got; its path below the prefix is kept.
    assert s3.head_object(Bucket=bucket, Key="out/sub/b.csv.gz.out")["ContentLength"] > 0

    assert sagemaker.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "vision"}]
    listed = sagemaker.list_transform_jobs(NameContains=name[-8:], StatusEquals="Completed")
    assert [summary["TransformJobName"] for summary in listed["TransformJobSummaries"]] == [name]

    logs = stack.client("logs")
    streams = logs.describe_log_streams(
        logGroupName="/aws/sagemaker/TransformJobs", logStreamNamePrefix=f"{name}/"
    )
    names = sorted(stream["logStreamName"] for stream in streams["logStreams"])
    assert len(names) == 2 and names[1] == f"{names[0]}/data-log", names
    data_log = logs.get_log_events(logGroupName="/aws/sagemaker/TransformJobs", logStreamName=names[1])
    assert data_log["events"][0]["message"].endswith(
        "[sagemaker logs]: MaxConcurrentTransforms=4, MaxPayloadInMB=1, BatchStrategy=SINGLE_RECORD"
    )
    output = logs.get_log_events(logGroupName="/aws/sagemaker/TransformJobs", logStreamName=names[0])
    said = "\n".join(event["message"] for event in output["events"])
    assert "invocation content-type=text/csv accept=text/csv" in said and "batch=True" in said


def test_gzip_input_multirecord_and_execution_parameters(sagemaker, s3, bucket, model):
    """CompressionType Gzip is inflated before splitting; with BatchStrategy and concurrency left
    out, the container's GET /execution-parameters decides them."""
    s3.put_object(Bucket=bucket, Key="in/c.csv.gz", Body=gzip.compress(b"a\nb\nc\n"))
    name = unique_name("transform")
    served = '{"MaxConcurrentTransforms": 2, "BatchStrategy": "MULTI_RECORD", "MaxPayloadInMB": 5}'
    sagemaker.create_transform_job(
        **transform_request(
            name,
            model(TRANSFORM_EXECUTION_PARAMETERS=served),
            bucket,
            TransformInput={"CompressionType": "Gzip"},
        )
    )
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    # MultiRecord: the three lines went in one request, answered as three lines, then one newline.
    assert read_object(s3, bucket, "out/c.csv.gz.out") == "A\nB\nC\n"


def test_join_source_and_input_filter(sagemaker, s3, bucket, model):
    """The guide's example: InputFilter `$[1:]` drops the ID column from what the model sees, and
    JoinSource Input appends the answer to the whole input row."""
    s3.put_object(Bucket=bucket, Key="in/d.csv", Body=b"1,foo\n2,bar\n")
    name = unique_name("transform")
    sagemaker.create_transform_job(
        **transform_request(
            name, model(), bucket, DataProcessing={"InputFilter": "$[1:]", "JoinSource": "Input"}
        )
    )
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    assert read_object(s3, bucket, "out/d.csv.out") == "1,foo,FOO\n2,bar,BAR\n"


def test_a_record_the_model_rejects_fails_the_job_naming_the_object(sagemaker, s3, bucket, model, stack):
    s3.put_object(Bucket=bucket, Key="in/bad.csv", Body=b"fine\nreject me\n")
    name = unique_name("transform")
    sagemaker.create_transform_job(**transform_request(name, model(), bucket, BatchStrategy="SingleRecord"))
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Failed"
    assert f"{bucket}/in/bad.csv" in job["FailureReason"] and "400" in job["FailureReason"]
    with pytest.raises(ClientError):  # no .out for an object that failed
        s3.head_object(Bucket=bucket, Key="out/bad.csv.out")
    logs = stack.client("logs")
    streams = logs.describe_log_streams(
        logGroupName="/aws/sagemaker/TransformJobs", logStreamNamePrefix=f"{name}/"
    )
    data_log = next(
        s["logStreamName"] for s in streams["logStreams"] if s["logStreamName"].endswith("/data-log")
    )
    messages = [
        e["message"]
        for e in logs.get_log_events(logGroupName="/aws/sagemaker/TransformJobs", logStreamName=data_log)[
            "events"
        ]
    ]
    assert any(message.endswith(f"{bucket}/in/bad.csv: ClientError: 400") for message in messages), messages
    assert any("cannot transform: reject me" in message for message in messages), messages


def test_bad_requests_are_refused_before_anything_is_created(sagemaker, bucket, model, stack):
    name = unique_name("transform")
    with pytest.raises(ClientError) as missing:
        sagemaker.create_transform_job(**transform_request(name, "no-such-model", bucket))
    assert missing.value.response["Error"]["Code"] == "ValidationException"
    assert "Could not find model" in missing.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as too_much:
        sagemaker.create_transform_job(
            **transform_request(name, model(), bucket, MaxConcurrentTransforms=30, MaxPayloadInMB=5)
        )
    assert too_much.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(ClientError) as described:
        sagemaker.describe_transform_job(TransformJobName=name)
    assert described.value.response["Error"]["Code"] == "ValidationException"
    # The tenancy rule: an S3 location of another account is refused before anything is created.
    other = str(uuid.uuid4().int)[:12]
    key_id, secret = stack.create_access_key(other)
    foreign_bucket = f"other-{uuid.uuid4().hex[:10]}"
    stack.client("s3", aws_access_key_id=key_id, aws_secret_access_key=secret).create_bucket(
        Bucket=foreign_bucket
    )
    with pytest.raises(ClientError) as foreign:
        sagemaker.create_transform_job(**transform_request(name, model(), foreign_bucket))
    assert foreign.value.response["Error"]["Code"] == "ValidationException"
    with pytest.raises(ClientError):
        sagemaker.describe_transform_job(TransformJobName=name)


def test_instances_share_the_input_objects(sagemaker, s3, bucket, model, stack):
    """TransformResources.InstanceCount 2: every object is transformed once, and both instances
    take their share (each instance's container output names the requests it answered)."""
    for index in range(4):
        s3.put_object(Bucket=bucket, Key=f"in/part-{index}.csv", Body=f"p{index}\n".encode())
    name = unique_name("transform")
    sagemaker.create_transform_job(
        **transform_request(
            name, model(), bucket, TransformResources={"InstanceType": "ml.m5.large", "InstanceCount": 2}
        )
    )
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    assert [read_object(s3, bucket, f"out/part-{index}.csv.out") for index in range(4)] == [
        f"P{index}\n" for index in range(4)
    ]
    logs = stack.client("logs")
    streams = logs.describe_log_streams(
        logGroupName="/aws/sagemaker/TransformJobs", logStreamNamePrefix=f"{name}/"
    )["logStreams"]
    outputs = [s["logStreamName"] for s in streams if not s["logStreamName"].endswith("/data-log")]
    assert len(outputs) == 2, outputs
    for stream in outputs:
        events = logs.get_log_events(logGroupName="/aws/sagemaker/TransformJobs", logStreamName=stream)[
            "events"
        ]
        assert sum("invocation content-type" in event["message"] for event in events) == 2, stream

    # Each instance's CPU and memory use ("Monitor Amazon SageMaker with Amazon CloudWatch":
    # Batch Transform Job Instance Metrics, Host=<job>/<instance>, Percent, no DiskUtilization
    # for batch transform), read while it served.
    cloudwatch = stack.client("cloudwatch")
    for host in ("algo-1", "algo-2"):
        dimensions = [{"Name": "Host", "Value": f"{name}/{host}"}]
        listed = cloudwatch.list_metrics(Namespace="/aws/sagemaker/TransformJobs", Dimensions=dimensions)
        assert sorted((metric["MetricName"], metric["Dimensions"]) for metric in listed["Metrics"]) == [
            ("CPUUtilization", dimensions),
            ("MemoryUtilization", dimensions),
        ], host
    points = cloudwatch.get_metric_statistics(
        Namespace="/aws/sagemaker/TransformJobs",
        MetricName="MemoryUtilization",
        Dimensions=[{"Name": "Host", "Value": f"{name}/algo-2"}],
        StartTime=job["CreationTime"] - timedelta(minutes=1),
        EndTime=job["TransformEndTime"] + timedelta(minutes=1),
        Period=60,
        Statistics=["Maximum"],
    )["Datapoints"]
    assert points and all(point["Unit"] == "Percent" and 0 < point["Maximum"] <= 100 for point in points)


def test_no_input_object_fails_the_job_with_sagemakers_reason(sagemaker, bucket, model):
    name = unique_name("transform")
    sagemaker.create_transform_job(**transform_request(name, model(), bucket, prefix="nothing-here/"))
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Failed"
    assert f"no S3 objects found under S3 URL 's3://{bucket}/nothing-here/'" in job["FailureReason"]


def test_json_lines_joined_with_their_input(sagemaker, s3, bucket, model):
    """JSON Lines with JoinSource Input: "SageMaker adds the transformed data to the input JSON
    object in an attribute called SageMakerOutput" (API reference, DataProcessing.JoinSource)."""
    s3.put_object(Bucket=bucket, Key="in/e.jsonl", Body=b'{"word":"hi"}\n{"word":"yo"}\n')
    name = unique_name("transform")
    json_lines = "application/jsonlines"
    sagemaker.create_transform_job(
        **transform_request(
            name,
            model(),
            bucket,
            TransformInput={"ContentType": json_lines},
            TransformOutput={"Accept": json_lines},
            DataProcessing={"JoinSource": "Input"},
        )
    )
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    written = read_object(s3, bucket, "out/e.jsonl.out")
    assert (
        written
        == '{"word":"hi","SageMakerOutput":{"WORD":"HI"}}\n{"word":"yo","SageMakerOutput":{"WORD":"YO"}}\n'
    )


def test_recordio_records_are_sent_without_their_framing(sagemaker, s3, bucket, model):
    """SplitType RecordIO with SingleRecord: "padding is removed if the value of BatchStrategy is
    set to SingleRecord" (API reference, TransformInput.SplitType); MXNet's framing is
    `magic, length` then the data padded to 4 bytes."""

    def record(data: bytes) -> bytes:
        return struct.pack("<II", 0xCED7230A, len(data)) + data + b"\0" * (-len(data) % 4)

    s3.put_object(Bucket=bucket, Key="in/f.rec", Body=record(b"abc") + record(b"defgh"))
    name = unique_name("transform")
    sagemaker.create_transform_job(
        **transform_request(
            name,
            model(),
            bucket,
            BatchStrategy="SingleRecord",
            TransformInput={"SplitType": "RecordIO", "ContentType": "application/x-recordio"},
        )
    )
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    assert read_object(s3, bucket, "out/f.rec.out") == "ABC\nDEFGH\n"


def test_chunked_answers_and_a_whole_object_streamed_to_the_model(sagemaker, s3, bucket, model):
    """An object over the default 6 MB payload sent whole (SplitType None, MaxPayloadInMB 0: "the
    payload will be the full input file", API reference, CreateTransformJob.MaxPayloadInMB) goes
    as one chunked request body; the model answers with `Transfer-Encoding: chunked` and no
    Content-Length, which HTTP/1.1 allows any server: the answer is written whole."""
    lines = [f"chunked line {index:07d}" for index in range(400_000)]  # 8.4 MB
    s3.put_object(Bucket=bucket, Key="in/whole.txt", Body="\n".join(lines).encode())
    name = unique_name("transform")
    sagemaker.create_transform_job(
        **transform_request(
            name,
            model(),
            bucket,
            MaxPayloadInMB=0,
            TransformInput={"SplitType": "None", "ContentType": "text/plain"},
            TransformOutput={"AssembleWith": "None", "Accept": "text/plain"},
        )
    )
    job = wait_for_transform(sagemaker, name)
    assert job["TransformJobStatus"] == "Completed", job.get("FailureReason")
    assert read_object(s3, bucket, "out/whole.txt.out") == "\n".join(lines).upper()
