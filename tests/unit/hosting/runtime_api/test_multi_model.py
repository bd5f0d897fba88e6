"""Multi-model endpoints' decisions: which requests are refused, which models are unloaded when a
container is full (LRU), where a model's requests go, and the load/unload exchanges with the
example multi-model container (examples/multi_model/serve.py, run in this process)."""

import asyncio
import importlib.util
import json
import threading
from pathlib import Path

import pytest

from hosting import multi_model as hosting_multi_model
from hosting.runtime_api import contract, multi_model, multi_model_metrics
from hosting.runtime_api.model_cache import ModelCache
from hosting.runtime_api.router import Choice, Router
from hosting.runtime_api.routing import Backend, EndpointRoute, MultiModelSource, RouteGroup
from hosting.runtime_api.upstream import Upstream
from protocol.context import RequestContext

ARN = "arn:aws:sagemaker:us-east-1:111111111111:endpoint/mme"
CTX = RequestContext(account_id="111111111111", region="us-east-1", access_key_id="AKIDEXAMPLE")
SOURCE = MultiModelSource("111111111111", "s3://bucket/models/", "/unused")


def route(*backends: Backend, variant: str = "AllTraffic") -> EndpointRoute:
    groups = (RouteGroup(variant, 1.0, backends),)
    return EndpointRoute("mme", "111111111111", "us-east-1", "InService", groups)


# --- the LRU -----------------------------------------------------------------------------------


def test_the_least_recently_used_models_are_unloaded_first_when_the_container_is_full():
    cache = ModelCache()
    for name in ("a", "b", "c"):
        cache.loaded("c1", name)
    assert cache.hit("c1", "a")  # a is now the most recent: b, c, a

    assert cache.victims("c1", ["a", "b", "c"], bound=3) == ["b"]
    assert cache.victims("c1", ["a", "b", "c"], bound=2) == ["b", "c"]
    assert cache.victims("c1", ["a", "b"], bound=3) == []


def test_a_model_another_process_loaded_is_unloaded_before_the_ones_this_process_used():
    cache = ModelCache()
    cache.loaded("c1", "mine")

    assert cache.victims("c1", ["mine", "theirs"], bound=2) == ["theirs"]


def test_an_unloaded_model_is_no_longer_a_hit_nor_held():
    cache = ModelCache()
    cache.loaded("c1", "a")
    cache.loaded("c2", "a")
    cache.unloaded("c1", "a")

    assert not cache.hit("c1", "a")
    assert cache.holders("a") == frozenset({"c2"})
    assert cache.count("c1") == 0


# --- refusals and routing -------------------------------------------------------------------------


def test_target_model_is_refused_on_a_single_model_endpoint_and_required_on_a_multi_model_one():
    single = route(Backend("c1", "127.0.0.1", 1))
    multi = route(Backend("c1", "127.0.0.1", 1, SOURCE))

    with pytest.raises(contract.ValidationError, match="not a multi-model endpoint"):
        multi_model.check(single, {"TargetModel": "a.tar.gz"}, "mme")
    with pytest.raises(contract.ValidationError, match="needs a TargetModel"):
        multi_model.check(multi, {}, "mme")
    assert multi_model.check(multi, {"TargetModel": "a.tar.gz"}, "mme")
    assert not multi_model.check(single, {}, "mme")


@pytest.mark.django_db  # the router closes old connections on each load
def test_a_model_s_requests_go_to_a_container_that_has_it_loaded(monkeypatch):
    monkeypatch.setattr(Router, "_refresh_forever", lambda self: None)
    router = Router()
    table = {ARN: route(Backend("c1", "127.0.0.1", 1, SOURCE), Backend("c2", "127.0.0.1", 2, SOURCE))}
    monkeypatch.setattr("hosting.runtime_api.routing.load_table", lambda: table)
    router.start()
    busy = router.choose(ARN, None, avoid=set(), prefer=frozenset({"c2"}))  # c2 now has one in flight

    again = router.choose(ARN, None, avoid=set(), prefer=frozenset({"c2"}))
    elsewhere = router.choose(ARN, None, avoid=set())

    assert (busy.backend.container_name, again.backend.container_name) == ("c2", "c2")
    assert elsewhere.backend.container_name == "c1"  # no preference: the least busy


# --- loading into the example container -------------------------------------------------------


