"""Fuzzing the API port with requests built from botocore's own input shapes.

A few thousand requests, from a fixed seed, go through the real WSGI app (Django's test
client, every handler registered) properly SigV4-signed by botocore's signer: operations
Sageport implements and some it does not, for `sagemaker`, `logs`, `cloudwatch` and `sagemaker-runtime`.
Each request is invalid by construction (a wrong type, an unknown member, a value over its
bound, deep nesting, a huge number, a lone surrogate, a bad token or content type, a bad
endpoint name or header...), except garbage pagination tokens sent to read-only operations.
Then forged requests: validly signed state-changing requests tampered with after signing.

Asserted: no 5xx but the documented 501 for unimplemented operations; every error is AWS JSON
(`__type`, `Message`, `X-Amzn-ErrorType`); every invalid request is a 4xx; no forgery is
accepted; and the database, seeded with resources the requests aim at, is exactly as before."""

import base64
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from hashlib import sha256
from urllib.parse import quote

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from django.apps import apps
from django.test import Client

from logs.models import LogStream
from protocol import registry
from protocol.shapes import service_model
from tests.unit.protocol.conftest import ENDPOINT_URL, REGION, replay

SEED = 20261123
JSON_REQUESTS = 4_000
TOKEN_REQUESTS = 300
RUNTIME_REQUESTS = 300
UNIMPLEMENTED_SAMPLE = 15  # operations of each service that Sageport does not register
IMPLEMENTED_SHARE = 0.85  # of the JSON requests, those aimed at operations Sageport implements
ROLE = "arn:aws:iam::210987654321:role/SageMakerRole"
LOG_GROUP = "/aws/sagemaker/TrainingJobs"
SERVICES = {
    "SageMaker": "sagemaker",
    "Logs_20140328": "logs",
    "GraniteServiceVersion20100801": "cloudwatch",  # AWS JSON 1.0, as botocore sends it
}
# Names that aim generated requests at the seeded resources.
NAME_HINTS = {
    "ModelName": "fuzz-model",
    "EndpointName": "fuzz-endpoint",
    "EndpointConfigName": "fuzz-config",
    "TrainingJobName": "fuzz-job",
    "ModelPackageGroupName": "fuzz-group",
    "ModelPackageName": "fuzz-group/1",
    "ModelPackageArn": f"arn:aws:sagemaker:{REGION}:210987654321:model-package/fuzz-group/1",
    "logGroupName": LOG_GROUP,
    "logStreamName": "fuzz-job/algo-1",
}
JSON_CONTENT_TYPES = ("application/x-amz-json-1.1", "application/json", "application/x-amz-json-1.0")
JSON_HEADERS = {"Content-Type": JSON_CONTENT_TYPES[0]}
RAW_PLACEHOLDER = "@@raw@@"


@dataclass
class Fuzzed:
    """A request to send and what kind of answer it must get."""

    label: str
    target: str | None
    body: bytes
    path: str = "/"
    method: str = "POST"
    headers: dict = field(default_factory=dict)
    must_fail: bool = True  # invalid by construction: a 4xx (or 501) is the only right answer


class Signer:
    def __init__(self, access_key_id: str, secret: str):
        self.credentials = Credentials(access_key_id, secret)

    def request(
        self, fuzzed: Fuzzed, *, signing_name="sagemaker", region=REGION, unsigned: dict | None = None
    ):
        headers = dict(fuzzed.headers)
        if fuzzed.target:
            headers.setdefault("Content-Type", "application/x-amz-json-1.1")
            headers["X-Amz-Target"] = fuzzed.target
        request = AWSRequest(fuzzed.method, ENDPOINT_URL + fuzzed.path, headers=headers, data=fuzzed.body)
        SigV4Auth(self.credentials, signing_name, region).add_auth(request)
        for name, value in (unsigned or {}).items():
            request.headers[name] = value
        return request.prepare()


