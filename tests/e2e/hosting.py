"""Helpers for the hosting tests: endpoints that clean up after themselves, waits, and a bounded
load loop that counts failed invocations. The fixtures are in hosting_fixtures.py."""

import json
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from botocore.config import Config
from botocore.exceptions import ClientError

INSTANCE_TYPE = "ml.m5.large"
# No retries: a request the platform fails must show as a failure, not be retried away.
NO_RETRIES = Config(retries={"max_attempts": 1, "mode": "standard"}, read_timeout=30)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@dataclass
class Hosting:
    """Creates models, configs and endpoints; deletes the endpoints (and waits) at teardown."""

    sagemaker: object
    endpoints: list[str] = field(default_factory=list)

    def model(self, image: str, environment: dict | None = None, **container) -> str:
        name = unique("model")
        definition = {"Image": image, "Environment": environment or {}, **container}
        self.sagemaker.create_model(ModelName=name, PrimaryContainer=definition)
        return name

    def config(self, *variants: tuple[str, str, int, float]) -> str:
        """An endpoint config from (variant name, model name, instance count, weight) tuples."""
        name = unique("config")
        self.sagemaker.create_endpoint_config(
            EndpointConfigName=name,
            ProductionVariants=[
                {
                    "VariantName": variant,
                    "ModelName": model,
                    "InitialInstanceCount": count,
                    "InstanceType": INSTANCE_TYPE,
                    "InitialVariantWeight": weight,
                }
                for variant, model, count, weight in variants
            ],
        )
        return name

    def endpoint(self, config_name: str, **kwargs) -> str:
        name = unique("endpoint")
        self.sagemaker.create_endpoint(EndpointName=name, EndpointConfigName=config_name, **kwargs)
        self.endpoints.append(name)
        return name

    def probe_endpoint(self, image: str, count: int = 1, tag: str = "blue", **environment) -> str:
        """An InService endpoint of one variant `AllTraffic` running the probe."""
        model = self.model(image, {"PROBE_TAG": tag, **environment})
        name = self.endpoint(self.config(("AllTraffic", model, count, 1.0)))
        wait_for_endpoint(self.sagemaker, name)
        return name

    def delete_all(self) -> None:
        for name in self.endpoints:
            try:
                wait_for_endpoint(self.sagemaker, name, statuses={"InService", "Failed"})
                self.sagemaker.delete_endpoint(EndpointName=name)
                self.sagemaker.get_waiter("endpoint_deleted").wait(
                    EndpointName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
                )
            except ClientError as error:
                if "Could not find endpoint" not in str(error):
                    raise


def wait_for_endpoint(sagemaker, name: str, statuses=frozenset({"InService"}), timeout: float = 90.0) -> dict:
    """Poll DescribeEndpoint (bounded) until the endpoint is in one of `statuses`; Failed counts as
    reached only when asked for."""
    deadline = time.monotonic() + timeout
    while True:
        endpoint = sagemaker.describe_endpoint(EndpointName=name)
        if endpoint["EndpointStatus"] in statuses:
            return endpoint
        if endpoint["EndpointStatus"] == "Failed" or time.monotonic() > deadline:
            raise AssertionError(f"{name} is {endpoint['EndpointStatus']}: {endpoint.get('FailureReason')}")
        time.sleep(0.3)


def wait_until(condition, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.3)


def invoke_json(runtime, name: str, command: dict | None = None, **kwargs) -> dict:
    response = runtime.invoke_endpoint(
        EndpointName=name, Body=json.dumps(command or {}), ContentType="application/json", **kwargs
    )
    return {**json.loads(response["Body"].read()), "variant": response["InvokedProductionVariant"]}


class Load:
    """Invocations from a few threads until stopped (bounded in count and time); counts the
    answers by probe tag and keeps every failure."""

    MAX_REQUESTS = 5000
    MAX_SECONDS = 120.0

    def __init__(self, stack, endpoint_name: str, threads: int = 3, interval: float = 0.0, ask=None):
        """`interval`: seconds between the starts of one thread's requests (0: back to back).
        `ask(client, endpoint_name)`: one request, the tag its answer counts under (default: an
        InvokeEndpoint of the probe image, its answer's "tag")."""
        self._ask = ask or (lambda client, name: invoke_json(client, name)["tag"])
        self._clients = [stack.client("sagemaker-runtime", config=NO_RETRIES) for _ in range(threads)]
        self._name = endpoint_name
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.tags: Counter[str] = Counter()
        self.failures: list[str] = []
        self.failed_at: list[float] = []  # time.monotonic() of each failure, in order
        self._interval = interval
        self._threads = [
            threading.Thread(target=self._run, args=(client,), daemon=True) for client in self._clients
        ]

    def __enter__(self):
        self._started = time.monotonic()
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    @property
    def count(self) -> int:
        with self._lock:
            return sum(self.tags.values()) + len(self.failures)

    def _run(self, client) -> None:
        next_start = time.monotonic()
        while not self._stop.is_set() and self.count < self.MAX_REQUESTS:
            if time.monotonic() - self._started > self.MAX_SECONDS:
                return
            try:
                tag = self._ask(client, self._name)
            except Exception as error:  # every failure counts, whatever its kind
                with self._lock:
                    self.failures.append(repr(error))
                    self.failed_at.append(time.monotonic())
            else:
                with self._lock:
                    self.tags[tag] += 1
            next_start += self._interval
            self._stop.wait(max(0.0, next_start - time.monotonic()))
