"""The Hyperband strategy (HyperbandStrategyConfig): training jobs report the objective metric once
per resource unit (an epoch), and the under-performing are stopped early.

SageMaker's terms, as its API reference gives them:
- MaxResource: the most resource units a training job gets; one that reaches it is stopped. When
  not given it is read from the static hyperparameters `epochs`, `numepochs`, `n-epochs`,
  `n_epochs` or `num_epochs`, else the request is refused. At most 20,000.
- MinResource: no training job is stopped by Hyperband before reporting that many.
- every value of the objective metric a training job prints is one resource unit: its k-th value
  is its result after k units.

The decisions are Optuna's HyperbandPruner's (brackets of successive halving, reduction factor 3,
the Hyperband paper's and Optuna's default). Nothing is kept between looks: each look replays
every value the training jobs reported, in the order they reported them, into a new in-memory
study, so a decision follows from the metric rows alone and a worker restart changes none. A
training job judged at some value is judged on the values it had then, so a later look agrees
with an earlier one. The hyperparameters of each training job are drawn at random, as
Hyperband's are (tuning/strategies.py)."""
from dataclasses import dataclass

import optuna
from optuna.trial import TrialState, create_trial

EPOCH_HYPERPARAMETERS = ("epochs", "numepochs", "n-epochs", "n_epochs", "num_epochs")
LARGEST_MAX_RESOURCE = 20_000
DEFAULT_MIN_RESOURCE = 1
REDUCTION_FACTOR = 3

optuna.logging.set_verbosity(optuna.logging.WARNING)


@dataclass(frozen=True)
class Resources:
    minimum: int
    maximum: int


def problems(config: dict, static: dict[str, str]) -> list[str]:
    """What is wrong with a Hyperband search's configuration (empty when it can run)."""
    if config.get("TrainingJobEarlyStoppingType", "Off") != "Off":
        return ["TrainingJobEarlyStoppingType must be Off with the Hyperband strategy: Hyperband stops "
                "training jobs early by itself."]
    given = config.get("StrategyConfig", {}).get("HyperbandStrategyConfig", {})
    maximum = given.get("MaxResource", _inferred_max_resource(static))
    if maximum is None:
        return ["HyperbandStrategyConfig.MaxResource is required when no static hyperparameter gives the "
                f"number of epochs ({', '.join(EPOCH_HYPERPARAMETERS)})."]
    if maximum > LARGEST_MAX_RESOURCE:
        return [f"HyperbandStrategyConfig.MaxResource must be at most {LARGEST_MAX_RESOURCE}; "
                f"it is {maximum}."]
    minimum = given.get("MinResource", DEFAULT_MIN_RESOURCE)
    if minimum > maximum:
        return [f"HyperbandStrategyConfig.MinResource ({minimum}) must not be greater than MaxResource "
                f"({maximum})."]
    return []


def _inferred_max_resource(static: dict[str, str]) -> int | None:
    for name in EPOCH_HYPERPARAMETERS:
        if name in static:
            try:
                return int(static[name])
            except ValueError:
                return None
    return None


def resources(config: dict, static: dict[str, str]) -> Resources:
    """The resources of a search whose configuration has no problems."""
    given = config.get("StrategyConfig", {}).get("HyperbandStrategyConfig", {})
    return Resources(
        minimum=given.get("MinResource", DEFAULT_MIN_RESOURCE),
        maximum=given.get("MaxResource", _inferred_max_resource(static)),
    )


def stopped_early(
    limits: Resources, maximize: bool, study_name: str, reports: list[list[tuple[int, float]]]
) -> set[int]:
    """The training jobs Hyperband stops: `reports[i]` holds training job i+1's objective values
    (timestamp in ms, value), oldest first; the answer is the indexes of those judged
    under-performing at one of their values. `study_name` places the training jobs in brackets
    (Optuna hashes it with the job's number): the tuning job's name, the same at every look."""
    pruner = optuna.pruners.HyperbandPruner(
        min_resource=limits.minimum, max_resource=limits.maximum, reduction_factor=REDUCTION_FACTOR
    )
    study = optuna.create_study(
        study_name=study_name, direction="maximize" if maximize else "minimize", pruner=pruner
    )
    for _ in reports:
        study.add_trial(create_trial(state=TrialState.RUNNING))
    ids = [trial._trial_id for trial in study.get_trials(deepcopy=False)]
    reported = sorted(
        (timestamp, index, step, value)
        for index, points in enumerate(reports)
        for step, (timestamp, value) in enumerate(points[: limits.maximum], start=1)
    )
    stopped: set[int] = set()
    for _, index, step, value in reported:
        if index in stopped:
            continue  # stopped: what it printed after the decision would never have been seen
        study._storage.set_trial_intermediate_value(ids[index], step, value)
        if pruner.prune(study, study._storage.get_trial(ids[index])):
            stopped.add(index)
    return stopped
