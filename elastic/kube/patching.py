"""JSON merge patches (RFC 7386, the kubernetes client's patch of a custom object) and the
fields one changes.

`merge_patch(target, patch)` is the RFC's algorithm: an object merges key by key, `null` removes
a key, anything else replaces. `changed_fields(before, after)` names each leaf that differs the
way Kubernetes names fields (`spec.runPolicy.suspend`, `spec.replicaSpecs`), for the 422 that
refuses a change the API does not allow."""

from typing import Any

# What a client may send back unchanged or changed without meaning a change to the job: the
# server-set metadata (a patch built from a read object carries it) and the object's identity.
IGNORED_ON_PATCH = frozenset({
    "metadata.uid", "metadata.resourceVersion", "metadata.generation", "metadata.creationTimestamp",
    "metadata.deletionTimestamp", "metadata.deletionGracePeriodSeconds", "metadata.managedFields",
})


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def changed_fields(before: Any, after: Any, ignored: frozenset = frozenset(), path: str = "") -> list[str]:
    """The paths where `after` differs from `before` (objects compared key by key; anything else,
    arrays included, as a whole)."""
    if path in ignored:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        changed = []
        for key in sorted(set(before) | set(after)):
            inner = f"{path}.{key}" if path else key
            changed += changed_fields(before.get(key), after.get(key), ignored, inner)
        return changed
    return [] if before == after else [path or "<body>"]
