"""InvokeEndpoint on a multi-model endpoint (`TargetModel`), for both forwarding paths (the data
plane runs it in a thread, the API's view directly): check the request, pick a container (one
that has the model loaded if any, router.py's `prefer`), make sure the model is loaded there, and
send the request to `POST /models/<model_name>/invoke`.

Loading a model the container lacks (SageMaker's multi-model contract, hosting/multi_model.py):
stage it on the host (downloaded once per deployment), list what the container holds
(`GET /models`), unload the least recently used ones past SAGEPORT_MULTI_MODEL_MAX_LOADED
(`DELETE /models/<name>`, model_cache.py), then `POST /models` {"model_name", "url"}. A 409
(already loaded, by another serving process) is success; a 507 (out of memory) unloads one more
model and loads again, once. Each request's cache hit or miss, its wait for the load and the
container's model count go to CloudWatch (multi_model_metrics.py)."""

import json
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from hosting import multi_model
from hosting.runtime_api import blocking_upstream, contract
from hosting.runtime_api.exchange import Answer, NoAnswer, Refused, TimedOut
from hosting.runtime_api.invocation_metrics import Invocation
from hosting.runtime_api.model_cache import ModelCache
from hosting.runtime_api.multi_model_metrics import ModelLoad, get_model_metrics
from hosting.runtime_api.router import Choice, Router
from hosting.runtime_api.routing import Backend, EndpointRoute
from hosting.runtime_api.tries import Tries
from protocol.context import RequestContext
from storage.s3 import StorageError

TARGET_MODEL_HEADER = contract.REQUEST_HEADERS["TargetModel"]
MAX_LIST_PAGES = 100  # GET /models pages read at most (the contract lets a container paginate)
INSUFFICIENT_STORAGE = 507

_cache = ModelCache()


def is_multi_model(route: EndpointRoute, target_variant: str | None) -> bool:
    """Whether the request goes to multi-model containers (the endpoint's, or the target variant's)."""
    return any(
        backend.multi_model is not None
        for group in route.groups
        if target_variant is None or group.variant_name == target_variant
        for backend in group.backends
    )


def check(route: EndpointRoute, params: dict, endpoint_name: str) -> bool:
    """Refuse TargetModel on a single-model endpoint, and its absence on a multi-model one, as
    SageMaker does; returns whether the request is a multi-model one."""
    multi = is_multi_model(route, params.get("TargetVariant"))
    if multi and "TargetModel" not in params:
        raise contract.ValidationError(
            f"Endpoint {endpoint_name} is a multi-model endpoint: the request needs a TargetModel."
        )
    if not multi and "TargetModel" in params:
        raise contract.ValidationError(
            f"Endpoint {endpoint_name} is not a multi-model endpoint and does not support the "
            "TargetModel header."
        )
    return multi


def forward(
    router: Router, arn: str, ctx: RequestContext, endpoint_name: str, params: dict,
    body: bytes, headers: dict[str, str], note: Callable[[Invocation], None],
) -> tuple[Answer, Choice]:
    """Send the request to a container that has (or now loads) the target model; `note` is given
    the exchange for the endpoint's CloudWatch metrics, whatever its outcome (tries.py)."""
    target_model = params["TargetModel"]
    model_name = multi_model.container_model_name(target_model)
    tries = Tries(router, arn, params.get("TargetVariant"), ctx, endpoint_name)
    while True:
        choice = tries.choose(prefer=_cache.holders(model_name))
        status = 0
        try:
            answer = _invoke_loaded(router, choice, ctx, endpoint_name, target_model, body, headers)
            status = answer.status
            return answer, choice
        except (Refused, NoAnswer, TimedOut) as error:
            tries.failed(choice, error)
        finally:
            note(tries.ended(choice, status))


def _invoke_loaded(router, choice: Choice, ctx, endpoint_name, target_model, body, headers) -> Answer:
    backend = choice.backend
    model_name = multi_model.container_model_name(target_model)
    pool = router.pool(backend)
    path = f"/models/{model_name}/invoke"
    with _cache.in_use(backend.container_name, model_name):
        _ensure_loaded(pool, choice, ctx, endpoint_name, target_model)
        answer = blocking_upstream.post(pool, body, headers, path=path)
        if answer.status == 404:  # unloaded meanwhile by another serving process: load it again, once
            _cache.unloaded(backend.container_name, model_name)
            _ensure_loaded(pool, choice, ctx, endpoint_name, target_model)
            answer = blocking_upstream.post(pool, body, headers, path=path)
    return answer


