"""CloudWatch's wire protocols, each spoken by botocore itself: AWS JSON 1.0 (what botocore and
the AWS CLI send today), the query protocol (form-encoded `Action=...`, XML answers; botocore
speaks it when its model lists only `query`, as older SDKs' models do) and Smithy RPC v2 CBOR (the
model's first protocol). Answers and errors must be what botocore's parser for that protocol
reads; bad input is never a 500."""

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from xml.etree import ElementTree

import boto3
import botocore
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError
from botocore.parsers import RpcV2CBORParser
from django.test import Client

from logs.metrics import SeriesKey, put
from tests.unit.protocol.conftest import ENDPOINT_URL, REGION, DjangoTransport, replay

T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
T0_MS = int(T0.timestamp() * 1000)
JOB = [{"Name": "TrainingJobName", "Value": "job"}]
STATISTICS = {
    "Namespace": "/aws/sagemaker/TrainingJobs",
    "MetricName": "loss",
    "Dimensions": JOB,
    "StartTime": T0,
    "EndTime": T0 + timedelta(minutes=5),
    "Period": 60,
}


@pytest.fixture
def points(access_key):
    put(
        SeriesKey(access_key.account_id, REGION, "/aws/sagemaker/TrainingJobs", "job"),
        "algo-1",
        [("loss", T0_MS, 2.0), ("loss", T0_MS + 1000, 4.0)],
    )


def _model_speaking(protocol: str, directory: Path) -> Path:
    """botocore's own cloudwatch model, told to speak only `protocol`."""
    source = Path(botocore.__file__).parent / "data/cloudwatch/2010-08-01/service-2.json.gz"
    model = json.loads(gzip.decompress(source.read_bytes()))
    model["metadata"].update(protocol=protocol, protocols=[protocol])
    target = directory / "cloudwatch/2010-08-01"
    target.mkdir(parents=True)
    (target / "service-2.json").write_text(json.dumps(model))
    return directory


@pytest.fixture(params=["json", "query", "smithy-rpc-v2-cbor"])
def cloudwatch(request, access_key, tmp_path):
    session = boto3.session.Session()
    session._session.get_component("data_loader").search_paths.insert(
        0, str(_model_speaking(request.param, tmp_path))
    )
    client = session.client(
        "cloudwatch",
        endpoint_url=ENDPOINT_URL,
        region_name=REGION,
        aws_access_key_id=access_key.access_key_id,
        aws_secret_access_key=access_key.secret_access_key,
        config=Config(retries={"max_attempts": 1}),
    )
    transport = DjangoTransport()
    client.meta.events.register("before-send", transport)
    client.transport = transport
    client.protocol = request.param
    return client


def test_the_protocol_under_test_is_the_one_on_the_wire(cloudwatch):
    cloudwatch.list_metrics()

    (response,) = cloudwatch.transport.responses
    expected = {
        "json": "application/x-amz-json-1.0",
        "query": "text/xml",
        "smithy-rpc-v2-cbor": "application/cbor",
    }[cloudwatch.protocol]
    assert response["Content-Type"] == expected


def test_statistics_travel_both_ways(cloudwatch, points):
    response = cloudwatch.get_metric_statistics(**STATISTICS, Statistics=["Average", "SampleCount"])

    (point,) = response["Datapoints"]
    assert (point["Timestamp"], point["Average"], point["SampleCount"], point["Unit"]) == (
        T0,
        3.0,
        2.0,
        "None",
    )
    assert response["Label"] == "loss"