@pytest.fixture
def container():
    """The example multi-model server on a free port, in this process."""
    path = Path(__file__).parents[4] / "examples" / "multi_model" / "serve.py"
    spec = importlib.util.spec_from_file_location("example_multi_model_serve", path)
    serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve)
    server = serve.ThreadingHTTPServer(("127.0.0.1", 0), serve.Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield Backend("example", "127.0.0.1", server.server_address[1], SOURCE)
    server.shutdown()
    server.server_close()


class OneContainer:
    """The router's part that multi_model.forward uses, with one container."""

    def __init__(self, backend: Backend):
        self.backend = backend

    def choose(self, arn, target, avoid, prefer=frozenset()):
        return Choice("AllTraffic", self.backend)

    def release(self, choice):
        pass


@pytest.fixture
def staged(tmp_path, monkeypatch, settings):
    """Models 'a', 'b', 'c' (coefficients 1, 2, 3) staged under tmp_path; 'missing' is not in S3."""
    settings.SAGEPORT_MULTI_MODEL_MAX_LOADED = 2

    def stage(account_id, prefix_uri, target_model, models_dir):
        if target_model == "missing.tar.gz":
            raise hosting_multi_model.TargetModelMissing("bucket", "models/missing.tar.gz")
        model_dir = tmp_path / hosting_multi_model.container_model_name(target_model) / "model"
        model_dir.mkdir(parents=True, exist_ok=True)
        if target_model == "broken.tar.gz":
            return model_dir.parent  # staged without its model.json
        coefficient = "abc".index(target_model[0]) + 1
        (model_dir / "model.json").write_text(json.dumps({"coefficient": coefficient}))
        return model_dir.parent

    monkeypatch.setattr(hosting_multi_model, "stage", stage)
    monkeypatch.setattr(hosting_multi_model, "model_url", lambda name: str(tmp_path / name / "model"))
    monkeypatch.setattr(multi_model, "_cache", ModelCache())
    recorded = multi_model_metrics.ModelMetrics(60, background=False)
    monkeypatch.setattr(multi_model_metrics, "_metrics", recorded)
    return recorded


async def forward(upstream: Upstream, router, target_model: str, body: bytes):
    headers = {"Content-Type": "application/json", multi_model.TARGET_MODEL_HEADER: target_model}
    params = {"TargetModel": target_model}
    answer, _ = await multi_model.forward(
        router, upstream, ARN, CTX, "mme", params, body, headers, lambda invocation: None
    )
    assert answer.status == 200, answer.body
    return json.loads(answer.body)


async def at_once(router, *target_models: str, value: float = 10) -> list[dict]:
    """The requests sent together, on one event loop as the data plane sends them."""
    upstream = Upstream(5.0)
    try:
        body = json.dumps(value).encode()
        return await asyncio.gather(*(forward(upstream, router, model, body) for model in target_models))
    finally:
        await upstream.close()


def invoke(router, target_model: str, value: float = 10) -> dict:
    return asyncio.run(at_once(router, target_model, value=value))[0]


def test_each_model_answers_with_its_own_data_and_the_least_recently_used_one_is_unloaded(container, staged):
    router = OneContainer(container)

    assert invoke(router, "a.tar.gz")["prediction"] == 10
    assert invoke(router, "b.tar.gz")["prediction"] == 20
    assert invoke(router, "a.tar.gz") == {"model": "a.tar.gz", "prediction": 10, "loads": 1}  # a hit
    assert invoke(router, "c.tar.gz")["prediction"] == 30  # full (2): b, used longest ago, goes

    assert invoke(router, "a.tar.gz")["loads"] == 1  # kept
    assert invoke(router, "b.tar.gz") == {"model": "b.tar.gz", "prediction": 20, "loads": 2}  # reloaded


def test_cache_hits_and_misses_are_published_as_sagemaker_does(container, staged, monkeypatch):
    written = {}
    monkeypatch.setattr(multi_model_metrics, "add_statistic_sets", written.update)
    router = OneContainer(container)
    invoke(router, "a.tar.gz")
    invoke(router, "a.tar.gz")

    staged.flush()

    by_metric = {key.metric_name: value for key, value in written.items()}
    assert (by_metric["ModelCacheHit"].count, by_metric["ModelCacheHit"].total) == (2, 1)  # rate 0.5
    assert by_metric["ModelLoadingWaitTime"].count == 1  # the miss only
    assert by_metric["ModelLoadedCount"].maximum == 1


def test_a_target_model_missing_from_s3_is_sagemaker_s_validation_error(container, staged):
    with pytest.raises(contract.ValidationError, match=r"Failed to download model data\(bucket: bucket"):
        invoke(OneContainer(container), "missing.tar.gz")


def test_a_model_the_container_cannot_load_is_a_model_error(container, staged):
    router = OneContainer(container)
    invoke(router, "a.tar.gz")

    with pytest.raises(contract.ModelError, match="Failed to load model broken.tar.gz"):
        invoke(router, "broken.tar.gz")


def test_requests_for_a_model_not_loaded_yet_wait_for_one_load(container, staged):
    answers = asyncio.run(at_once(OneContainer(container), *["a.tar.gz"] * 4))

    assert [answer["loads"] for answer in answers] == [1, 1, 1, 1]
    assert multi_model._cache._loading == {}  # no lock kept per model once loaded


def test_a_request_cancelled_while_waiting_for_a_load_leaves_no_lock_behind():
    cache = ModelCache()

    async def cancelled_waiter():
        async with cache.loading("c1", "a"):
            waiter = asyncio.create_task(wait_for_the_load())
            await asyncio.sleep(0)  # the waiter queues on the lock
            waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)

    async def wait_for_the_load():
        async with cache.loading("c1", "a"):
            pass

    asyncio.run(cancelled_waiter())
    assert cache._loading == {}


def test_a_model_a_request_is_about_to_invoke_is_not_unloaded():
    cache = ModelCache()
    for name in ("a", "b"):
        cache.loaded("c1", name)

    with cache.in_use("c1", "a"):
        assert cache.victims("c1", ["a", "b"], bound=2) == ["b"]
        assert cache.victims("c1", ["a", "b"], bound=1) == ["b"]  # over the bound for a while
    assert cache.victims("c1", ["a", "b"], bound=1) == ["a", "b"]
