"""Warm start (WarmStartConfig): a tuning job that starts from up to five earlier ones, its parents
(automatic-model-tuning-warm-start).

Checked at create, each refusal a ValidationException:
- a parent is a tuning job of the caller's account and region (another account's is as unknown as
  one that does not exist) and has ended (Completed, Stopped or Failed);
- the objective (metric and type) is the parents';
- a hyperparameter tuned by a parent and by the new job keeps its kind (integer, continuous,
  categorical);
- IdenticalDataAndAlgorithm: the parents' training image, and as many hyperparameters (static
  plus tuned) as each parent had;
- Sageport starts only Bayesian and Random searches warm;
- warm start is for one training job definition only, the new job's and each parent's (SageMaker:
  "Warm start and early stopping are available only when you're tuning a single algorithm").
At most five parents is botocore's own limit, checked with the request's shape.

What the parents give: their training jobs that reported the objective seed the Bayesian search
(each with the values the new job's ranges name, from the parent's tuned or static
hyperparameters; one whose values fall outside the new ranges is left out), and, for
IdenticalDataAndAlgorithm, DescribeHyperParameterTuningJob's OverallBestTrainingJob is the best of
the new job's and the parents' training jobs. Parents' parents are not read (warm start is not
recursive, as SageMaker documents it). The parents are looked up by name at each look: a tuning
job is never deleted, so the rows say the same each time."""
from protocol.arns import make_arn
from protocol.context import RequestContext
from protocol.errors import ValidationException
from tuning import definitions, ranges, strategies
from tuning import trials as t
from tuning.models import HyperParameterTuningJob
from tuning.requests import OBJECTIVE_HYPERPARAMETER

IDENTICAL_DATA_AND_ALGORITHM = "IdenticalDataAndAlgorithm"
WARM_STRATEGIES = (strategies.BAYESIAN, strategies.RANDOM)
RESOURCE_TYPE = "hyper-parameter-tuning-job"


def check(ctx: RequestContext, params: dict) -> None:
    """Refuse a WarmStartConfig whose parents cannot seed this tuning job."""
    warm = params.get("WarmStartConfig")
    if warm is None:
        return
    if definitions.several(params):
        raise ValidationException("Warm start is available only when tuning a single algorithm: give one "
                                  "TrainingJobDefinition, not TrainingJobDefinitions.")
    problems = []
    strategy = params["HyperParameterTuningJobConfig"]["Strategy"]
    if strategy not in WARM_STRATEGIES:
        problems.append(f"Warm start of a {strategy} search is not supported by Sageport: give Strategy "
                        "Bayesian or Random.")
    for name in _parent_names(warm):
        parent = _find(ctx.account_id, ctx.region, name)
        if parent is None:
            problems.append(f"The parent hyperparameter tuning job {name} does not exist.")
        else:
            problems += _parent_problems(params, parent, warm["WarmStartType"])
    if problems:
        raise ValidationException(" ".join(problems))


def _parent_names(warm: dict) -> list[str]:
    names = [parent["HyperParameterTuningJobName"] for parent in warm["ParentHyperParameterTuningJobs"]]
    return list(dict.fromkeys(names))


def _find(account_id: str, region: str, name: str) -> HyperParameterTuningJob | None:
    arn = make_arn(region, account_id, RESOURCE_TYPE, name)
    return HyperParameterTuningJob.objects.filter(account_id=account_id, region=region, arn=arn).first()


def _parent_problems(params: dict, parent: HyperParameterTuningJob, warm_start_type: str) -> list[str]:
    name = parent.name
    if not parent.is_terminal:
        return [f"The parent hyperparameter tuning job {name} is {parent.status}: a parent must have ended "
                "(Completed, Stopped or Failed)."]
    if definitions.several(parent.request):
        return [f"The parent hyperparameter tuning job {name} tuned several training job definitions: warm "
                "start is available only when tuning a single algorithm."]

    config = params["HyperParameterTuningJobConfig"]
    parent_config = parent.request["HyperParameterTuningJobConfig"]
    problems = []
    if config["HyperParameterTuningJobObjective"] != parent_config["HyperParameterTuningJobObjective"]:
        problems.append(f"The objective must be the parent hyperparameter tuning job {name}'s "
                        f"({_objective_text(parent_config)}).")
    kinds, parent_kinds = _kinds(config), _kinds(parent_config)
    changed = sorted(hp for hp in kinds.keys() & parent_kinds.keys() if kinds[hp] != parent_kinds[hp])
    if changed:
        problems.append(f"Hyperparameters must keep the kind of range the parent hyperparameter tuning job "
                        f"{name} gave them: {', '.join(changed)}.")
    if warm_start_type == IDENTICAL_DATA_AND_ALGORITHM:
        problems += _identical_problems(params, parent)
    return problems


