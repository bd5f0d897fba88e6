"""InvokeEndpoint on a multi-model endpoint (`TargetModel`), on the serving process's event loop
(dataplane.py): check the request, pick a container (one that has the model loaded if any,
router.py's `prefer`), make sure the model is loaded there, and send the request to
`POST /models/<model_name>/invoke`, every exchange over the data plane's own client (upstream.py).

Loading a model the container lacks (SageMaker's multi-model contract, hosting/multi_model.py):
stage it on the host (downloaded once per deployment), list what the container holds
(`GET /models`), unload the least recently used ones past SAGEPORT_MULTI_MODEL_MAX_LOADED
(`DELETE /models/<name>`, model_cache.py), then `POST /models` {"model_name", "url"}. A 409
(already loaded, by another serving process) is success; a 507 (out of memory) unloads one more
model and loads again, once. Each request's cache hit or miss, its wait for the load and the
container's model count go to CloudWatch (multi_model_metrics.py)."""

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from django.conf import settings

from hosting import multi_model
from hosting.runtime_api import contract
from hosting.runtime_api.exchange import Answer, NoAnswer, Refused, TimedOut
from hosting.runtime_api.invocation_metrics import Invocation
from hosting.runtime_api.model_cache import ModelCache
from hosting.runtime_api.multi_model_metrics import ModelLoad, get_model_metrics
from hosting.runtime_api.router import Choice, Router
from hosting.runtime_api.routing import Backend, EndpointRoute
from hosting.runtime_api.tries import Tries
from hosting.runtime_api.upstream import Upstream
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


async def forward(
    router: Router, upstream: Upstream, arn: str, ctx: RequestContext, endpoint_name: str,
    params: dict, body: bytes, headers: dict[str, str], note: Callable[[Invocation], None],
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
            container = _Container(upstream, choice, ctx, endpoint_name)
            answer = await container.invoke(target_model, body, headers)
            status = answer.status
            return answer, choice
        except (Refused, NoAnswer, TimedOut) as error:
            tries.failed(choice, error)
        finally:
            note(tries.ended(choice, status))


class _Container:
    """One multi-model container, as one request sees it: its model management and invocations."""

    def __init__(self, upstream: Upstream, choice: Choice, ctx: RequestContext, endpoint_name: str):
        self.upstream, self.choice, self.ctx, self.endpoint_name = upstream, choice, ctx, endpoint_name
        self.name = choice.backend.container_name

    async def invoke(self, target_model: str, body: bytes, headers: dict[str, str]) -> Answer:
        model_name = multi_model.container_model_name(target_model)
        path = f"/models/{model_name}/invoke"
        with _cache.in_use(self.name, model_name):
            await self._ensure_loaded(target_model)
            answer = await self._exchange(body, headers, path=path)
            if answer.status == 404:  # unloaded meanwhile by another serving process: load it again, once
                _cache.unloaded(self.name, model_name)
                await self._ensure_loaded(target_model)
                answer = await self._exchange(body, headers, path=path)
        return answer

    async def _exchange(
        self, body: bytes, headers: dict[str, str], method: str = "POST", path: str = "/invocations"
    ) -> Answer:
        backend = self.choice.backend
        return await self.upstream.post(backend.address, backend.port, body, headers, method, path)

    async def _ensure_loaded(self, target_model: str) -> None:
        """Load the model into the container unless it has it (a cache hit)."""
        model_name = multi_model.container_model_name(target_model)
        if _cache.hit(self.name, model_name):
            self._note_load(True, 0.0)
            return
        started = time.perf_counter()
        async with _cache.loading(self.name, model_name):
            if not _cache.hit(self.name, model_name):  # else another request loaded it meanwhile
                # The download is blocking I/O (S3, the disk): off the loop.
                await asyncio.to_thread(_stage, self.choice.backend, target_model)
                await self._load(model_name, target_model)
        self._note_load(False, time.perf_counter() - started)

    def _note_load(self, hit: bool, waited: float) -> None:
        variant, count = self.choice.variant_name, _cache.count(self.name)
        get_model_metrics().record(ModelLoad(self.ctx, self.endpoint_name, variant, hit, waited, count))

    async def _load(self, model_name: str, target_model: str) -> None:
        """Make room, then `POST /models`; a 507 makes room for one more and loads again, once."""
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   TARGET_MODEL_HEADER: target_model}
        request = json.dumps({"model_name": model_name, "url": multi_model.model_url(model_name)}).encode()
        bound = settings.SAGEPORT_MULTI_MODEL_MAX_LOADED
        for room in (0, 1):
            held = await self._listed()
            for victim in _cache.victims(self.name, held, bound - room):
                await self._unload(victim)
            answer = await self._exchange(request, headers, path="/models")
            if answer.status in (200, 201, 409):  # 409: loaded already (by another serving process)
                _cache.loaded(self.name, model_name)
                return
            if answer.status != INSUFFICIENT_STORAGE or not held:
                break
        raise _load_failed(self.ctx, self.endpoint_name, target_model, answer)

    async def _listed(self) -> list[str]:
        """The models the container holds (`GET /models`, following `nextPageToken`)."""
        names: list[str] = []
        token = None
        for _ in range(MAX_LIST_PAGES):
            path = "/models" if token is None else f"/models?next_page_token={quote(token, safe='')}"
            answer = await self._exchange(b"", {"Accept": "application/json"}, method="GET", path=path)
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
            if not token or not isinstance(token, str):
                break
        return names

    async def _unload(self, model_name: str) -> None:
        await self._exchange(b"", {}, method="DELETE", path=f"/models/{quote(model_name, safe='')}")
        _cache.unloaded(self.name, model_name)  # a 404 too: it is not there either way


def _stage(backend: Backend, target_model: str) -> None:
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


def _load_failed(ctx, endpoint_name: str, target_model: str, answer: Answer) -> contract.ModelError:
    error = contract.model_error(ctx, endpoint_name, answer.status, answer.body)
    return contract.ModelError(f"Failed to load model {target_model}: {error.message}", extra=error.extra)
