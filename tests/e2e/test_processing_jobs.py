"""Processing jobs end to end: stock boto3 against the stack, real containers, real S3.

The contract checked is AWS's "How Amazon SageMaker Processing Runs Your Processing Container
Image" and "How Amazon SageMaker Processing Configures Input and Output For Your Processing
Container": `docker run [--entrypoint ContainerEntrypoint] ImageUri [ContainerArguments]`, inputs
staged under their LocalPath (/opt/ml/processing/...), outputs uploaded from theirs,
/opt/ml/config/processingjobconfig.json and resourceconfig.json, the exit code as the status, the
first 1 KB of /opt/ml/output/message as ExitMessage ("Save and Access Metadata Information About
Your Processing Job"), logs in /aws/sagemaker/ProcessingJobs as `<job>/algo-N-<epoch>`."""
import gzip
import json
import time
import uuid
from datetime import timedelta

import docker
import pytest
from botocore.exceptions import ClientError

from tests.e2e.conftest import unique_name

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
TERMINAL = {"Completed", "Failed", "Stopped"}
LOG_GROUP = "/aws/sagemaker/ProcessingJobs"  # also the namespace of its instance metrics
INSTANCE_METRICS = {"CPUUtilization", "MemoryUtilization", "DiskUtilization"}  # no GPU given


def script_environment(script: str) -> dict[str, str]:
    """ALGO_SCRIPT running `script`, which may be longer than an Environment value's 256
    characters (CreateProcessingJob's shape): cut into variables that ALGO_SCRIPT joins."""
    starts = range(0, len(script), 200)
    pieces = {f"PART{index}": script[start:start + 200] for index, start in enumerate(starts)}
    return {**pieces, "ALGO_SCRIPT": 'eval "' + "".join(f"${name}" for name in pieces) + '"'}


def processing_request(name: str, image: str, script: str, **overrides) -> dict:
    """A job of the shell image (tests/e2e/conftest.py), whose entrypoint evals ALGO_SCRIPT."""
    request = {
        "ProcessingJobName": name,
        "AppSpecification": {"ImageUri": image},
        "Environment": script_environment(script),
        "RoleArn": ROLE,
        "ProcessingResources": {
            "ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.m5.large", "VolumeSizeInGB": 5}
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
    }
    request.update(overrides)
    return request


def s3_input(name: str, uri: str, local: str, **options) -> dict:
    source = {"S3Uri": uri, "LocalPath": local, "S3DataType": "S3Prefix", **options}
    return {"InputName": name, "S3Input": source}


def s3_output(name: str, uri: str, local: str, mode: str = "EndOfJob") -> dict:
    return {"OutputName": name, "S3Output": {"S3Uri": uri, "LocalPath": local, "S3UploadMode": mode}}


def outputs(*items: dict) -> dict:
    return {"Outputs": list(items)}