def _objective_text(config: dict) -> str:
    objective = config["HyperParameterTuningJobObjective"]
    return f"{objective['Type']} {objective['MetricName']}"


def _kinds(config: dict) -> dict[str, str]:
    parsed, _ = ranges.parse(config.get("ParameterRanges"))
    return {found.name: _kind(found) for found in parsed}


def _kind(found: ranges.Range) -> str:
    if isinstance(found, ranges.CategoricalRange):
        return "categorical"
    return "integer" if found.integer else "continuous"


def _identical_problems(params: dict, parent: HyperParameterTuningJob) -> list[str]:
    definition, parent_definition = params["TrainingJobDefinition"], parent.request["TrainingJobDefinition"]
    problems = []
    image = definition["AlgorithmSpecification"].get("TrainingImage")
    parent_image = parent_definition["AlgorithmSpecification"].get("TrainingImage")
    if image != parent_image:
        problems.append(f"An IdenticalDataAndAlgorithm warm start keeps the parent hyperparameter tuning job "
                        f"{parent.name}'s training image ({parent_image}).")
    count, parent_count = _hyperparameter_count(params), _hyperparameter_count(parent.request)
    if count != parent_count:
        problems.append(f"An IdenticalDataAndAlgorithm warm start keeps the number of static plus tuned "
                        f"hyperparameters of the parent hyperparameter tuning job {parent.name} "
                        f"({parent_count}); this one has {count}.")
    return problems


def _hyperparameter_count(request: dict) -> int:
    """Static plus tuned hyperparameters, without the objective's name SageMaker adds."""
    static = set(request["TrainingJobDefinition"].get("StaticHyperParameters", {}))
    static.discard(OBJECTIVE_HYPERPARAMETER)
    return len(static | set(_kinds(request["HyperParameterTuningJobConfig"])))


def parents(job: HyperParameterTuningJob) -> list[HyperParameterTuningJob]:
    """The tuning job's parents, in the order its WarmStartConfig names them."""
    warm = job.request.get("WarmStartConfig")
    if warm is None:
        return []
    found = (_find(job.account_id, job.region, name) for name in _parent_names(warm))
    return [parent for parent in found if parent is not None]


def seeds(job: HyperParameterTuningJob, parsed: list[ranges.Range]) -> list[tuple[dict[str, str], float]]:
    """The parents' training jobs that reported the objective, as points of this job's ranges."""
    found = []
    for parent in parents(job):
        static = parent.request["TrainingJobDefinition"].get("StaticHyperParameters", {})
        for trial in t.trials_of(parent):
            if trial.objective_status != t.SUCCEEDED:
                continue
            point = _point(parsed, {**static, **trial.row.tuned_hyperparameters})
            if point is not None:
                found.append((point, trial.objective))
    return found


def _point(parsed: list[ranges.Range], values: dict[str, str]) -> dict[str, str] | None:
    """The values of the ranges' hyperparameters, or None when one is missing or outside its range."""
    point = {found.name: values.get(found.name) for found in parsed}
    fits = all(point[found.name] is not None and _within(found, point[found.name]) for found in parsed)
    return point if fits else None


def _within(found: ranges.Range, text: str) -> bool:
    if isinstance(found, ranges.CategoricalRange):
        return text in found.values
    try:
        value = int(text) if found.integer else float(text)
    except ValueError:
        return False
    return found.low <= value <= found.high


def overall_best(
    job: HyperParameterTuningJob, own: list[t.Trial]
) -> tuple[HyperParameterTuningJob, t.Trial] | None:
    """OverallBestTrainingJob: the best of this job's and its parents' training jobs, for an
    IdenticalDataAndAlgorithm warm start only (its objective is comparable across them)."""
    warm = job.request.get("WarmStartConfig")
    if warm is None or warm["WarmStartType"] != IDENTICAL_DATA_AND_ALGORITHM:
        return None
    objective_type = t.objective_type(job)
    candidates = [(job, t.best(own, objective_type))]
    candidates += [(parent, t.best(t.trials_of(parent), objective_type)) for parent in parents(job)]
    scored = [(owner, trial) for owner, trial in candidates if trial is not None]
    if not scored:
        return None
    sign = -1 if objective_type == "Maximize" else 1
    return min(scored, key=lambda pair: sign * pair[1].objective)
