"""How a tuning job's training jobs are shared among its training job definitions.

SageMaker does not document how it divides MaxNumberOfTrainingJobs among several definitions;
Sageport's rule, the same at every look so that the N-th training job's definition never depends
on which worker decides it or when:

- each definition's quota: for Grid, the number of combinations of its categorical values (each
  definition's grid is run whole, and MaxNumberOfTrainingJobs, when given, must be their sum);
  otherwise MaxNumberOfTrainingJobs split evenly, the first definitions taking one more when it
  does not divide (10 among 3: 4, 3, 3);
- the training jobs take the definitions in turn, round-robin, skipping a definition whose quota
  is used up: with quotas 2, 1, 3 the jobs go to definitions 0, 1, 2, 0, 2, 2;
- MaxParallelTrainingJobs bounds the training jobs running at once over all definitions.

With one definition the N-th training job is that definition's N-th, as before."""

from tuning import definitions as d
from tuning import ranges, strategies


def quotas(found: list[d.Definition]) -> list[int]:
    """How many training jobs each definition gets, in the request's order."""
    config = found[0].config
    if config["Strategy"] == strategies.GRID:
        return [ranges.grid_size(definition.parsed()) for definition in found]
    total = config["ResourceLimits"]["MaxNumberOfTrainingJobs"]
    share, extra = divmod(total, len(found))
    return [share + (1 if index < extra else 0) for index in range(len(found))]


def owner(shares: list[int], number: int) -> tuple[int, int]:
    """Training job `number` (1, 2, ...): the index of its definition, and its number among that
    definition's training jobs (1, 2, ...)."""
    seen = 0
    for turn in range(max(shares, default=0)):
        for index, share in enumerate(shares):
            if turn < share:
                seen += 1
                if seen == number:
                    return index, turn + 1
    raise ValueError(f"training job {number} is beyond the quotas {shares}")
