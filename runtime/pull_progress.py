"""How far an image pull has come, from the engine's progress messages, in words for a status
message: "2/5 layers, 41.3 of 120.8 MB".

The engine streams one JSON message per event and layer (`{"id": <layer>, "status": "Downloading",
"progressDetail": {"current": n, "total": m}}`, "Download complete", "Pull complete", "Already
exists", ...) plus messages about the image itself, which have no layer id or no layer status."""

from collections.abc import Callable
from dataclasses import dataclass, field

# Told a summary of a pull under way, at most once per SAGEPORT_PULL_PROGRESS_SECONDS.
PullReport = Callable[[str], None]

_LAYER_STATUSES = frozenset({
    "Pulling fs layer", "Waiting", "Downloading", "Verifying Checksum", "Download complete",
    "Extracting", "Pull complete", "Already exists",
})
_DOWNLOADED = frozenset({"Download complete", "Extracting", "Pull complete"})
_DONE = frozenset({"Pull complete", "Already exists"})
_MB = 1_000_000


@dataclass
class _Layer:
    done: bool = False
    current: int = 0  # bytes downloaded
    total: int | None = None  # bytes to download; None until the engine says


@dataclass
class PullProgress:
    layers: dict[str, _Layer] = field(default_factory=dict)

    def add(self, message: dict) -> None:
        status, layer_id = message.get("status"), message.get("id")
        if status not in _LAYER_STATUSES or not layer_id:
            return
        layer = self.layers.setdefault(layer_id, _Layer())
        detail = message.get("progressDetail") or {}
        if status == "Downloading":
            layer.current = int(detail.get("current") or layer.current)
            layer.total = int(detail.get("total") or 0) or layer.total
        elif status in _DOWNLOADED and layer.total is not None:
            layer.current = layer.total
        layer.done = layer.done or status in _DONE

    def summary(self) -> str:
        done = sum(layer.done for layer in self.layers.values())
        current = sum(layer.current for layer in self.layers.values()) / _MB
        totals = [layer.total for layer in self.layers.values() if layer.total is not None]
        downloaded = f"{current:.1f} of {sum(totals) / _MB:.1f} MB" if totals else f"{current:.1f} MB"
        return f"{done}/{len(self.layers)} layers, {downloaded}"
