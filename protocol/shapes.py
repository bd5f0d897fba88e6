"""botocore's service models, loaded once per process: they are the schema of every request."""

from functools import cache, lru_cache

import botocore.session
from botocore.model import OperationModel, ServiceModel


@cache
def service_model(botocore_name: str) -> ServiceModel:
    # One botocore session for the process: loading a model parses a multi-megabyte JSON file.
    return _session().get_service_model(botocore_name)


def operation_model(botocore_name: str, operation: str) -> OperationModel | None:
    """The operation's model, or None when the service has no such operation."""
    model = service_model(botocore_name)
    if operation not in model.operation_names:
        return None
    return model.operation_model(operation)


@cache
def last_path_segments(botocore_name: str) -> tuple[str, ...]:
    """The last segment of every operation's path ("/invocations", ...): what tells a REST
    service's requests apart by their path alone."""
    model = service_model(botocore_name)
    uris = (model.operation_model(operation).http["requestUri"] for operation in model.operation_names)
    return tuple(sorted({"/" + uri.split("?")[0].rsplit("/", 1)[-1] for uri in uris}))


@lru_cache(maxsize=1)
def _session() -> botocore.session.Session:
    return botocore.session.get_session()