class ShapeFuzzer:
    """Plausible values for botocore shapes, and mutations that make them invalid."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    # --- plausible values -----------------------------------------------------------------------

    def value(self, shape, name: str = "", depth: int = 0):
        kind = shape.type_name
        if kind == "structure":
            required = set(shape.required_members)
            chance = 0.3 if depth < 3 else 0.0
            return {
                member: self.value(member_shape, member, depth + 1)
                for member, member_shape in shape.members.items()
                if (member in required and depth < 8) or self.rng.random() < chance
            }
        if kind == "list":
            count = max(shape.metadata.get("min", 0), self.rng.randint(0, 2 if depth < 3 else 0))
            return [self.value(shape.member, name, depth + 1) for _ in range(min(count, 3))]
        if kind == "map":
            return {
                f"k{index}": self.value(shape.value, name, depth + 1)
                for index in range(self.rng.randint(0, 2))
            }
        return self.scalar(shape, name)

    def scalar(self, shape, name: str):
        kind = shape.type_name
        if kind == "string":
            if shape.enum:
                return self.rng.choice(shape.enum)
            if name in NAME_HINTS:
                return NAME_HINTS[name]
            text = "fuzz-" + str(self.rng.randint(0, 999))
            return text[: shape.metadata.get("max", len(text))].ljust(shape.metadata.get("min", 0), "a")
        if kind in ("integer", "long"):
            return int(shape.metadata.get("min", 1))
        if kind in ("float", "double"):
            return float(shape.metadata.get("min", 0.5))
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "timestamp":
            return 1_700_000_000
        return "ZnV6eg=="  # blob

    # --- mutations: each makes the request invalid -------------------------------------------------

    def slots(self, shape, value, path=()):
        """(path, shape) of every member value in the document, the top level included."""
        yield path, shape
        if shape.type_name == "structure" and isinstance(value, dict):
            for member, item in value.items():
                if member in shape.members:
                    yield from self.slots(shape.members[member], item, (*path, member))
        elif shape.type_name == "list" and isinstance(value, list):
            for index, item in enumerate(value):
                yield from self.slots(shape.member, item, (*path, index))
        elif shape.type_name == "map" and isinstance(value, dict):
            for key, item in value.items():
                yield from self.slots(shape.value, item, (*path, key))

    def wrong_type(self, shape):
        choices = {
            "string": [123, True, [], {}, 1.5],
            "blob": [123, True, [], {}],
            "integer": ["12", 1.5, [], {}, True],
            "long": ["12", 1.5, [], {}, False],
            "float": ["12", [], {}, True],
            "double": ["1e3", [], {}, True],
            "boolean": [0, 1, "true", [], {}],
            "timestamp": ["2024-01-01T00:00:00Z", [], {}, True],
            "structure": [[], "x", 1, True],
            "list": [{}, "x", 1, True],
            "map": [[], "x", 1, True],
        }
        return self.rng.choice(choices[shape.type_name])

    def out_of_bounds(self, shape):
        """A value past the shape's max or min, or of the wrong type when it has neither."""
        meta, kind = shape.metadata, shape.type_name
        if kind == "string" and "max" in meta and meta["max"] <= 300_000:
            return "b" * (meta["max"] + self.rng.choice([1, 7, 5000]))
        if kind in ("integer", "long"):
            bits = 31 if kind == "integer" else 63
            if self.rng.random() < 0.5:
                return self.rng.choice([2**bits, -(2**bits) - 1, 10**40])
            if "max" in meta:
                return int(meta["max"]) + 1
            if "min" in meta:
                return int(meta["min"]) - 1
        if kind == "list" and "max" in meta and meta["max"] <= 5000:
            return [self.scalar(shape.member, "") if shape.member.type_name != "structure" else {}] * (
                meta["max"] + 1
            )
        if kind == "string" and meta.get("min", 0) > 0:
            return ""
        return self.wrong_type(shape)