def test_lists_maps_and_pages_travel_both_ways(cloudwatch, points):
    metrics = cloudwatch.list_metrics(Namespace="/aws/sagemaker/TrainingJobs", Dimensions=[{"Name": "Host"}])
    assert metrics["Metrics"] == [
        {
            "Namespace": "/aws/sagemaker/TrainingJobs",
            "MetricName": "loss",
            "Dimensions": [{"Name": "Host", "Value": "job/algo-1"}],
        }
    ]
    percentiles = cloudwatch.get_metric_statistics(**STATISTICS, ExtendedStatistics=["p50", "p100"])
    assert percentiles["Datapoints"][0]["ExtendedStatistics"] == {"p50": 2.0, "p100": 4.0}
    data = cloudwatch.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "q",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "/aws/sagemaker/TrainingJobs",
                        "MetricName": "loss",
                        "Dimensions": JOB,
                    },
                    "Period": 60,
                    "Stat": "Maximum",
                },
            }
        ],
        StartTime=T0,
        EndTime=T0 + timedelta(minutes=5),
    )
    (result,) = data["MetricDataResults"]
    assert (result["Timestamps"], result["Values"], result["StatusCode"]) == ([T0], [4.0], "Complete")


@pytest.mark.parametrize(
    ("request_options", "code"),
    [
        ({"Period": 45}, "InvalidParameterValue"),
        ({"Namespace": ":colon"}, "ValidationError"),
        ({"Statistics": ["Average"], "ExtendedStatistics": ["p9"]}, "InvalidParameterCombination"),
    ],
)
def test_errors_arrive_with_cloudwatchs_code(cloudwatch, points, request_options, code):
    with pytest.raises(ClientError) as excinfo:
        cloudwatch.get_metric_statistics(**{**STATISTICS, "Statistics": ["Average"], **request_options})

    assert excinfo.value.response["Error"]["Code"] == code
    assert excinfo.value.response["Error"]["Type"] == "Sender"
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_a_bad_signature_is_signature_does_not_match(cloudwatch):
    cloudwatch._request_signer._credentials = Credentials(
        cloudwatch._request_signer._credentials.access_key, "wrong"
    )
    with pytest.raises(ClientError) as excinfo:
        cloudwatch.list_metrics()

    code = excinfo.value.response["Error"]["Code"]
    assert code == "SignatureDoesNotMatch"
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_json_errors_carry_the_query_error_header(make_client):
    client, transport = make_client("cloudwatch")
    with pytest.raises(client.exceptions.InvalidParameterValueException):
        client.get_metric_data(
            MetricDataQueries=[{"Id": "e", "Expression": "1"}], StartTime=T0, EndTime=T0 + timedelta(1)
        )

    assert transport.responses[-1]["x-amzn-query-error"] == "InvalidParameterValue;Sender"


# --- forms botocore would never send ---------------------------------------------------------


@pytest.fixture
def form_post(access_key):
    def post(body: bytes, *, secret=None):
        request = AWSRequest(
            "POST",
            ENDPOINT_URL + "/",
            headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
            data=body,
        )
        credentials = Credentials(access_key.access_key_id, secret or access_key.secret_access_key)
        SigV4Auth(credentials, "monitoring", REGION).add_auth(request)
        return replay(Client(), request.prepare())

    return post


def _error(response) -> tuple[int, str, str]:
    document = ElementTree.fromstring(response.content)
    return (
        response.status_code,
        document.findtext("{*}Error/{*}Code"),
        document.findtext("{*}Error/{*}Message"),
    )


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        (b"Action=DescribeThings&Version=2010-08-01", 400, "InvalidAction", "DescribeThings"),
        (b"Action=ListMetrics&Version=1999-01-01", 400, "InvalidAction", "1999-01-01"),
        (b"Action=ListMetrics&Version=2010-08-01&Bogus=1", 400, "ValidationError", "not defined"),
        (
            b"Action=ListMetrics&Version=2010-08-01&Namespace=a&Namespace=b",
            400,
            "MalformedInput",
            "more than once",
        ),
        (b"Action=ListMetrics&Version=2010-08-01&Namespace=%ff", 400, "MalformedInput", "not a valid form"),
        (  # thousands of long dotted names: refused by name, without listing every prefix of each
            b"Action=ListMetrics&Version=2010-08-01&"
            + b"&".join(b"a." * 200 + b"%d=x" % n for n in range(3000)),
            400,
            "ValidationError",
            "3000 validation errors detected",
        ),
        (
            b"Action=PutMetricData&Version=2010-08-01&Namespace=x&MetricData=",
            501,
            "NotImplemented",
            "PutMetricData",
        ),
        (
            b"Action=GetMetricStatistics&Version=2010-08-01&Namespace=x&MetricName=m&StartTime=yesterday"
            b"&EndTime=2026-01-01T00:00:00Z&Period=sixty&Statistics.member.1=Sum",
            400,
            "ValidationError",
            "must be of type",
        ),
    ],
)
def test_bad_forms_get_an_xml_error_never_a_500(form_post, body, status, code, words):
    assert _error(form_post(body))[:2] == (status, code)
    assert words in _error(form_post(body))[2]


