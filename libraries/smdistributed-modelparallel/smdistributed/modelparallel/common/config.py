"""The model-parallel parameters of a job: SM_HP_MP_PARAMETERS (or the dict given to init())."""

import json
import os
from dataclasses import dataclass

PARAMETERS_ENV = "SM_HP_MP_PARAMETERS"
PLACEMENT_STRATEGIES = ("cluster", "spread")


@dataclass(frozen=True)
class MPConfig:
    partitions: int = 1
    microbatches: int = 1
    placement_strategy: str = "cluster"
    ddp: bool = True


def load_config(config=None, environ=None):
    """The parameters from `config` when given, else from SM_HP_MP_PARAMETERS, else defaults.

    Keys this library does not implement (pipeline, optimize, auto_partition, ...) are ignored,
    so that the parameters the SageMaker SDK sends are accepted as they are.
    """
    if config is None:
        raw = (os.environ if environ is None else environ).get(PARAMETERS_ENV, "")
        config = _parse_json(raw) if raw.strip() else {}
    if not isinstance(config, dict):
        raise TypeError(f"model-parallel parameters must be a dict, got {type(config).__name__}")
    return MPConfig(
        partitions=_partitions(config),
        microbatches=_positive_int(config, "microbatches", 1),
        placement_strategy=_placement_strategy(config),
        ddp=_bool(config, "ddp", True),
    )


def _parse_json(raw):
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{PARAMETERS_ENV} is not valid JSON: {exc}") from None


def _partitions(config):
    partitions = _positive_int(config, "partitions", None)
    degree = _positive_int(config, "pipeline_parallel_degree", None)
    if partitions is not None and degree is not None and partitions != degree:
        raise ValueError(
            f"partitions ({partitions}) and pipeline_parallel_degree ({degree}) disagree; give one of them"
        )
    return partitions or degree or 1


def _positive_int(config, key, default):
    value = config.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"model-parallel parameter {key!r} must be a positive integer, got {value!r}")
    return value


def _placement_strategy(config):
    value = config.get("placement_strategy", "cluster")
    if value not in PLACEMENT_STRATEGIES:
        raise ValueError(f"placement_strategy must be one of {PLACEMENT_STRATEGIES}, got {value!r}")
    return value


def _bool(config, key, default):
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"model-parallel parameter {key!r} must be true or false, got {value!r}")
    return value