def wait_for(sagemaker, name: str, statuses=TERMINAL, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = sagemaker.describe_processing_job(ProcessingJobName=name)
        if job["ProcessingJobStatus"] in statuses:
            return job
        assert time.monotonic() < deadline, f"{name} still {job['ProcessingJobStatus']} after {timeout}s"
        time.sleep(0.3)


def objects_under(s3, bucket: str, prefix: str) -> dict[str, bytes]:
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return {
        item["Key"][len(prefix):]: s3.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        for item in listed
    }


def refusal(call, **kwargs) -> dict:
    with pytest.raises(ClientError) as caught:
        call(**kwargs)
    return caught.value.response


def test_a_job_reads_its_inputs_and_config_and_its_outputs_and_message_reach_s3(
    sagemaker, s3, bucket, shell_algo_image, stack
):
    s3.put_object(Bucket=bucket, Key="raw/a.csv", Body=b"1,2\n")
    s3.put_object(Bucket=bucket, Key="raw/sub/b.csv", Body=b"3,4\n")
    name = unique_name("proc")
    script = (
        "set -e; out=/opt/ml/processing/output;"
        "cp -r /opt/ml/processing/input/. $out/;"
        "cp /opt/ml/config/processingjobconfig.json /opt/ml/config/resourceconfig.json $out/;"
        'echo "processed $(ls /opt/ml/processing/input | wc -l) entries" > /opt/ml/output/message;'
        "echo hello-from-processing"
    )
    request = processing_request(
        name, shell_algo_image, script,
        ProcessingInputs=[s3_input("raw", f"s3://{bucket}/raw", "/opt/ml/processing/input")],
        ProcessingOutputConfig=outputs(s3_output("out", f"s3://{bucket}/out", "/opt/ml/processing/output")),
        Tags=[{"Key": "team", "Value": "data"}],
    )

    arn = sagemaker.create_processing_job(**request)["ProcessingJobArn"]
    # The stock waiter (botocore's ProcessingJobCompletedOrStopped), quicker than its 60 s default.
    sagemaker.get_waiter("processing_job_completed_or_stopped").wait(
        ProcessingJobName=name, WaiterConfig={"Delay": 0.25, "MaxAttempts": 480}
    )

    job = sagemaker.describe_processing_job(ProcessingJobName=name)
    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    assert job["ProcessingJobArn"] == arn and arn.endswith(f":processing-job/{name}")
    assert job["ExitMessage"] == "processed 2 entries\n"
    assert "FailureReason" not in job
    assert job["ProcessingInputs"][0]["S3Input"]["S3DataDistributionType"] == "FullyReplicated"
    assert job["ProcessingStartTime"] <= job["ProcessingEndTime"]
    files = objects_under(s3, bucket, "out/")
    assert files["a.csv"] == b"1,2\n" and files["sub/b.csv"] == b"3,4\n"
    config = json.loads(files["processingjobconfig.json"])
    assert config["ProcessingJobArn"] == arn and config["ProcessingJobName"] == name
    assert config["ProcessingInputs"][0]["S3Input"]["LocalPath"] == "/opt/ml/processing/input"
    assert json.loads(files["resourceconfig.json"]) == {"current_host": "algo-1", "hosts": ["algo-1"]}

    summaries = sagemaker.list_processing_jobs(NameContains=name)["ProcessingJobSummaries"]
    assert [(s["ProcessingJobName"], s["ProcessingJobStatus"]) for s in summaries] == [(name, "Completed")]
    assert sagemaker.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "data"}]

    logs = stack.client("logs")
    epoch = int(job["CreationTime"].timestamp())
    stream = f"{name}/algo-1-{epoch}"
    events = logs.get_log_events(logGroupName=LOG_GROUP, logStreamName=stream)["events"]
    assert "hello-from-processing" in [event["message"] for event in events]


