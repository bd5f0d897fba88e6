"""The reconciler of a tuning job: one step looks at its training jobs and launches, stops or ends as
they require. Level-triggered: what a step does follows from the rows and the training jobs it
reads, so a step run twice, or after a worker died mid-step, does the same.

InProgress: launch training jobs while fewer than MaxParallelTrainingJobs run and fewer than the
planned number exist, each to the training job definition tuning/budget.py gives it, its
hyperparameters chosen by tuning/strategies.py from that definition's own training jobs; first
the retries tuning/retries.py finds due (same number and hyperparameters, a new name), then new
numbers. A training job is first recorded (number, attempt, name, definition, hyperparameters),
then created, so a crash between the two leaves a row whose training job the next step creates
(or finds made). A
Bayesian search is also told the warm start parents' training jobs (tuning/warm_start.py); a
Hyperband search first stops the training jobs its brackets judge under-performing, and those
that reached MaxResource (tuning/hyperband.py), each definition in its own brackets. Once a
completion criterion is met (tuning/completion.py), nothing more is launched, the running
training jobs are stopped and the job ends Completed. Once all planned jobs ended: Completed when
one of them reported the objective, else Failed (a retry still due keeps it going). Stopping:
stop every running training job, Stopped once none runs (a recorded training job not yet created
is never created, and its row is removed)."""
import logging
import secrets

from django.conf import settings
from django.db import IntegrityError

from protocol.context import RequestContext
from protocol.errors import ResourceInUse, ServiceError
from reconcile.loop import reconcile_once
from training import services as training
from training.models import TrainingJobStatus
from tuning import (
    budget,
    completion,
    definitions,
    hyperband,
    requests,
    retries,
    strategies,
    transitions,
    warm_start,
)
from tuning import trials as t
from tuning.models import HyperParameterTuningJob, TuningTrainingJob
from tuning.models import TuningJobStatus as Status

log = logging.getLogger(__name__)


def reconcile(job_id: int) -> float | None:
    return reconcile_once(
        HyperParameterTuningJob, job_id, _step, give_up=_give_up, finished=lambda job: job.is_terminal
    )


def _step(job: HyperParameterTuningJob, token: str) -> float | None:
    found = t.trials_of(job)
    if job.status == Status.STOPPING:
        return _stop(job, found)
    return _search(job, found)


def _poll() -> float:
    return settings.SAGEPORT_POLL_INTERVAL_SECONDS


def _search(job: HyperParameterTuningJob, found: list[t.Trial]) -> float | None:
    defs = definitions.of(job.request)
    shares = budget.quotas(defs)
    if job.request["HyperParameterTuningJobConfig"]["Strategy"] == strategies.HYPERBAND:
        for index, definition in enumerate(defs):
            own = [trial for trial in retries.latest(found) if trial.row.definition_name == definition.name]
            _stop_early(job, definition, index, own)
    if _completion(job, found, sum(shares)).met:
        return _complete_early(job, found)
    histories = {definition.name: _history(definition, found) for definition in defs}
    recorded = _record_retries(job, found, histories)
    recorded = None if recorded is None else _record_next(job, found, defs, shares, histories, recorded)
    if recorded is None:
        return _poll()  # another step recorded one: look again
    for row in [trial.row for trial in found if trial.job is None] + recorded:
        refused = _launch(job, row)
        if refused:
            return _give_up(job, refused)
    numbers = len(retries.latest(found))
    if numbers == sum(shares) and not recorded and not any(trial.running for trial in found):
        return _end(job, found)
    return _poll()


def _free_places(job: HyperParameterTuningJob, histories: dict[str, strategies.History]) -> int:
    """How many more training jobs MaxParallelTrainingJobs lets run now."""
    running = sum(len(history.running) for history in histories.values())
    return job.request["HyperParameterTuningJobConfig"]["ResourceLimits"]["MaxParallelTrainingJobs"] - running


