"""TuningJobCompletionCriteria (automatic-model-tuning-progress): when a tuning job ends before it
launched its whole budget, and DescribeHyperParameterTuningJob's TuningJobCompletionDetails.

The training jobs that reported the objective are read in the order they ended (end time, then
number); a training job improves the search when its objective beats the best before it by 1% of
that best or more (botocore's MaxNumberOfTrainingJobsNotImproving: "failed to improve model
performance by 1% or greater"), the first one always does. Then:

- TargetObjectiveMetricValue: met once a training job's objective reaches it (Maximize: at least
  it; Minimize: at most it);
- BestObjectiveNotImproving.MaxNumberOfTrainingJobsNotImproving: met once that many training jobs
  in a row did not improve; NumberOfTrainingJobsObjectiveNotImproving is the current run of them;
- ConvergenceDetected.CompleteOnConvergence: SageMaker's convergence test is not public. Sageport's
  rule: the search has converged once the last W training jobs all failed to improve, with
  W = max(5, a quarter of the planned training jobs, rounded up); ConvergenceDetectedTime is the
  end time of the training job that made it so. It is reported whenever it happens; only Enabled
  ends the search on it.

A criterion met at some point of that order stays met (a training job ending later changes no
earlier point), so the decision follows from the rows at every look and survives a restart."""

import math
from dataclasses import dataclass
from datetime import datetime

IMPROVEMENT = 0.01
SMALLEST_CONVERGENCE_WINDOW = 5


@dataclass(frozen=True)
class Outcome:
    met: bool  # a criterion is met: launch no more, end the search
    not_improving: int  # NumberOfTrainingJobsObjectiveNotImproving
    converged_at: datetime | None  # ConvergenceDetectedTime


def convergence_window(planned: int) -> int:
    return max(SMALLEST_CONVERGENCE_WINDOW, math.ceil(planned / 4))


def evaluate(config: dict, maximize: bool, planned: int, scored: list[tuple[datetime, float]]) -> Outcome:
    """`scored`: (end time, objective) of each training job that reported the objective, in the
    order they ended."""
    criteria = config.get("TuningJobCompletionCriteria", {})
    target = criteria.get("TargetObjectiveMetricValue")
    patience = criteria.get("BestObjectiveNotImproving", {}).get("MaxNumberOfTrainingJobsNotImproving")
    complete_on_convergence = (
        criteria.get("ConvergenceDetected", {}).get("CompleteOnConvergence") == "Enabled"
    )
    window = convergence_window(planned)
    sign = 1 if maximize else -1
    best, run, met, converged_at = None, 0, False, None
    for ended, value in scored:
        run = 0 if _improves(value, best, sign) else run + 1
        best = value if best is None else (max if maximize else min)(best, value)
        if converged_at is None and run >= window:
            converged_at = ended
        met = met or (target is not None and sign * (value - target) >= 0)
        met = met or (patience is not None and run >= patience)
        met = met or (complete_on_convergence and converged_at is not None)
    return Outcome(met=met, not_improving=run, converged_at=converged_at)


def _improves(value: float, best: float | None, sign: int) -> bool:
    if best is None:
        return True
    gain = sign * (value - best)
    return gain > 0 and gain >= abs(best) * IMPROVEMENT