def test_pipe_inputs_stream_into_fifos_beside_their_local_path_inflating_gzip(
    sagemaker, s3, bucket, shell_algo_image
):
    """ProcessingS3Input.S3InputMode Pipe: "SageMaker streams input data from the source directly
    to your processing container into named pipes"; S3CompressionType Gzip: "Whether to
    GZIP-decompress the data in Amazon S3 as it is streamed into the processing container". The
    FIFOs are `<LocalPath>_<epoch>` (processing/pipes.py says why); epoch 0 is every object of the
    host's share, in key order."""
    s3.put_object(Bucket=bucket, Key="plain/a.txt", Body=b"first\n")
    s3.put_object(Bucket=bucket, Key="plain/b.txt", Body=b"second\n")
    s3.put_object(Bucket=bucket, Key="zipped/c.txt.gz", Body=gzip.compress(b"inflated\n" * 1000))
    name = unique_name("pipe")
    script = (
        "set -e; out=/opt/ml/processing/output; plain=/opt/ml/processing/input/plain_0;"
        "zipped=/opt/ml/processing/zipped/data_0; n=0;"
        # The feeders start with the container: wait (bounded) for the first FIFOs.
        'until [ -p $plain ] && [ -p $zipped ]; do n=$((n+1)); [ $n -lt 300 ]; sleep 0.1; done;'
        "cat $plain > $out/plain.txt; cat $zipped > $out/zipped.txt;"
        "ls /opt/ml/processing/input > $out/listing.txt"
    )
    request = processing_request(
        name, shell_algo_image, script,
        ProcessingInputs=[
            s3_input("plain", f"s3://{bucket}/plain", "/opt/ml/processing/input/plain", S3InputMode="Pipe"),
            s3_input(
                "zipped", f"s3://{bucket}/zipped", "/opt/ml/processing/zipped/data",
                S3InputMode="Pipe", S3CompressionType="Gzip",
            ),
        ],
        ProcessingOutputConfig=outputs(s3_output("out", f"s3://{bucket}/out", "/opt/ml/processing/output")),
    )

    sagemaker.create_processing_job(**request)

    job = wait_for(sagemaker, name)
    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    assert job["ProcessingInputs"][1]["S3Input"]["S3CompressionType"] == "Gzip"
    files = objects_under(s3, bucket, "out/")
    assert files["plain.txt"] == b"first\nsecond\n"
    assert files["zipped.txt"] == b"inflated\n" * 1000
    assert files["listing.txt"] == b"plain_1\n"  # epoch 0 read to its end: the next one waits


def test_a_gpu_instance_type_gets_its_gpus(sagemaker, s3, bucket, shell_algo_image):
    """ml.g4dn.xlarge (one NVIDIA GPU; SageMaker's ProcessingInstanceType lists it): the container
    is given one GPU of the node (the test node declares four, env-only mode)."""
    name = unique_name("gpu")
    request = processing_request(
        name, shell_algo_image, 'echo "$NVIDIA_VISIBLE_DEVICES" > /opt/ml/processing/output/gpus',
        ProcessingResources={
            "ClusterConfig": {"InstanceCount": 1, "InstanceType": "ml.g4dn.xlarge", "VolumeSizeInGB": 5}
        },
        ProcessingOutputConfig=outputs(s3_output("out", f"s3://{bucket}/gpu", "/opt/ml/processing/output")),
    )
    sagemaker.create_processing_job(**request)
    job = wait_for(sagemaker, name)
    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    assert len(objects_under(s3, bucket, "gpu/")["gpus"].strip().split(b",")) == 1


