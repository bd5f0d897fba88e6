"""The Bayesian search: Optuna's TPE sampler (a tree-structured Parzen estimator, the Bayesian
optimisation Optuna is built around), asked for the next point given every training job so far.

Nothing of Optuna's is kept: the study is rebuilt in memory for each choice from the tuning job's
rows (each training job's recorded hyperparameters and its objective), so the search state is the
database's and a worker restart loses nothing. Training jobs still running are given to the
sampler as running (its `constant_liar`), so parallel training jobs are not sent to one point.
The first `STARTUP_TRIALS` points are random, as Bayesian searches start.

Why TPE over a Gaussian process (what SageMaker documents for its own Bayesian search): it takes
integer, continuous and categorical ranges alike, costs milliseconds per choice at hundreds of
training jobs, and Optuna is one dependency, well kept; tests/unit/tuning/test_bayesian.py checks
that it beats random search on a known function over the same budget."""
import math

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from tuning import ranges as r

STARTUP_TRIALS = 5
_SEEDS = 2**32  # numpy's seed range, which Optuna's samplers hand their seed to

optuna.logging.set_verbosity(optuna.logging.WARNING)


def suggest(
    parsed: list[r.Range],
    seed: int,
    number: int,
    maximize: bool,
    finished: list[tuple[dict[str, str], float]],
    running: list[dict[str, str]],
) -> dict[str, str]:
    """The tuned hyperparameters of training job `number`: `finished` are the earlier ones that
    reported the objective (with its value), `running` those still going."""
    distributions = {found.name: _distribution(found) for found in parsed}
    sampler = optuna.samplers.TPESampler(
        seed=(seed * 1_000_003 + number) % _SEEDS, n_startup_trials=STARTUP_TRIALS, constant_liar=True
    )
    study = optuna.create_study(direction="maximize" if maximize else "minimize", sampler=sampler)
    for tuned, value in finished:
        params = _internal(parsed, tuned)
        study.add_trial(create_trial(params=params, distributions=distributions, value=value))
    for tuned in running:
        study.add_trial(create_trial(
            params=_internal(parsed, tuned), distributions=distributions, state=TrialState.RUNNING
        ))
    chosen = study.ask(distributions).params
    return {found.name: _external(found, chosen[found.name]) for found in parsed}


def _distribution(found: r.Range) -> BaseDistribution:
    if isinstance(found, r.CategoricalRange):
        return CategoricalDistribution(found.values)
    if found.scaling == r.REVERSE_LOGARITHMIC:  # searched as log(1 - x): dense near 1
        return FloatDistribution(math.log(1 - found.high), math.log(1 - found.low))
    log = found.scaling == r.LOGARITHMIC
    if found.integer:
        return IntDistribution(int(found.low), int(found.high), log=log)
    return FloatDistribution(found.low, found.high, log=log)


def _internal(parsed: list[r.Range], tuned: dict[str, str]) -> dict:
    """A recorded training job's hyperparameters as the sampler's values."""
    values = {}
    for found in parsed:
        text = tuned[found.name]
        if isinstance(found, r.CategoricalRange):
            values[found.name] = text
        elif found.integer:
            values[found.name] = int(text)
        elif found.scaling == r.REVERSE_LOGARITHMIC:
            values[found.name] = math.log(1 - float(text))
        else:
            values[found.name] = float(text)
    return values


def _external(found: r.Range, value) -> str:
    if isinstance(found, r.CategoricalRange):
        return value
    if found.integer:
        return str(int(value))
    if found.scaling == r.REVERSE_LOGARITHMIC:
        value = 1 - math.exp(value)
    return repr(min(max(float(value), found.low), found.high))
