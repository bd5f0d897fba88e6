"""The model-parallel parameters of a job: SM_HP_MP_PARAMETERS (or the dict given to init())."""

import json
import os
from dataclasses import dataclass

PARAMETERS_ENV = "SM_HP_MP_PARAMETERS"
PLACEMENT_STRATEGIES = ("cluster", "spread")
PIPELINES = ("interleaved", "simple")
OPTIMIZE = ("memory", "speed")
# SageMaker's default weight of memory (against computation) in auto-partitioning, per `optimize`
MEMORY_WEIGHTS = {"speed": 0.2, "memory": 0.8}


@dataclass(frozen=True)
class MPConfig:
    partitions: int = 1
    microbatches: int = 1
    placement_strategy: str = "cluster"
    ddp: bool = True
    pipeline: str = "interleaved"
    optimize: str = "memory"
    auto_partition: bool = True
    default_partition: int = 0
    memory_weight: float = 0.8


def load_config(config=None, environ=None):
    """The parameters from `config` when given, else from SM_HP_MP_PARAMETERS, else defaults.

    Keys this library does not implement (tensor_parallel_degree, active_microbatches, ...) are
    ignored, so that the parameters the SageMaker SDK sends are accepted as they are.
    """
    if config is None:
        raw = (os.environ if environ is None else environ).get(PARAMETERS_ENV, "")
        config = _parse_json(raw) if raw.strip() else {}
    if not isinstance(config, dict):
        raise TypeError(f"model-parallel parameters must be a dict, got {type(config).__name__}")
    partitions = _partitions(config)
    optimize = _choice(config, "optimize", OPTIMIZE)
    return MPConfig(
        partitions=partitions,
        microbatches=_positive_int(config, "microbatches", 1),
        placement_strategy=_placement_strategy(config),
        ddp=_bool(config, "ddp", True),
        pipeline=_choice(config, "pipeline", PIPELINES),
        optimize=optimize,
        auto_partition=_bool(config, "auto_partition", True),
        default_partition=_default_partition(config, partitions),
        memory_weight=_memory_weight(config, optimize),
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
    return _choice(config, "placement_strategy", PLACEMENT_STRATEGIES)


def _choice(config, key, choices):
    """The value of `key`, one of `choices` (the first is the default)."""
    value = config.get(key, choices[0])
    if value not in choices:
        raise ValueError(f"{key} must be one of {choices}, got {value!r}")
    return value


def _default_partition(config, partitions):
    value = config.get("default_partition", 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < partitions:
        raise ValueError(f"model-parallel parameter 'default_partition' must be a partition index "
                         f"0..{partitions - 1}, got {value!r}")
    return value


def _memory_weight(config, optimize):
    value = config.get("memory_weight", MEMORY_WEIGHTS[optimize])
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"model-parallel parameter 'memory_weight' must be a number in [0.0, 1.0], "
                         f"got {value!r}")
    return float(value)


def _bool(config, key, default):
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"model-parallel parameter {key!r} must be true or false, got {value!r}")
    return value