def garbage_token(rng: random.Random) -> str:
    offset = rng.choice([2**63, 2**64, -1, 2**53 + 1, 10**30])
    return rng.choice(
        [
            "garbage",
            base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode(),
            base64.urlsafe_b64encode(b'{"offset": "1"}').decode(),
            "f/99999999999999999999/1",
            "f/9223372036854775808/0",
            "b/-9223372036854775809/3",
            "f/1/18446744073709551616",
            "A" * 8192,
            "\u00ff" * 10,
            "%00",
        ]
    )


@dataclass
class Slot:
    """Where a mutation applies: a member's path and shape, the operation's required members."""

    path: tuple
    shape: object
    required: list[str]
    prefix: str


@dataclass
class Draft:
    """A JSON request being built: its document, or a raw body replacing it."""

    target: str
    document: dict
    headers: dict = field(default_factory=dict)
    raw: bytes | None = None  # text json.dumps cannot write, placed where RAW_PLACEHOLDER is
    body: bytes | None = None

    def set(self, path: tuple, value) -> None:
        if not path:
            self.document = value
            return
        container = self.document
        for step in path[:-1]:
            container = container[step]
        container[path[-1]] = value

    def set_raw(self, path: tuple, text: bytes) -> None:
        self.raw = text
        if path:
            self.set(path, RAW_PLACEHOLDER)
        else:
            self.document["Extra"] = RAW_PLACEHOLDER

    def encode(self) -> bytes:
        if self.body is not None:
            return self.body
        body = json.dumps(self.document).encode()  # ensure_ascii: lone surrogates go as \\udXXX
        return body if self.raw is None else body.replace(json.dumps(RAW_PLACEHOLDER).encode(), self.raw)