def test_a_failing_container_fails_the_job_with_its_message(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("procfail")
    script = "echo 'bad row 17' > /opt/ml/output/message; echo partly > /opt/ml/processing/out/p; exit 3"
    sagemaker.create_processing_job(**processing_request(
        name, shell_algo_image, script,
        ProcessingOutputConfig=outputs(s3_output("o", f"s3://{bucket}/failed", "/opt/ml/processing/out")),
    ))

    job = wait_for(sagemaker, name)

    assert job["ProcessingJobStatus"] == "Failed"
    assert job["FailureReason"] == "AlgorithmError: See job logs for more information"
    assert job["ExitMessage"] == "bad row 17\n"
    listed = sagemaker.list_processing_jobs(NameContains=name, StatusEquals="Failed")
    assert listed["ProcessingJobSummaries"][0]["FailureReason"] == job["FailureReason"]


def test_entrypoint_and_arguments_override_the_image(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("procargs")
    request = processing_request(
        name, shell_algo_image, "",
        AppSpecification={
            "ImageUri": shell_algo_image,
            "ContainerEntrypoint": ["/bin/sh", "-c", 'echo "$0 $1" > /opt/ml/processing/o/args.txt'],
            "ContainerArguments": ["first", "second"],
        },
        ProcessingOutputConfig={"Outputs": [s3_output("o", f"s3://{bucket}/args", "/opt/ml/processing/o")]},
    )
    sagemaker.create_processing_job(**request)

    assert wait_for(sagemaker, name)["ProcessingJobStatus"] == "Completed"
    assert objects_under(s3, bucket, "args/") == {"args.txt": b"first second\n"}


def test_continuous_output_is_in_s3_while_the_job_runs_and_stop_ends_it(
    sagemaker, s3, bucket, shell_algo_image, stack
):
    name = unique_name("proccont")
    script = (
        "trap 'echo final > /opt/ml/processing/live/last.txt; exit 0' TERM;"
        "echo early > /opt/ml/processing/live/early.txt;"
        "while true; do sleep 0.2; done"
    )
    sagemaker.create_processing_job(**processing_request(
        name, shell_algo_image, script,
        ProcessingOutputConfig={
            "Outputs": [s3_output("live", f"s3://{bucket}/live", "/opt/ml/processing/live", "Continuous")]
        },
    ))

    deadline = time.monotonic() + 90
    while not objects_under(s3, bucket, "live/"):
        assert time.monotonic() < deadline, "the Continuous output never reached S3"
        time.sleep(0.3)
    # Uploaded while the job runs: SageMaker's Continuous S3UploadMode.
    assert sagemaker.describe_processing_job(ProcessingJobName=name)["ProcessingJobStatus"] == "InProgress"
    assert objects_under(s3, bucket, "live/") == {"early.txt": b"early\n"}

    sagemaker.stop_processing_job(ProcessingJobName=name)
    job = wait_for(sagemaker, name)

    assert job["ProcessingJobStatus"] == "Stopped"
    # SIGTERM first: the container's handler ran, and what it wrote went up too.
    assert objects_under(s3, bucket, "live/") == {"early.txt": b"early\n", "last.txt": b"final\n"}
    error = refusal(sagemaker.stop_processing_job, ProcessingJobName=name)["Error"]
    assert error["Code"] == "ValidationException" and "Stopped" in error["Message"]
    assert_instance_metrics(stack.client("cloudwatch"), name, job)


def assert_instance_metrics(cloudwatch, name: str, job: dict) -> None:
    """The instance ran while the job was looked at: its minute of CPU, memory and disk use is in
    /aws/sagemaker/ProcessingJobs under Host=<job>/algo-1, in Percent ("Monitor Amazon SageMaker
    with Amazon CloudWatch": Processing Job Instance Metrics; DiskUtilization against the
    ClusterConfig's VolumeSizeInGB)."""
    host = [{"Name": "Host", "Value": f"{name}/algo-1"}]
    listed = cloudwatch.list_metrics(Namespace=LOG_GROUP, Dimensions=host)["Metrics"]
    assert {metric["MetricName"] for metric in listed} == INSTANCE_METRICS
    assert all(metric["Dimensions"] == host for metric in listed)
    for metric in INSTANCE_METRICS:
        points = cloudwatch.get_metric_statistics(
            Namespace=LOG_GROUP,
            MetricName=metric,
            Dimensions=host,
            StartTime=job["CreationTime"] - timedelta(minutes=1),
            EndTime=job["LastModifiedTime"] + timedelta(minutes=1),
            Period=60,
            Statistics=["Minimum", "Maximum"],
        )["Datapoints"]
        assert points and all(point["Unit"] == "Percent" for point in points), metric
        assert all(0 <= point["Minimum"] <= point["Maximum"] for point in points), metric


def test_max_runtime_stops_the_job(sagemaker, shell_algo_image):
    name = unique_name("procmax")
    sagemaker.create_processing_job(**processing_request(
        name, shell_algo_image, "while true; do sleep 0.2; done", StoppingCondition={"MaxRuntimeInSeconds": 1}
    ))

    assert wait_for(sagemaker, name)["ProcessingJobStatus"] == "Stopped"


def test_instances_share_sharded_inputs_and_merge_their_outputs(sagemaker, s3, bucket, shell_algo_image):
    for index in range(4):
        s3.put_object(Bucket=bucket, Key=f"shards/part-{index}", Body=f"{index}".encode())
    s3.put_object(Bucket=bucket, Key="common/lookup.txt", Body=b"lookup")
    name = unique_name("procshard")
    script = (
        "set -e;"
        "host=$(sed 's/.*\"current_host\": \"\\([^\"]*\\)\".*/\\1/' /opt/ml/config/resourceconfig.json);"
        "mkdir -p /opt/ml/processing/out/$host;"
        "cp /opt/ml/processing/shards/* /opt/ml/processing/common/* /opt/ml/processing/out/$host/"
    )
    request = processing_request(
        name, shell_algo_image, script,
        ProcessingInputs=[
            s3_input("shards", f"s3://{bucket}/shards/", "/opt/ml/processing/shards",
                     S3DataDistributionType="ShardedByS3Key"),
            s3_input("common", f"s3://{bucket}/common/", "/opt/ml/processing/common"),
        ],
        ProcessingOutputConfig=outputs(s3_output("o", f"s3://{bucket}/merged", "/opt/ml/processing/out")),
    )
    request["ProcessingResources"]["ClusterConfig"]["InstanceCount"] = 2
    sagemaker.create_processing_job(**request)

    job = wait_for(sagemaker, name)

    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    merged = objects_under(s3, bucket, "merged/")
    # ShardedByS3Key: host i gets every 2nd key of the sorted list; FullyReplicated: everything.
    assert sorted(merged) == [
        "algo-1/lookup.txt", "algo-1/part-0", "algo-1/part-2",
        "algo-2/lookup.txt", "algo-2/part-1", "algo-2/part-3",
    ]


def test_links_and_fifos_in_outputs_are_never_followed(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("prochostile")
    script = (
        "cd /opt/ml/processing/o; echo ok > plain.txt; ln -s /etc/passwd passwd; mkfifo pipe;"
        "ln -s /etc leaked-dir; ln -s /etc/hostname /opt/ml/output/message"
    )
    sagemaker.create_processing_job(**processing_request(
        name, shell_algo_image, script,
        ProcessingOutputConfig=outputs(s3_output("o", f"s3://{bucket}/hostile", "/opt/ml/processing/o")),
    ))

    job = wait_for(sagemaker, name)

    assert job["ProcessingJobStatus"] == "Completed", job.get("FailureReason")
    assert "ExitMessage" not in job  # a link as the message file is no message
    assert objects_under(s3, bucket, "hostile/") == {"plain.txt": b"ok\n"}


def test_network_isolation_leaves_the_container_nothing_to_reach(sagemaker, s3, bucket, shell_algo_image):
    name = unique_name("prociso")
    script = "env | grep -c '^AWS_' > /opt/ml/processing/o/aws-variables; true"
    sagemaker.create_processing_job(**processing_request(
        name, shell_algo_image, script,
        NetworkConfig={"EnableNetworkIsolation": True},
        ProcessingOutputConfig={"Outputs": [s3_output("o", f"s3://{bucket}/iso", "/opt/ml/processing/o")]},
    ))

    assert wait_for(sagemaker, name)["ProcessingJobStatus"] == "Completed"
    assert objects_under(s3, bucket, "iso/") == {"aws-variables": b"0\n"}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda r, b: r.update(ProcessingInputs=[{
                "InputName": "q",
                "DatasetDefinition": {
                    "AthenaDatasetDefinition": {
                        "Catalog": "c", "Database": "d", "QueryString": "select 1", "WorkGroup": "w",
                        "OutputS3Uri": f"s3://{b}/athena", "OutputFormat": "PARQUET",
                    },
                    "LocalPath": "/opt/ml/processing/q",
                },
            }]),
            "DatasetDefinition (Athena and Redshift queries) is not supported",
        ),
        (
            lambda r, b: r.update(ProcessingInputs=[s3_input("x", f"s3://{b}/x", "/tmp/x")]),
            "must be an absolute path under /opt/ml/processing/",
        ),
        (
            lambda r, b: r.update(ProcessingInputs=[s3_input("x", f"s3://{b}/x", "/opt/ml/processing/x",
                                                             S3CompressionType="Gzip")]),
            "S3CompressionType Gzip can only be used when S3InputMode is Pipe.",
        ),
        (
            lambda r, b: r.update(
                ProcessingInputs=[s3_input("x", f"s3://{b}/x", "/opt/ml/processing/data")],
                ProcessingOutputConfig=outputs(s3_output("o", f"s3://{b}/o", "/opt/ml/processing/data")),
            ),
            "LocalPath '/opt/ml/processing/data' is given to more than one input or output",
        ),
        (
            lambda r, b: r["ProcessingResources"]["ClusterConfig"].update(InstanceType="ml.nope.large"),
            "Value 'ml.nope.large' at 'processingResources.clusterConfig.instanceType' failed to satisfy",
        ),
    ],
    ids=["dataset-definition", "local-path", "gzip-without-pipe", "same-path", "instance-type"],
)
def test_bad_requests_are_refused_before_anything_is_created(
    sagemaker, bucket, shell_algo_image, change, expected
):
    name = unique_name("procbad")
    request = processing_request(name, shell_algo_image, "true")
    change(request, bucket)

    response = refusal(sagemaker.create_processing_job, **request)

    assert response["Error"]["Code"] == "ValidationException"
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert expected in response["Error"]["Message"]
    assert refusal(sagemaker.describe_processing_job, ProcessingJobName=name)["Error"] == {
        "Code": "ValidationException", "Message": "Requested resource not found."
    }