def test_control_characters_quoted_back_stay_valid_xml(form_post):
    status, code, message = _error(
        form_post(b"Action=ListMetrics&Version=2010-08-01&Namespace=%01" + b"x" * 300)
    )

    assert (status, code) == (400, "ValidationError")
    assert "\ufffd" in message


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "application/x-www-form-urlencoded"},
        {"Content-Type": "application/cbor", "smithy-protocol": "rpc-v2-cbor"},
    ],
)
def test_invoke_endpoint_bodies_are_never_taken_for_another_protocol(access_key, headers):
    request = AWSRequest(
        "POST", ENDPOINT_URL + "/endpoints/nothing/invocations", headers=headers, data=b"a=1"
    )
    SigV4Auth(Credentials(access_key.access_key_id, "wrong"), "sagemaker", REGION).add_auth(request)
    response = replay(Client(), request.prepare())

    # InvokeEndpoint's own answer (REST-JSON), not the query protocol's XML or CBOR.
    assert response.status_code == 403 and response["X-Amzn-ErrorType"] == "InvalidSignatureException"
    assert json.loads(response.content)["__type"] == "InvalidSignatureException"


# --- CBOR bodies botocore would never send -----------------------------------------------------


@pytest.fixture
def cbor_post(access_key):
    def post(path: str, body: bytes):
        request = AWSRequest(
            "POST",
            ENDPOINT_URL + path,
            headers={"Content-Type": "application/cbor", "smithy-protocol": "rpc-v2-cbor"},
            data=body,
        )
        SigV4Auth(
            Credentials(access_key.access_key_id, access_key.secret_access_key), "monitoring", REGION
        ).add_auth(request)
        return replay(Client(), request.prepare())

    return post


def _cbor_error(response) -> tuple[int, str, str]:
    parser = RpcV2CBORParser()
    body = parser.parse_data_item(parser.get_peekable_stream_from_bytes(response.content))
    return response.status_code, body["__type"], response.get("x-amzn-query-error", "")


LIST_METRICS = "/service/GraniteServiceVersion20100801/operation/ListMetrics"


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [
        (LIST_METRICS, b"\xff\x00", (400, "SerializationException", "MalformedInput;Sender")),
        (LIST_METRICS, b"\x9f\x01", (400, "SerializationException", "MalformedInput;Sender")),  # a list
        (LIST_METRICS, b"\xa1\x01\x02", (400, "SerializationException", "MalformedInput;Sender")),  # key 1
        (
            LIST_METRICS,
            b"\xa1\x61a" * 100 + b"\x01",
            (400, "SerializationException", "MalformedInput;Sender"),
        ),  # deep
        (LIST_METRICS, b"\xa1\x65Bogus\x01", (400, "ValidationError", "ValidationError;Sender")),
        ("/service/Nothing/operation/ListMetrics", b"", (400, "UnknownOperationException", "")),
        (
            "/service/GraniteServiceVersion20100801/operation/Nope",
            b"",
            (400, "UnknownOperationException", "InvalidAction;Sender"),
        ),
    ],
)
def test_bad_cbor_requests_get_a_cbor_error_never_a_500(cbor_post, path, body, expected):
    assert _cbor_error(cbor_post(path, body)) == expected