class Campaign:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.shapes = ShapeFuzzer(self.rng)

    def operations(self, prefix: str) -> tuple[list[str], list[str]]:
        """The service's operations Sageport implements, and a sample of those it does not."""
        names = service_model(SERVICES[prefix]).operation_names
        implemented = [name for name in names if registry.handler_for(prefix, name)]
        others = [name for name in names if not registry.handler_for(prefix, name)]
        return implemented, self.rng.sample(others, UNIMPLEMENTED_SAMPLE)

    def pick_operation(self, operations: tuple[list[str], list[str]]) -> str:
        implemented, others = operations
        return self.rng.choice(implemented if self.rng.random() < IMPLEMENTED_SHARE else others)

    def json_request(self, prefix: str, operation: str) -> Fuzzed:
        shape = service_model(SERVICES[prefix]).operation_model(operation).input_shape
        draft = Draft(f"{prefix}.{operation}", self.shapes.value(shape) if shape else {})
        slots = list(self.shapes.slots(shape, draft.document)) if shape else [((), None)]
        path, slot_shape = self.rng.choice(slots)
        required = list(shape.required_members) if shape else []
        mutation = self.rng.choice(list(JSON_MUTATIONS))
        if mutation in ("null_required", "drop_required") and not required:
            mutation = "unknown_member"
        if mutation in ("wrong_type", "out_of_bounds") and slot_shape is None:
            mutation = "not_an_object"
        JSON_MUTATIONS[mutation](self, draft, Slot(path, slot_shape, required, prefix))
        return Fuzzed(f"{draft.target}:{mutation}", draft.target, draft.encode(), headers=draft.headers)

    def wrong_type(self, draft: "Draft", slot: "Slot") -> None:
        draft.set(slot.path, self.shapes.wrong_type(slot.shape))

    def out_of_bounds(self, draft: "Draft", slot: "Slot") -> None:
        draft.set(slot.path, self.shapes.out_of_bounds(slot.shape))

    def unknown_member(self, draft: "Draft", slot: "Slot") -> None:
        name = self.rng.choice(["Unknown", "été", "a" * 300, "", "__proto__", "ModelName "])
        draft.document[name] = self.rng.choice(["x", 1, [1], {"a": 1}])

    def deep(self, draft: "Draft", slot: "Slot") -> None:
        depth = self.rng.choice([65, 200, 1_000, 50_000])
        draft.set_raw(slot.path, b"[" * depth + b"]" * depth)

    def huge_number(self, draft: "Draft", slot: "Slot") -> None:
        draft.set_raw(
            slot.path, self.rng.choice([b"9" * 65, b"1" * 4_301, b"-" + b"7" * 20_000, b"1." + b"0" * 99])
        )

    def nan(self, draft: "Draft", slot: "Slot") -> None:
        draft.set_raw(slot.path, self.rng.choice([b"NaN", b"Infinity", b"-Infinity"]))

    def surrogate(self, draft: "Draft", slot: "Slot") -> None:
        member = "ModelName" if slot.prefix == "SageMaker" else "logGroupName"
        draft.document[member] = self.rng.choice(["\ud800", "x\udfffy", "\udc00" * 3, "ok\ud83d"])

    def surrogate_key(self, draft: "Draft", slot: "Slot") -> None:
        draft.document["\ud800"] = "x"

    def null_required(self, draft: "Draft", slot: "Slot") -> None:
        draft.document[self.rng.choice(slot.required)] = None

    def drop_required(self, draft: "Draft", slot: "Slot") -> None:
        draft.document.pop(self.rng.choice(slot.required), None)

    def not_an_object(self, draft: "Draft", slot: "Slot") -> None:
        draft.body = self.rng.choice([b"[]", b'"x"', b"1", b"null", b"true"])

    def bad_json(self, draft: "Draft", slot: "Slot") -> None:
        draft.body = self.rng.choice([b"{", b'{"a": }', b"\xff\xfe{}", b'{"a": "\\x"}', b"{} {}"])

    def content_type(self, draft: "Draft", slot: "Slot") -> None:
        draft.headers["Content-Type"] = self.rng.choice(
            ["text/plain", "application/xml", "", "multipart/form-data"]
        )

    def security_token(self, draft: "Draft", slot: "Slot") -> None:
        draft.headers["X-Amz-Security-Token"] = self.rng.choice(["garbage", "A" * 2000, "IQoJb3JpZ2luX2VjE"])

    def unknown_target(self, draft: "Draft", slot: "Slot") -> None:
        prefix = slot.prefix
        draft.target = self.rng.choice(
            [f"{prefix}.NoSuchOperation", "DynamoDB_20120810.ListTables", prefix, "."]
        )

    def token_request(self, prefix: str, operation: str) -> Fuzzed:
        """A read-only operation with a garbage pagination token (otherwise plausible)."""
        shape = service_model(SERVICES[prefix]).operation_model(operation).input_shape
        document = self.shapes.value(shape)
        member = "NextToken" if "NextToken" in shape.members else "nextToken"
        document[member] = garbage_token(self.rng)
        return Fuzzed(
            f"{prefix}.{operation}:token",
            f"{prefix}.{operation}",
            json.dumps(document).encode(),
            must_fail=False,
        )

    def runtime_request(self) -> Fuzzed:
        mutation = self.rng.choice(
            ["name", "name", "header", "header", "security_token", "unsigned_payload", "method", "suffix"]
        )
        name, headers, method, suffix = "fuzz-endpoint", {}, "POST", "invocations"
        if self.rng.random() < 0.5:
            headers["Content-Type"] = self.rng.choice(["text/csv", "application/json"])
        if mutation == "name":
            name = self.rng.choice(["a_b", "-x", "x" * 64, "é", "a b", "a%2Fb", "..", "x" * 5000])
        elif mutation == "header":
            header, value = self.rng.choice(
                [
                    ("X-Amzn-SageMaker-Custom-Attributes", "c" * 1025),
                    ("X-Amzn-SageMaker-Target-Variant", "bad_variant!"),
                    ("X-Amzn-SageMaker-Inference-Id", "i" * 65),
                    ("X-Amzn-SageMaker-Target-Model", " leading-space"),
                    ("X-Amzn-SageMaker-Session-Id", "not/a/session"),
                    ("X-Amzn-SageMaker-Inference-Component", "-bad-"),
                    ("Accept", "a" * 1025),
                ]
            )
            headers[header] = value
        elif mutation == "security_token":
            headers["X-Amz-Security-Token"] = "garbage"
        elif mutation == "unsigned_payload":
            headers["X-Amz-Content-SHA256"] = "UNSIGNED-PAYLOAD"
        elif mutation == "method":
            method = self.rng.choice(["GET", "PUT", "DELETE", "PATCH"])
        elif mutation == "suffix":
            suffix = self.rng.choice(["async-invocations", "invocations-response-stream", "invocations/"])
        path = f"/endpoints/{quote(name, safe='-._~')}/{suffix}"
        body = self.rng.randbytes(self.rng.choice([0, 10, 1000]))
        return Fuzzed(f"runtime:{mutation}", None, body, path=path, method=method, headers=headers)