def _record_retries(job: HyperParameterTuningJob, found: list[t.Trial],
                    histories: dict[str, strategies.History]) -> list[TuningTrainingJob] | None:
    """Record the retries due (tuning/retries.py), as many as MaxParallelTrainingJobs lets run,
    each the next attempt of its number with its hyperparameters; None when another step recorded
    one of them first. Each counts as running in its definition's history from now on."""
    recorded = []
    for failed in retries.due(found)[:max(0, _free_places(job, histories))]:
        row = _record(job, failed.row.number, failed.row.definition_name, failed.row.tuned_hyperparameters,
                      attempt=failed.row.attempt + 1)
        if row is None:
            return None
        recorded.append(row)
        histories[row.definition_name].running.append(row.tuned_hyperparameters)
    return recorded


def _record_next(job: HyperParameterTuningJob, found: list[t.Trial], defs: list[definitions.Definition],
                 shares: list[int], histories: dict[str, strategies.History],
                 recorded: list[TuningTrainingJob]) -> list[TuningTrainingJob] | None:
    """Record the next numbers' training jobs (after `recorded`, the retries) while fewer than
    MaxParallelTrainingJobs run, each with its definition (tuning/budget.py) and the
    hyperparameters that definition's search chooses; None when another step recorded one of them
    first."""
    numbers = len(retries.latest(found))
    seeded = set()
    for number in range(numbers + 1, min(sum(shares), numbers + _free_places(job, histories)) + 1):
        index, ordinal = budget.owner(shares, number)
        definition, history = defs[index], histories[defs[index].name]
        if definition.name not in seeded:
            seeded.add(definition.name)
            history.finished += _seeds(job, definition)
        tuned = strategies.hyperparameters_for(
            definition.config, definition.parsed(), job.seed, number, ordinal, history
        )
        row = _record(job, number, definition.name, tuned)
        if row is None:
            return None
        recorded.append(row)
        history.running.append(row.tuned_hyperparameters)
    return recorded


def _history(definition: definitions.Definition, found: list[t.Trial]) -> strategies.History:
    """What a definition's search is told: its own training jobs (each definition searches its own
    ranges, its objective its own metric)."""
    own = [trial for trial in found if trial.row.definition_name == definition.name]
    return strategies.History(
        finished=[(trial.row.tuned_hyperparameters, trial.objective) for trial in own
                  if trial.objective_status == t.SUCCEEDED],
        running=[trial.row.tuned_hyperparameters for trial in own if trial.running],
    )


def _seeds(job: HyperParameterTuningJob, definition: definitions.Definition) -> list:
    """What a Bayesian search is told of its warm start parents (a warm start has one definition),
    read only when it chooses a point."""
    if definition.config["Strategy"] != strategies.BAYESIAN:
        return []
    return warm_start.seeds(job, definition.parsed())


def _completion(job: HyperParameterTuningJob, found: list[t.Trial], planned: int) -> completion.Outcome:
    config = job.request["HyperParameterTuningJobConfig"]
    maximize = t.objective_type(job) == "Maximize"
    return completion.evaluate(config, maximize, planned, t.scored_in_end_order(found))


def _complete_early(job: HyperParameterTuningJob, found: list[t.Trial]) -> float | None:
    """A completion criterion is met: launch no more, stop the training jobs still running, then
    Completed."""
    if _wind_down(job, found):
        return _poll()
    return _end(job, [trial for trial in found if trial.job is not None])


def _wind_down(job: HyperParameterTuningJob, found: list[t.Trial]) -> bool:
    """Stop every running training job; True while one still runs. A recorded training job not yet
    created is never created (only these steps create training jobs), and its row is removed."""
    TuningTrainingJob.objects.filter(pk__in=[trial.row.pk for trial in found if trial.job is None]).delete()
    running = [trial for trial in found if trial.job is not None and not trial.job.is_terminal]
    for trial in running:
        if trial.job.training_job_status == TrainingJobStatus.IN_PROGRESS:
            _stop_training(job, trial.row.training_job_name)
    return bool(running)


