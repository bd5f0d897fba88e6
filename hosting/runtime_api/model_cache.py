"""Which models each multi-model container has loaded, as this serving process knows it, in
least-recently-used order: the routing preference (send a model's requests where it is loaded)
and the eviction choice (unload the least recently used model when the container is full).

The bound is SAGEPORT_MULTI_MODEL_MAX_LOADED models per container. The container's own list
(`GET /models`) is the truth for how many it holds, since other serving processes load models
too: a model this process does not know of counts as used longest ago. Pure bookkeeping, no I/O
(hosting/runtime_api/multi_model.py does the exchanges)."""

import asyncio
import contextlib
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable


class ModelCache:
    def __init__(self):
        self._lock = threading.Lock()
        self._loaded: dict[str, OrderedDict[str, None]] = {}  # container -> models, oldest first
        # (loop, container, model) -> its lock and the requests holding or waiting for it
        self._loading: dict[tuple[asyncio.AbstractEventLoop, str, str], tuple[asyncio.Lock, int]] = {}
        self._in_use: Counter[tuple[str, str]] = Counter()  # requests between load and answer

    def holders(self, model_name: str) -> frozenset[str]:
        """The containers that have the model loaded."""
        with self._lock:
            return frozenset(name for name, models in self._loaded.items() if model_name in models)

    def hit(self, container: str, model_name: str) -> bool:
        """Whether the container has the model loaded; if so it becomes the most recently used."""
        with self._lock:
            models = self._loaded.get(container)
            if models is None or model_name not in models:
                return False
            models.move_to_end(model_name)
            return True

    def loaded(self, container: str, model_name: str) -> None:
        with self._lock:
            self._loaded.setdefault(container, OrderedDict())[model_name] = None
            self._loaded[container].move_to_end(model_name)

    def unloaded(self, container: str, model_name: str) -> None:
        with self._lock:
            self._loaded.get(container, {}).pop(model_name, None)

    def count(self, container: str) -> int:
        with self._lock:
            return len(self._loaded.get(container, ()))

    def victims(self, container: str, in_container: Iterable[str], bound: int) -> list[str]:
        """The models to unload so that one more fits under `bound`: those the container holds,
        least recently used first (ones this process never used before any it did), never one a
        request of this process is about to invoke (the container holds more for a while then)."""
        in_container = list(dict.fromkeys(in_container))
        excess = len(in_container) + 1 - bound
        if excess <= 0:
            return []
        with self._lock:
            order = list(self._loaded.get(container, ()))
            idle = [name for name in in_container if not self._in_use[(container, name)]]
        rank = {name: index for index, name in enumerate(order)}
        return sorted(idle, key=lambda name: rank.get(name, -1))[:excess]

    @contextlib.contextmanager
    def in_use(self, container: str, model_name: str):
        """While a request loads and invokes the model: it is not chosen for unloading."""
        key = (container, model_name)
        with self._lock:
            self._in_use[key] += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_use[key] -= 1
                if not self._in_use[key]:
                    del self._in_use[key]

    @contextlib.asynccontextmanager
    async def loading(self, container: str, model_name: str):
        """Held while the model is loaded into the container: concurrent requests for it on the
        running event loop wait for one load instead of each loading it. Requests on other loops
        (the API port runs one per request) load it themselves: the container answers the second
        load 409, which is success. A lock lives only while requests hold or wait for it: one
        kept per model and container ever loaded would grow without bound."""
        key = (asyncio.get_running_loop(), container, model_name)
        with self._lock:
            lock, users = self._loading.get(key, (None, 0))
            lock = lock or asyncio.Lock()
            self._loading[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            with self._lock:
                users = self._loading[key][1] - 1
                if users:
                    self._loading[key] = (lock, users)
                else:
                    del self._loading[key]