# Each makes any request invalid.
JSON_MUTATIONS = {
    name: getattr(Campaign, name)
    for name in (
        "wrong_type", "out_of_bounds", "unknown_member", "deep", "huge_number", "nan", "surrogate",
        "surrogate_key", "null_required", "drop_required", "not_an_object", "bad_json", "content_type",
        "security_token", "unknown_target",
    )
}  # fmt: skip


def database_state() -> dict:
    return {model.__name__: list(model.objects.order_by("pk").values()) for model in apps.get_models()}


@pytest.fixture
def seeded(make_client, access_key):
    """Resources that the fuzzed and forged requests aim at (created through the API)."""
    client, _ = make_client()
    client.create_model(ModelName="fuzz-model", ExecutionRoleArn=ROLE, PrimaryContainer={"Image": "busybox"})
    client.create_endpoint_config(
        EndpointConfigName="fuzz-config",
        ProductionVariants=[
            {
                "VariantName": "v1",
                "ModelName": "fuzz-model",
                "InstanceType": "ml.m5.large",
                "InitialInstanceCount": 1,
            }
        ],
    )
    client.create_endpoint(EndpointName="fuzz-endpoint", EndpointConfigName="fuzz-config")
    client.create_training_job(
        TrainingJobName="fuzz-job",
        AlgorithmSpecification={"TrainingImage": "busybox", "TrainingInputMode": "File"},
        RoleArn=ROLE,
        OutputDataConfig={"S3OutputPath": "s3://bucket/out"},
        ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        StoppingCondition={"MaxRuntimeInSeconds": 60},
    )
    client.create_model_package_group(ModelPackageGroupName="fuzz-group")
    client.create_model_package(
        ModelPackageGroupName="fuzz-group", InferenceSpecification={"Containers": [{"Image": "busybox"}]}
    )
    stream = LogStream.objects.create(
        account_id=access_key.account_id, region=REGION, group_name=LOG_GROUP, stream_name="fuzz-job/algo-1"
    )
    stream.events.create(timestamp_ms=1_700_000_000_000, ingestion_time_ms=1_700_000_000_000, message="line")
    return client


def check_answer(response, fuzzed: Fuzzed, problems: list[str]) -> None:
    status = response.status_code
    if status >= 500 and status != 501:
        problems.append(f"{fuzzed.label}: {status} {response.content[:300]!r}")
    if fuzzed.must_fail and status < 400:
        problems.append(f"{fuzzed.label}: accepted with {status}")
    if status < 400:
        return
    try:
        body = json.loads(response.content)
    except ValueError:
        problems.append(f"{fuzzed.label}: non-JSON error {status} {response.content[:100]!r}")
        return
    content_type = response["Content-Type"]
    if (
        content_type not in JSON_CONTENT_TYPES
        or not isinstance(body.get("Message"), str)
        or response.get("X-Amzn-ErrorType") != body.get("__type")
        or not response.get("x-amzn-RequestId")
        or (status == 501 and body["__type"] != "NotImplementedException")
    ):
        problems.append(f"{fuzzed.label}: malformed error {status} {content_type} {response.content[:200]!r}")