def test_another_accounts_bucket_is_refused(stack, bucket, shell_algo_image):
    """The tenancy rule every operation's S3 URIs go through (accounts/s3_tenancy)."""
    account = str(uuid.uuid4().int)[:12]
    key_id, secret = stack.create_access_key(account)
    intruder = stack.client("sagemaker", aws_access_key_id=key_id, aws_secret_access_key=secret)
    request = processing_request(
        unique_name("procforeign"), shell_algo_image, "true",
        RoleArn=f"arn:aws:iam::{account}:role/SageMakerRole",
        ProcessingInputs=[s3_input("x", f"s3://{bucket}/x", "/opt/ml/processing/x")],
    )

    response = refusal(intruder.create_processing_job, **request)

    assert response["Error"]["Code"] == "ValidationException"
    assert bucket in response["Error"]["Message"]


def test_list_sorts_filters_and_pages(sagemaker, shell_algo_image):
    prefix = unique_name("proclist")
    names = [f"{prefix}-{index}" for index in range(3)]
    for name in names:
        sagemaker.create_processing_job(**processing_request(name, shell_algo_image, "true"))

    query = {"NameContains": prefix, "SortBy": "Name", "SortOrder": "Ascending", "MaxResults": 2}
    first = sagemaker.list_processing_jobs(**query)
    rest = sagemaker.list_processing_jobs(**query, NextToken=first["NextToken"])

    pages = first["ProcessingJobSummaries"] + rest["ProcessingJobSummaries"]
    listed = [summary["ProcessingJobName"] for summary in pages]
    assert listed == names and "NextToken" not in rest
    for name in names:
        wait_for(sagemaker, name)


def test_a_job_stopped_as_soon_as_created_ends_stopped_with_no_container_left(sagemaker, shell_algo_image):
    """Stop in whatever phase the job is in (Starting, Downloading or Processing): SageMaker's
    StopProcessingJob ends it Stopped, and nothing of it stays on the engine."""
    name = unique_name("procstopnow")
    arn = sagemaker.create_processing_job(
        **processing_request(name, shell_algo_image, "while true; do sleep 0.2; done")
    )["ProcessingJobArn"]
    sagemaker.stop_processing_job(ProcessingJobName=name)
    assert sagemaker.describe_processing_job(ProcessingJobName=name)["ProcessingJobStatus"] in {
        "Stopping", "Stopped"
    }

    assert wait_for(sagemaker, name)["ProcessingJobStatus"] == "Stopped"
    left = docker.from_env().containers.list(all=True, filters={"label": f"sageport.resource={arn}"})
    assert left == []