def _ensure_loaded(pool, choice: Choice, ctx, endpoint_name: str, target_model: str) -> None:
    """Load the model into the container unless it has it (a cache hit)."""
    backend, model_name = choice.backend, multi_model.container_model_name(target_model)
    container = backend.container_name
    metrics = get_model_metrics()
    if _cache.hit(container, model_name):
        metrics.record(ModelLoad(ctx, endpoint_name, choice.variant_name, True, 0.0, _cache.count(container)))
        return
    started = time.perf_counter()
    with _cache.loading_lock(container, model_name):
        if not _cache.hit(container, model_name):  # else another request loaded it meanwhile
            _stage(backend, ctx, target_model)
            _load(pool, container, model_name, target_model, ctx, endpoint_name)
    waited = time.perf_counter() - started
    metrics.record(ModelLoad(ctx, endpoint_name, choice.variant_name, False, waited, _cache.count(container)))


def _stage(backend: Backend, ctx: RequestContext, target_model: str) -> None:
    source = backend.multi_model
    try:
        multi_model.stage(source.account_id, source.prefix_uri, target_model, Path(source.models_dir))
    except multi_model.TargetModelMissing as missing:
        bucket, key = missing.args
        raise contract.ValidationError(
            f"Failed to download model data(bucket: {bucket}, key: {key}). Please ensure that there is "
            "an object located at the URL and that the role passed to CreateModel has permissions to "
            "download the model."
        ) from None
    except multi_model.TargetModelUnusable as error:
        raise contract.ModelError(f"Failed to load model {target_model}: {error}") from None
    except StorageError as error:  # the store is away (transient): worth a retry by the client
        raise contract.ServiceUnavailable(f"Could not download model {target_model} now: {error}") from None


def _load(pool, container: str, model_name: str, target_model: str, ctx, endpoint_name: str) -> None:
    """Make room, then `POST /models`; a 507 makes room for one more and loads again, once."""
    headers = {
        "Content-Type": "application/json", "Accept": "application/json", TARGET_MODEL_HEADER: target_model
    }
    request = json.dumps({"model_name": model_name, "url": multi_model.model_url(model_name)}).encode()
    bound = settings.SAGEPORT_MULTI_MODEL_MAX_LOADED
    for room in (0, 1):
        held = _listed(pool)
        for victim in _cache.victims(container, held, bound - room):
            _unload(pool, container, victim)
        answer = blocking_upstream.post(pool, request, headers, path="/models")
        if answer.status in (200, 201, 409):  # 409: loaded already (by another serving process)
            _cache.loaded(container, model_name)
            return
        if answer.status != INSUFFICIENT_STORAGE or not held:
            break
    raise _load_failed(ctx, endpoint_name, target_model, answer)


def _listed(pool) -> list[str]:
    """The models the container holds (`GET /models`, following `nextPageToken`)."""
    names: list[str] = []
    token = None
    for _ in range(MAX_LIST_PAGES):
        path = "/models" if token is None else f"/models?next_page_token={token}"
        answer = blocking_upstream.post(pool, b"", {"Accept": "application/json"}, method="GET", path=path)
        if answer.status != 200:
            return names
        try:
            page = json.loads(answer.body or b"{}")
        except ValueError:  # not the contract's list: what was read so far is all that is known
            return names
        if not isinstance(page, dict):
            return names
        names += [entry["modelName"] for entry in page.get("models", ()) if "modelName" in entry]
        token = page.get("nextPageToken")
        if not token:
            break
    return names


def _unload(pool, container: str, model_name: str) -> None:
    blocking_upstream.post(pool, b"", {}, method="DELETE", path=f"/models/{model_name}")
    _cache.unloaded(container, model_name)  # a 404 too: it is not there either way


def _load_failed(ctx, endpoint_name: str, target_model: str, answer: Answer) -> contract.ModelError:
    error = contract.model_error(ctx, endpoint_name, answer.status, answer.body)
    return contract.ModelError(f"Failed to load model {target_model}: {error.message}", extra=error.extra)