def test_fuzzed_requests_get_aws_errors_and_change_nothing(seeded, access_key, capsys):
    campaign = Campaign(SEED)
    signer = Signer(access_key.access_key_id, access_key.secret_access_key)
    django_client = Client()
    operations = {prefix: campaign.operations(prefix) for prefix in SERVICES}
    paginated = [
        (prefix, name)
        for prefix in SERVICES
        for name in operations[prefix][0]
        if {"NextToken", "nextToken"}
        & set(service_model(SERVICES[prefix]).operation_model(name).input_shape.members)
    ]
    before = database_state()
    problems: list[str] = []
    statuses: Counter[int] = Counter()

    requests = []
    for _ in range(JSON_REQUESTS):
        prefix = campaign.rng.choice(list(SERVICES))
        requests.append(
            (campaign.json_request(prefix, campaign.pick_operation(operations[prefix])), SERVICES[prefix])
        )
    requests += [
        (campaign.token_request(*campaign.rng.choice(paginated)), None) for _ in range(TOKEN_REQUESTS)
    ]
    requests += [(campaign.runtime_request(), "sagemaker") for _ in range(RUNTIME_REQUESTS)]
    for fuzzed, service in requests:
        signing_name = service_model(service or SERVICES[fuzzed.target.partition(".")[0]]).signing_name
        response = replay(django_client, signer.request(fuzzed, signing_name=signing_name))
        statuses[response.status_code] += 1
        check_answer(response, fuzzed, problems)

    server_errors = sum(count for status, count in statuses.items() if status >= 500 and status != 501)
    with capsys.disabled():
        print(f"\nfuzz: {len(requests)} requests, statuses {dict(sorted(statuses.items()))}")
        print(f"fuzz: 5xx other than 501: {server_errors}")
    assert problems == []
    assert sum(statuses.values()) == len(requests) >= 3_000
    assert database_state() == before


# --- Forgeries: valid signatures, tampered after signing -------------------------------------------

STATE_CHANGING = [
    ("SageMaker.DeleteModel", {"ModelName": "fuzz-model"}),
    ("SageMaker.DeleteEndpointConfig", {"EndpointConfigName": "fuzz-config"}),
    ("SageMaker.DeleteEndpoint", {"EndpointName": "fuzz-endpoint"}),
    ("SageMaker.StopTrainingJob", {"TrainingJobName": "fuzz-job"}),
    ("SageMaker.DeleteModelPackage", {"ModelPackageName": "fuzz-group/1"}),
    ("SageMaker.DeleteModelPackageGroup", {"ModelPackageGroupName": "fuzz-group"}),
    (
        "SageMaker.UpdateModelPackage",
        {
            "ModelPackageArn": f"arn:aws:sagemaker:{REGION}:210987654321:model-package/fuzz-group/1",
            "ModelApprovalStatus": "Approved",
        },
    ),
    (
        "SageMaker.CreateModel",
        {"ModelName": "forged", "ExecutionRoleArn": ROLE, "PrimaryContainer": {"Image": "x"}},
    ),
    (
        "SageMaker.AddTags",
        {
            "ResourceArn": f"arn:aws:sagemaker:{REGION}:210987654321:model/fuzz-model",
            "Tags": [{"Key": "k", "Value": "v"}],
        },
    ),
]
HARMLESS = ("SageMaker.DescribeModel", {"ModelName": "fuzz-model"})


def forgeries(signer: Signer, rng: random.Random):
    """(label, prepared request) pairs: each a signed request altered after signing."""
    for target, params in STATE_CHANGING:
        yield from json_forgeries(signer, rng, target, json.dumps(params).encode())
    yield from runtime_forgeries(signer)