def _stop_early(job: HyperParameterTuningJob, definition: definitions.Definition, index: int,
                found: list[t.Trial]) -> None:
    """Stop a definition's running training jobs (`found`: the latest attempt of each of its
    numbers) Hyperband judged under-performing or that used up MaxResource; a stopped one ends
    Stopped, its last value its objective, as SageMaker shows them. Each definition has its own
    brackets (its own study name) and its own resources."""
    limits = hyperband.resources(definition.config, definition.static)
    # One training job per number, in number order (each keeps its bracket): the latest attempt; one
    # that failed with an internal error reports nothing (its retry will).
    reports = [[] if t.failed_internally(trial) else t.objective_points(job, trial, limits.maximum)
               for trial in found]
    maximize = definition.objective["Type"] == "Maximize"
    study_name = job.name if index == 0 else f"{job.name}:{definition.name}"
    judged = hyperband.stopped_early(limits, maximize, study_name, reports)
    for position, trial in enumerate(found):
        in_progress = trial.job is not None and trial.job.training_job_status == TrainingJobStatus.IN_PROGRESS
        if in_progress and (position in judged or len(reports[position]) >= limits.maximum):
            _stop_training(job, trial.row.training_job_name)


def _stop_training(job: HyperParameterTuningJob, name: str) -> None:
    """Stop one training job; one that ended meanwhile needs nothing."""
    try:
        training.stop_training_job(_context(job), name)
    except ServiceError:
        log.warning("tuning job %s: could not stop %s", job.name, name)


def _record(job: HyperParameterTuningJob, number: int, definition_name: str,
            tuned: dict[str, str], attempt: int = 0) -> TuningTrainingJob | None:
    """The row of training job `number`'s attempt, named as SageMaker names them:
    `<tuning job>-NNN-<8 hex>` (a retry: the same NNN, new hex)."""
    name = f"{job.name}-{number:03d}-{secrets.token_hex(4)}"
    try:
        return TuningTrainingJob.objects.create(
            tuning_job=job, number=number, attempt=attempt, training_job_name=name,
            definition_name=definition_name, tuned_hyperparameters=tuned,
        )
    except IntegrityError:
        return None


def _launch(job: HyperParameterTuningJob, row: TuningTrainingJob) -> str | None:
    """Create the training job through the training feature, as CreateTrainingJob would; the
    tuning job's FailureReason when the training feature refuses it."""
    name = row.training_job_name
    request = requests.training_request(
        job.request, row.definition_name, name, row.tuned_hyperparameters, job.tags
    )
    try:
        training.create_training_job(_context(job), request, tuning_job_arn=job.arn)
    except ResourceInUse:
        pass  # created by an earlier attempt of this step
    except ServiceError as exc:
        # The request was checked at create, so only a change since gets here.
        return f"ClientError: training job {name} could not be created: {exc.message}"
    return None


def _context(job: HyperParameterTuningJob) -> RequestContext:
    """The tuning job's owner, as whom its training jobs are created and stopped."""
    return RequestContext(account_id=job.account_id, region=job.region, access_key_id="")


def _end(job: HyperParameterTuningJob, found: list[t.Trial]) -> None:
    if t.best(found, t.objective_type(job)) is not None:
        transitions.transition(job, Status.COMPLETED)
        return None
    counters = t.status_counters(found)
    failed = counters["NonRetryableError"] + counters["RetryableError"]
    metrics = dict.fromkeys(definition.objective["MetricName"] for definition in definitions.of(job.request))
    transitions.transition(
        job, Status.FAILED,
        failure_reason=f"No training job reported the objective metric {' or '.join(metrics)} "
        f"({failed} of {len(found)} training jobs failed).",
    )
    return None


def _stop(job: HyperParameterTuningJob, found: list[t.Trial]) -> float | None:
    if _wind_down(job, found):
        return _poll()
    transitions.transition(job, Status.STOPPED)
    return None


def _give_up(job: HyperParameterTuningJob, reason: str) -> float | None:
    """A step failed for good: fail the tuning job and stop the training jobs it still runs."""
    for trial in t.trials_of(job):
        if trial.job is not None and trial.job.training_job_status == TrainingJobStatus.IN_PROGRESS:
            _stop_training(job, trial.row.training_job_name)
    transitions.transition(job, Status.FAILED, failure_reason=reason[:1024])
    return None
