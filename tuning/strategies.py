"""Which hyperparameters the N-th training job of a tuning job gets (automatic-model-tuning-how-it-works):

- Random: each training job an independent random point of the ranges, drawn from a generator
  seeded by the job's seed and N, so the choice never depends on which worker makes it or when;
- Grid: every combination of the categorical values exactly once, N-th job the N-th combination.

Bayesian and Hyperband are refused at create (tuning/requests.py)."""
import random

from tuning import ranges as r

RANDOM, GRID = "Random", "Grid"


def planned_jobs(config: dict, parsed: list[r.Range]) -> int:
    """How many training jobs the search launches in all: Grid every combination, Random
    MaxNumberOfTrainingJobs."""
    if config["Strategy"] == GRID:
        return r.grid_size(parsed)
    return config["ResourceLimits"]["MaxNumberOfTrainingJobs"]


def hyperparameters_for(config: dict, parsed: list[r.Range], seed: int, number: int) -> dict[str, str]:
    """The tuned hyperparameters of training job `number` (1, 2, ...)."""
    if config["Strategy"] == GRID:
        return r.grid_point(parsed, number - 1)
    return r.sample(parsed, random.Random(f"{seed}:{number}"))