def json_forgeries(signer: Signer, rng: random.Random, target: str, body: bytes):
    harmless_target, harmless_params = HARMLESS
    intact = Fuzzed(target, target, body)

    def with_headers(headers: dict, signed_body: bytes = body) -> Fuzzed:
        return Fuzzed(target, target, signed_body, headers=headers)

    retargeted = signer.request(Fuzzed(target, harmless_target, body))
    retargeted.headers["X-Amz-Target"] = target
    yield "target swapped", retargeted
    swapped = signer.request(Fuzzed(target, target, b"{}"))
    swapped.body = body
    yield "body swapped", swapped
    untargeted = Fuzzed(target, None, json.dumps(harmless_params).encode(), headers=dict(JSON_HEADERS))
    yield "target unsigned", signer.request(untargeted, unsigned={"X-Amz-Target": target})
    unsigned_payload = signer.request(with_headers({"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"}, b"{}"))
    unsigned_payload.body = body
    yield "UNSIGNED-PAYLOAD", unsigned_payload
    hashed = signer.request(with_headers({"X-Amz-Content-SHA256": sha256(b"{}").hexdigest()}, b"{}"))
    hashed.body = body
    yield "body swapped under a signed hash", hashed
    yield "unsigned security token", signer.request(intact, unsigned={"X-Amz-Security-Token": "garbage"})
    yield "signed garbage token", signer.request(with_headers({"X-Amz-Security-Token": "garbage"}))
    yield (
        "bogus region",
        signer.request(intact, region=rng.choice(["moon", "local", "us-east-1x", "EU-WEST-1"])),
    )
    flipped = signer.request(intact)
    authorization = flipped.headers["Authorization"]
    flipped.headers["Authorization"] = authorization[:-1] + ("0" if authorization[-1] != "0" else "1")
    yield "signature altered", flipped
    narrowed = signer.request(intact)
    narrowed.headers["Authorization"] = narrowed.headers["Authorization"].replace(";x-amz-target", "")
    yield "target dropped from SignedHeaders", narrowed
    redated = signer.request(intact)
    redated.headers["X-Amz-Date"] = "20200101T000000Z"
    yield "date altered", redated
    rehosted = signer.request(intact)
    rehosted.url = rehosted.url.replace("127.0.0.1:5005", "127.0.0.1:5006")
    yield "host altered", rehosted
    stranger = Signer("AKIAUNKNOWNUNKNOWN00", signer.credentials.secret_key)
    yield "unknown key", stranger.request(intact)


def runtime_forgeries(signer: Signer):
    invoke = Fuzzed("runtime", None, b"1,2,3", path="/endpoints/fuzz-endpoint/invocations")
    for header in (
        "Content-Type",
        "Accept",
        "X-Amzn-SageMaker-Custom-Attributes",
        "X-Amzn-SageMaker-Target-Model",
    ):
        yield f"runtime {header} unsigned", signer.request(invoke, unsigned={header: "forged"})
    swapped = signer.request(invoke)
    swapped.body = b"forged"
    yield "runtime body swapped", swapped
    unsigned_payload = signer.request(
        Fuzzed("runtime", None, b"", path=invoke.path, headers={"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"})
    )
    unsigned_payload.body = b"forged"
    yield "runtime UNSIGNED-PAYLOAD", unsigned_payload
    rerouted = signer.request(invoke)
    rerouted.url = rerouted.url.replace("fuzz-endpoint", "other-endpoint")
    yield "runtime endpoint swapped", rerouted


def test_forged_requests_are_all_refused_and_change_nothing(seeded, access_key, capsys):
    signer = Signer(access_key.access_key_id, access_key.secret_access_key)
    django_client = Client()
    before = database_state()
    accepted, refused, problems = [], 0, []
    for label, prepared in forgeries(signer, random.Random(SEED)):
        response = replay(django_client, prepared)
        if response.status_code < 400:
            accepted.append(label)
        else:
            refused += 1
        check_answer(response, Fuzzed(label, None, b""), problems)

    with capsys.disabled():
        print(f"\nforgeries: {refused + len(accepted)} sent, {len(accepted)} accepted")
    assert (accepted, problems) == ([], [])
    assert database_state() == before
