"""Which hyperparameters the N-th training job of a tuning job gets (automatic-model-tuning-how-it-works):

- Random: each training job an independent random point of the ranges, drawn from a generator
  seeded by the job's seed and N, so the choice never depends on which worker makes it or when;
- Grid: every combination of the categorical values exactly once, N-th job the N-th combination;
- Bayesian: the next point given the objectives so far (tuning/bayesian.py);
- Hyperband: random points, as Random's; its early stopping is tuning/hyperband.py's."""
import random
from dataclasses import dataclass, field

from tuning import ranges as r

RANDOM, GRID, BAYESIAN, HYPERBAND = "Random", "Grid", "Bayesian", "Hyperband"


@dataclass
class History:
    """The training jobs chosen before: those that reported the objective (a warm start's parents'
    among them), and those still running."""

    finished: list[tuple[dict[str, str], float]] = field(default_factory=list)
    running: list[dict[str, str]] = field(default_factory=list)


def hyperparameters_for(
    config: dict, parsed: list[r.Range], seed: int, number: int, ordinal: int, history: History
) -> dict[str, str]:
    """The tuned hyperparameters of training job `number` (1, 2, ...), its definition's training
    job `ordinal` (tuning/budget.py; the same as `number` with one definition); `config` and
    `history` are its definition's (tuning/definitions.py)."""
    if config["Strategy"] == GRID:
        return r.grid_point(parsed, ordinal - 1)
    if config["Strategy"] == BAYESIAN:
        # Imported here: Optuna takes half a second to import, which every process that loads the
        # tuning app (the API's, the worker's, each manage.py command) would pay at start.
        from tuning import bayesian

        maximize = config["HyperParameterTuningJobObjective"]["Type"] == "Maximize"
        return bayesian.suggest(parsed, seed, number, maximize, history.finished, history.running)
    return r.sample(parsed, random.Random(f"{seed}:{number}"))
